package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestSemanticIndexUpsertAndSearch(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	x := c.Index()
	chunks := []memory.Chunk{
		{ID: "a", SessionID: "s1", Content: "about the forge", Embedding: unit(0, 1, 0.1), SpeakerIDs: []string{"u1"},
			EntityIDs: []string{"grimjaw", "hammer"}, StartAt: t0, EndAt: t0.Add(time.Minute)},
		{ID: "b", SessionID: "s1", Content: "about the tower", Embedding: unit(2, 3, 0.1), SpeakerIDs: []string{"u2"},
			EntityIDs: []string{"tower"}, StartAt: t0.Add(time.Hour)},
		{ID: "c", SessionID: "s2", Content: "about the forge again", Embedding: unit(0, 2, 0.3), SpeakerIDs: []string{"u2"},
			EntityIDs: []string{"grimjaw", "unknown-entity"}, StartAt: t0.Add(24 * time.Hour)},
	}
	check(t, x.IndexChunks(ctx, chunks))
	q := unit(0, 1, 0)
	res := must[[]memory.ChunkResult](t)(x.Search(ctx, q, 3, memory.ChunkFilter{}))
	if got := ids(res, func(r memory.ChunkResult) string { return r.Chunk.ID }); fmt.Sprint(got) != "[a c b]" {
		t.Fatalf("nearest first: got %v, want [a c b]", got)
	}
	if fmt.Sprint(res[0].Chunk.EntityIDs) != "[grimjaw hammer]" || res[0].Chunk.Embedding == nil {
		t.Errorf("chunk lost its links or embedding: %+v", res[0].Chunk)
	}
	if fmt.Sprint(res[1].Chunk.EntityIDs) != "[grimjaw]" {
		t.Errorf("links to unknown entities must be dropped, got %v", res[1].Chunk.EntityIDs)
	}
	filters := []struct {
		f    memory.ChunkFilter
		want string
	}{
		{memory.ChunkFilter{SessionID: "s2"}, "[c]"},
		{memory.ChunkFilter{SpeakerID: "u2"}, "[c b]"},
		{memory.ChunkFilter{EntityID: "tower"}, "[b]"},
		{memory.ChunkFilter{After: t0.Add(30 * time.Minute), Before: t0.Add(2 * time.Hour)}, "[b]"},
	}
	for _, tc := range filters {
		res := must[[]memory.ChunkResult](t)(x.Search(ctx, q, 3, tc.f))
		if got := fmt.Sprint(ids(res, func(r memory.ChunkResult) string { return r.Chunk.ID })); got != tc.want {
			t.Errorf("filter %+v: got %v, want %v", tc.f, got, tc.want)
		}
	}
	// Re-indexing replaces content and links; no duplicate appears.
	chunks[0].Content = "about the forge, revised"
	chunks[0].EntityIDs = []string{"grimjaw"}
	check(t, x.IndexChunks(ctx, chunks[:1]))
	all := must[[]memory.Chunk](t)(x.Chunks(ctx, ""))
	if len(all) != 3 || all[0].Content != "about the forge, revised" || fmt.Sprint(all[0].EntityIDs) != "[grimjaw]" {
		t.Fatalf("after re-index: %+v", all)
	}
}

// A filter that selects one session among hundreds must still return topK
// rows, although HNSW's first candidates mostly belong to other sessions
// (searched through the index, as a campaign past WithExactSearch's size
// is).
func TestSemanticIndexSelectiveFilterReturnsTopK(t *testing.T) {
	t.Parallel()
	s := newStore(t, postgres.WithExactSearch(-1))
	ctx := ctxT(t)
	x := pgtest.Campaign(t, s, "camp").Index()
	const sessions, perSession = 300, 10
	var batch []memory.Chunk
	for si := range sessions {
		for k := range perSession {
			batch = append(batch, memory.Chunk{
				ID: fmt.Sprintf("s%03d-%d", si, k), SessionID: fmt.Sprintf("s%03d", si), Content: "x",
				// Session 7's chunks point away from the query; all others point at it.
				Embedding: func() []float32 {
					if si == 7 {
						return unit(5, k, 0.2)
					}
					return unit(0, k+si, 0.05)
				}(),
				StartAt: t0.Add(time.Duration(si) * time.Hour),
			})
		}
	}
	for i := 0; i < len(batch); i += 500 {
		check(t, x.IndexChunks(ctx, batch[i:min(i+500, len(batch))]))
	}
	res := must[[]memory.ChunkResult](t)(x.Search(ctx, unit(0, 0, 0), 10, memory.ChunkFilter{SessionID: "s007"}))
	if len(res) != 10 {
		t.Fatalf("selective filter returned %d rows, want 10", len(res))
	}
	for i, r := range res {
		if r.Chunk.SessionID != "s007" {
			t.Fatalf("row %d from session %s", i, r.Chunk.SessionID)
		}
		if i > 0 && r.Distance < res[i-1].Distance {
			t.Fatalf("not ordered by distance")
		}
	}
}
