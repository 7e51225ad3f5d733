package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestPlayerSearchesReadTheirChunks: a player's TextSearch and
// VectorSearch, answered from the search of every chunk when enough of its
// best are readable (readableOf) and from the player's readable chunks
// alone otherwise, return what the search of the readable chunks alone
// returns, in the same order with the same scores, and no chunk the
// player may not read. The campaign: thirty chunks of a split scene Lyra
// was not in, between forty said with the party together. "wyvern" is
// said three times in each split chunk and once in each public one, so
// the best twenty of all are unreadable to Lyra and to any player (the
// fallback); "ember", said once in every chunk, and the embeddings leave
// readable chunks among the best (the search of every chunk answers).
func TestPlayerSearchesReadTheirChunks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, testDims)
	camp := pgtest.Campaign(t, s, "camp")
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	check(t, sl.StartSession(ctx, "s1", t0))
	check(t, sl.RecordPresence(ctx, "s1", t0, []string{"lyra", "thorin"}, false))
	check(t, sl.RecordPresence(ctx, "s1", t0.Add(40*time.Minute), []string{"thorin"}, true))
	check(t, sl.RecordPresence(ctx, "s1", t0.Add(70*time.Minute), []string{"lyra", "thorin"}, false))
	var chunks []memory.Chunk
	var split []string
	for i := range 100 {
		at := t0.Add(time.Duration(i) * time.Minute)
		inScene := at.After(t0.Add(40*time.Minute)) && at.Before(t0.Add(70*time.Minute))
		text := fmt.Sprintf("The ember glows, wyvern sighted at the mill, turn %d.", i)
		if inScene {
			text = fmt.Sprintf("The ember glows, wyvern wyvern wyvern over the ridge, turn %d.", i)
		}
		sessionLine(t, sl, "thorin", text, at)
		if i >= 70 && !inScene && len(chunks) >= 70 {
			continue
		}
		id := fmt.Sprintf("c%03d", i)
		if inScene {
			split = append(split, id)
		}
		// Embeddings: the split chunks nearest the query, the public ones
		// behind them, no two at the same distance (the index orders a tie
		// as it finds it).
		w := 0.2 + float64(i)/200
		if inScene {
			w = 0.01 + float64(i)/1000
		}
		chunks = append(chunks, memory.Chunk{ID: id, SessionID: "s1", Content: text, SpeakerIDs: []string{"thorin"},
			StartAt: at, EndAt: at.Add(time.Second), Embedding: unit(0, 1, w)})
	}
	check(t, camp.Index().IndexChunks(ctx, chunks))
	if len(split) != 29 {
		t.Fatalf("%d chunks in the split scene, want 29", len(split))
	}
	query := unit(0, 1, 0)
	for _, v := range []memory.Viewer{memory.PlayerViewer(), memory.PlayerViewerOf("lyra"), memory.PlayerViewerOf("thorin")} {
		c := must[*postgres.Campaign](t)(camp.As(v))
		who := v.String() + " " + v.PlayerID
		text, vector := c.Index().DeniedSearchesForTest()
		ids := func(hs []postgres.ChunkHit) []string {
			return ids(hs, func(h postgres.ChunkHit) string { return fmt.Sprintf("%s %.6f", h.Chunk.ID, h.Score) })
		}
		for _, q := range []string{"wyvern", "ember", "wyvern ridge", "mill"} {
			for _, limit := range []int{1, 5, 10, 40} {
				got := ids(must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, q, limit, nil)))
				want := ids(must[[]postgres.ChunkHit](t)(text(ctx, q, limit)))
				if !slices.Equal(got, want) {
					t.Errorf("%s, %q, %d: TextSearch %q,\nthe readable chunks alone %q", who, q, limit, got, want)
				}
				if v.PlayerID != "thorin" {
					for _, h := range got {
						if slices.Contains(split, h[:4]) {
							t.Errorf("LEAK: %s, %q: the split scene's chunk %s", who, q, h)
						}
					}
				}
			}
		}
		for _, limit := range []int{1, 5, 10, 40} {
			got := ids(must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, query, limit, nil)))
			want := ids(must[[]postgres.ChunkHit](t)(vector(ctx, query, limit)))
			if !slices.Equal(got, want) {
				t.Errorf("%s, %d: VectorSearch %q,\nthe readable chunks alone %q", who, limit, got, want)
			}
			if v.PlayerID != "thorin" && slices.ContainsFunc(got, func(h string) bool { return slices.Contains(split, h[:4]) }) {
				t.Errorf("LEAK: %s: the split scene's chunks among the nearest: %q", who, got)
			}
		}
	}
}
