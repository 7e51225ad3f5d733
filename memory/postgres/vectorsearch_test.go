package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// VectorSearch of a whole campaign answers what Search answers (the same
// chunks in the same order, scored 1 - distance, without embeddings): for
// a campaign that shares the HNSW index with a larger one (the iterative
// scan must skip the other's chunks), for one with fewer chunks than asked
// for (the exact fallback), and inside a transaction (both). The
// iterative-scan setting stays local to the search; without the database
// both fail whole. Both ways of searching are held to it: exact (a
// campaign as small as these) and through the HNSW index (as a campaign
// past WithExactSearch's size is searched).
func TestVectorSearchMatchesSearch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []postgres.Option
	}{{"exact", nil}, {"index", []postgres.Option{postgres.WithExactSearch(-1)}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vectorSearchMatchesSearch(t, newStore(t, tc.opts...))
		})
	}
}

func vectorSearchMatchesSearch(t *testing.T, s *postgres.Store) {
	ctx := ctxT(t)
	big := pgtest.Campaign(t, s, "big")
	small := pgtest.Campaign(t, s, "small")
	write := func(c *postgres.Campaign, n int, tilt float64) {
		t.Helper()
		var chunks []memory.Chunk
		for i := range n {
			chunks = append(chunks, memory.Chunk{ID: fmt.Sprintf("%s-%03d", c.ID(), i), SessionID: "s1",
				Content: fmt.Sprintf("line %d of %s", i, c.ID()), SpeakerIDs: []string{"u1"},
				StartAt: t0.Add(time.Duration(i) * time.Minute), Embedding: unit(i, i+1, tilt+float64(i%5)/10)})
		}
		check(t, c.Index().IndexChunks(ctx, chunks))
	}
	write(big, 300, 0.2)
	write(small, 40, 0.3)
	tiny := pgtest.Campaign(t, s, "tiny")
	write(tiny, 3, 0.1)
	for _, tc := range []struct {
		c     *postgres.Campaign
		limit int
	}{{small, 10}, {small, 30}, {big, 30}, {tiny, 10}} {
		for q := range 6 {
			emb := unit(q*7, q*7+3, 0.5)
			want := must[[]memory.ChunkResult](t)(tc.c.Index().Search(ctx, emb, tc.limit, memory.ChunkFilter{}))
			got := must[[]postgres.ChunkHit](t)(tc.c.Index().VectorSearch(ctx, emb, tc.limit, nil))
			if len(got) != len(want) || len(got) != min(tc.limit, map[string]int{"big": 300, "small": 40, "tiny": 3}[tc.c.ID()]) {
				t.Fatalf("%s, limit %d: VectorSearch gave %d chunks, Search %d", tc.c.ID(), tc.limit, len(got), len(want))
			}
			// Chunks at the same distance may come in either order (the
			// plan of each query decides; after the table is analysed it
			// may change): each rank must have the same distance, and
			// each run of equal distances the same chunks, but for the
			// last, which the limit may cut anywhere.
			byID := map[string]memory.ChunkResult{}
			for _, w := range want {
				byID[w.Chunk.ID] = w
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.Score != 1-w.Distance || g.Chunk.Embedding != nil {
					t.Errorf("%s, limit %d, query %d, rank %d: VectorSearch %s %v, Search %s %v",
						tc.c.ID(), tc.limit, q, i, g.Chunk.ID, g.Score, w.Chunk.ID, 1-w.Distance)
				}
				last := got[len(got)-1].Score == g.Score
				if x, ok := byID[g.Chunk.ID]; (!ok && !last) || (ok && (x.Distance != w.Distance || g.Chunk.Content != x.Chunk.Content ||
					!g.Chunk.StartAt.Equal(x.Chunk.StartAt))) {
					t.Errorf("%s, limit %d, query %d, rank %d: VectorSearch %s %v is not Search's chunk at that distance",
						tc.c.ID(), tc.limit, q, i, g.Chunk.ID, g.Score)
				}
			}
		}
	}
	// Inside a transaction, as a writer's tools read.
	check(t, s.InTx(ctx, "small", func(c *postgres.Campaign) error {
		hits, err := c.Index().VectorSearch(ctx, unit(1, 2, 0.5), 5, nil)
		if err == nil && len(hits) != 5 {
			err = fmt.Errorf("%d hits in a transaction, want 5", len(hits))
		}
		if err != nil {
			return err
		}
		res, err := c.Index().Search(ctx, unit(1, 2, 0.5), 5, memory.ChunkFilter{})
		if err == nil && len(res) != 5 {
			err = fmt.Errorf("Search: %d chunks in a transaction, want 5", len(res))
		}
		return err
	}))
	// The setting does not outlive the search on the pool's connections.
	for range 3 {
		var setting string
		check(t, s.Pool().QueryRow(ctx, "SELECT coalesce(current_setting('hnsw.iterative_scan', true), '')").Scan(&setting))
		if setting == "strict_order" {
			t.Fatalf("hnsw.iterative_scan is %q after the search: the setting leaked to the connection", setting)
		}
	}
	// With the database gone the search fails whole.
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := small.Index().VectorSearch(dead, unit(1, 2, 0.5), 5, nil); err == nil || got != nil {
		t.Errorf("with the connection gone: got %v, %v; want an error and nothing", got, err)
	}
	if got, err := small.Index().Search(dead, unit(1, 2, 0.5), 5, memory.ChunkFilter{}); err == nil || got != nil {
		t.Errorf("Search with the connection gone: got %v, %v; want an error and nothing", got, err)
	}
}
