package ppr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// spec100k is a campaign whose retrieval graph has 100k edges: 70k facts
// among 10k entities and 30k mentions (10k chunks naming three entities
// each).
var spec100k = benchdata.Spec{Name: "ppr100k", Entities: 10_000, Relationships: 75_500, Entries: 10_000,
	Chunks: 10_000, EntriesPerSession: 5_000, Dims: 8, Seed: 1}

func generate(b *testing.B, s benchdata.Spec) *postgres.Campaign {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	store, dsn := pgtest.NewStore(b, s.Dims)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		b.Fatal(err)
	}
	if err := benchdata.Generate(ctx, conn, "bench", s, nil); err != nil {
		b.Fatal(err)
	}
	return pgtest.Campaign(b, store, "bench")
}

// BenchmarkPPR100k measures the retrieval graph of a 100k-edge campaign:
// loading it from PostgreSQL (time, and heap held afterwards in
// MB-retained), and one Personalized PageRank query from a random entity
// (p50 and p99 in ms).
func BenchmarkPPR100k(b *testing.B) {
	c := generate(b, spec100k)
	ctx := context.Background()

	b.Run("load", func(b *testing.B) {
		var g *Graph
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if g, err = New(c, Config{}); err != nil {
				b.Fatal(err)
			}
			if err := g.Load(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if st := g.Stats(); st.Edges < 99_000 {
			b.Fatalf("graph has %d edges, want about 100k", st.Edges)
		}
		var before, after runtime.MemStats
		g = nil
		runtime.GC()
		runtime.ReadMemStats(&before)
		g, _ = New(c, Config{})
		if err := g.Load(ctx); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-min(before.HeapAlloc, after.HeapAlloc))/(1<<20), "MB-retained")
		runtime.KeepAlive(g)
	})

	b.Run("query", func(b *testing.B) {
		g, err := New(c, Config{})
		if err != nil {
			b.Fatal(err)
		}
		if err := g.Load(ctx); err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		var took []time.Duration
		iters := 0
		for b.Loop() {
			seed := benchdata.EntityID(r.IntN(spec100k.Entities))
			t := time.Now()
			rk := g.Rank([]Seed{{EntityID: seed, Weight: 1}}, nil, 10)
			took = append(took, time.Since(t))
			iters += rk.Iterations
		}
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "ms-p99")
		b.ReportMetric(float64(iters)/float64(len(took)), "iterations")
	})
}

// BenchmarkRankSynthetic is one query on a 100k-edge graph built in memory
// (the same shape as BenchmarkPPR100k, without the database), for
// comparing changes to the iteration.
func BenchmarkRankSynthetic(b *testing.B) {
	g, err := New(nil, Config{})
	if err != nil {
		b.Fatal(err)
	}
	g.off = nil
	r := rand.New(rand.NewPCG(3, 4))
	const entities, chunks = 10_000, 10_000
	for i := range 70_000 {
		a := r.IntN(entities)
		c := (a/50)*50 + r.IntN(50) // mostly within a cluster of 50
		if r.IntN(10) == 0 {
			c = r.IntN(entities)
		}
		g.apply(postgres.GraphEdge{Kind: postgres.EdgeFact, FactID: int64(i), From: benchdata.EntityID(a), To: benchdata.EntityID(c), Weight: 0.9})
	}
	for c := range chunks {
		for _, e := range benchdata.ChunkEntities(c, entities, 1) {
			g.apply(postgres.GraphEdge{Kind: postgres.EdgeMention, From: benchdata.EntityID(e), To: fmt.Sprintf("c%07d", c), Weight: 1})
		}
	}
	g.build()
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		t := time.Now()
		g.Rank([]Seed{{EntityID: benchdata.EntityID(r.IntN(entities)), Weight: 1}}, nil, 10)
		took = append(took, time.Since(t))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(len(g.edges)), "edges")
}
