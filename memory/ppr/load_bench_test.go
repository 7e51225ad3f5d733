package ppr

import (
	"context"
	"fmt"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// sliceSource replays a fixed edge list; it measures the graph's own
// loading cost (maps, arrays), apart from the database's.
type sliceSource []postgres.GraphEdge

func (s sliceSource) LoadGraph(_ context.Context, fn func(postgres.GraphEdge) error) (postgres.GraphCursor, error) {
	for _, e := range s {
		if err := fn(e); err != nil {
			return postgres.GraphCursor{}, err
		}
	}
	return postgres.GraphCursor{}, nil
}

func (s sliceSource) GraphChanges(context.Context, postgres.GraphCursor, func(postgres.GraphEdge) error) (postgres.GraphCursor, error) {
	return postgres.GraphCursor{}, nil
}

// BenchmarkLoad loads a graph of the 16k-line corpus's size (about 4k
// chunks, 600 entities, 12k mentions, 2k facts) from memory.
func BenchmarkLoad(b *testing.B) {
	const chunks, entities, mentions, facts = 4000, 600, 12000, 2000
	id := func(kind string, i int) string { return fmt.Sprintf("%s%08d-0000-4000-8000-%012d", kind, i, i*7919) }
	var src sliceSource
	for i := range facts {
		src = append(src, postgres.GraphEdge{Kind: postgres.EdgeFact, FactID: int64(i + 1),
			From: id("e", i%entities), To: id("e", (i*31+7)%entities), Weight: 0.9})
	}
	for i := range mentions {
		src = append(src, postgres.GraphEdge{Kind: postgres.EdgeMention,
			From: id("e", (i*17)%entities), To: id("c", i%chunks), Weight: 1})
	}
	b.ReportAllocs()
	for b.Loop() {
		g, err := New(src, Config{})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Load(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}
