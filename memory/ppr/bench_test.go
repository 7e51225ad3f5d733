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

// synthetic builds a 100k-edge graph in memory, the shape of
// BenchmarkPPR100k's without the database: 70k facts among 10k entities,
// mostly within clusters of 50, and 10k chunks naming entities.
func synthetic(tb testing.TB, cfg Config) *Graph {
	g, err := New(nil, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	g.off = nil
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 70_000 {
		a := r.IntN(synthEntities)
		c := (a/50)*50 + r.IntN(50) // mostly within a cluster of 50
		if r.IntN(10) == 0 {
			c = r.IntN(synthEntities)
		}
		g.apply(postgres.GraphEdge{Kind: postgres.EdgeFact, FactID: int64(i), From: benchdata.EntityID(a), To: benchdata.EntityID(c), Weight: 0.9})
	}
	for c := range 10_000 {
		for _, e := range benchdata.ChunkEntities(c, synthEntities, 1) {
			g.apply(postgres.GraphEdge{Kind: postgres.EdgeMention, From: benchdata.EntityID(e), To: fmt.Sprintf("c%07d", c), Weight: 1})
		}
	}
	g.build()
	return g
}

const synthEntities = 10_000

// BenchmarkRankSynthetic is one query on the synthetic 100k-edge graph,
// for comparing changes to the iteration: p50 latency, and the share of
// nodes the walk touched.
func BenchmarkRankSynthetic(b *testing.B) {
	g := synthetic(b, Config{})
	r := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	var took []time.Duration
	var touched int
	for b.Loop() {
		t := time.Now()
		rk := g.Rank([]Seed{{EntityID: benchdata.EntityID(r.IntN(synthEntities)), Weight: 1}}, nil, 10)
		took = append(took, time.Since(t))
		touched += rk.Touched
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-p50")
	b.ReportMetric(float64(len(g.edges)), "edges")
	b.ReportMetric(100*float64(touched)/float64(len(took))/float64(len(g.keys)), "%touched")
}

// BenchmarkLocality reports, for the default tolerance and its
// neighbours, the share of nodes a query on the synthetic 100k-edge graph
// touches and how many of the exact top 10 chunks (tolerance 1e-12) it
// returns (recall@10), over 200 random single-entity queries.
func BenchmarkLocality(b *testing.B) {
	exact := synthetic(b, Config{Tolerance: 1e-12, MaxIterations: 1000})
	r := rand.New(rand.NewPCG(5, 6))
	seeds := make([][]Seed, 200)
	truth := make([]map[string]bool, len(seeds))
	for i := range seeds {
		seeds[i] = []Seed{{EntityID: benchdata.EntityID(r.IntN(synthEntities)), Weight: 1}}
		truth[i] = map[string]bool{}
		for _, x := range exact.Rank(seeds[i], nil, 10).Chunks {
			truth[i][x.ID] = true
		}
	}
	for _, tol := range []float64{1e-6, 1e-5, DefaultTolerance, 5e-5, 1e-4} {
		g := synthetic(b, Config{Tolerance: tol})
		b.Run(fmt.Sprintf("tol=%g", tol), func(b *testing.B) {
			var touched, hits, want int
			for b.Loop() {
				touched, hits, want = 0, 0, 0
				for i, seed := range seeds {
					rk := g.Rank(seed, nil, 10)
					touched += rk.Touched
					for _, x := range rk.Chunks {
						if truth[i][x.ID] {
							hits++
						}
					}
					want += len(truth[i])
				}
			}
			b.ReportMetric(100*float64(touched)/float64(len(seeds))/float64(len(g.keys)), "%touched")
			b.ReportMetric(float64(hits)/float64(max(want, 1)), "recall@10")
		})
	}
}
