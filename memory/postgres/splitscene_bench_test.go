package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// BenchmarkVisibleChunks measures what the witness rule costs a player's
// retrieval: the chunks a reader may read (SemanticIndex.VisibleChunks,
// read before every player question), and the session listing with its
// counts of readable lines (Sessions), over 200 sessions of 250 lines in
// 50 chunks of 5 lines each (10,000 chunks), the party split for a fifth of
// each session, as any player, as a player bound to their id, and (no
// filter: nil) as the DM. On a 2-core machine: 15 ms for any player, 37 ms
// for a player in the scene, 101 ms for one outside it (chunk by chunk,
// with the row-by-row predicate, it was 0.5 s, 0.6 s and 3 s).
//
//	go test ./memory/postgres -run '^$' -bench VisibleChunks -benchtime 20x
func BenchmarkVisibleChunks(b *testing.B) {
	s, _ := pgtest.NewStore(b, 8)
	c := pgtest.Campaign(b, s, "bench")
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO sessions (campaign_id, id, started_at)
		 SELECT 'bench', 's' || i, timestamptz '2026-01-01' + i * interval '1 day' FROM generate_series(1, 200) i`,
		`INSERT INTO transcript_entries (campaign_id, session_id, speaker_id, speaker_name, text, at)
		 SELECT 'bench', 's' || i, 'u' || (j % 3), 'P', 'line ' || j, timestamptz '2026-01-01' + i * interval '1 day' + j * interval '10 seconds'
		 FROM generate_series(1, 200) i, generate_series(0, 249) j`,
		`INSERT INTO chunks (campaign_id, id, session_id, content, start_at, end_at)
		 SELECT 'bench', 's' || i || '-' || k, 's' || i, 'chunk',
		        timestamptz '2026-01-01' + i * interval '1 day' + k * 5 * interval '10 seconds',
		        timestamptz '2026-01-01' + i * interval '1 day' + (k * 5 + 4) * interval '10 seconds' + interval '1 second'
		 FROM generate_series(1, 200) i, generate_series(0, 49) k`,
		// Everyone; split (u1 alone) from line 100; everyone again from line 150.
		`INSERT INTO session_presence (campaign_id, session_id, at, players, split)
		 SELECT 'bench', 's' || i, timestamptz '2026-01-01' + i * interval '1 day' + p.line * interval '10 seconds', p.players, p.split
		 FROM generate_series(1, 200) i,
		      (VALUES (0, '{u0,u1,u2}'::text[], false), (100, '{u1}', true), (150, '{u0,u1,u2}', false)) p(line, players, split)`,
		// The statistics a live database has (autovacuum's).
		`ANALYZE sessions, transcript_entries, chunks, session_presence`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	for _, r := range []struct {
		name string
		v    memory.Viewer
		want int
	}{
		{"any player", memory.PlayerViewer(), 200 * 40},
		{"bound player outside the scene", memory.PlayerViewerOf("u0"), 200 * 40},
		{"bound player in the scene", memory.PlayerViewerOf("u1"), 200 * 50},
		{"DM", memory.DMViewer(), -1},
	} {
		h, err := c.As(r.v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(r.name+"/sessions", func(b *testing.B) {
			for b.Loop() {
				if _, err := h.Sessions().Sessions(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(r.name, func(b *testing.B) {
			for b.Loop() {
				ids, err := h.Index().VisibleChunks(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if r.want < 0 && ids != nil || r.want >= 0 && len(ids) != r.want {
					b.Fatalf("%d chunks visible, want %d", len(ids), r.want)
				}
			}
		})
	}
}

// BenchmarkPlayerNeighbors measures what the witness rule of facts costs a
// player's walk (view.factRevealed): three hops through the 1k bench
// campaign's graph, every fact resting on a line, half the sessions' second
// halves split, as the DM (no rule), any player and a player bound to their
// id.
//
//	go test ./memory/postgres -run '^$' -bench PlayerNeighbors -benchtime 200x
func BenchmarkPlayerNeighbors(b *testing.B) {
	spec := benchdata.Spec{Name: "walk", Entities: benchdata.Scale1k.Entities, Relationships: benchdata.Scale1k.Relationships,
		Entries: 100, Chunks: 10, EntriesPerSession: 100, Dims: testDims, Seed: benchdata.Scale1k.Seed}
	s, dsn := pgtest.NewStore(b, spec.Dims)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		b.Fatal(err)
	}
	if err := benchdata.Generate(ctx, conn, "bench", spec, nil); err != nil {
		b.Fatal(err)
	}
	c := pgtest.Campaign(b, s, "bench")
	for _, q := range []string{
		`INSERT INTO fact_evidence (fact_id, entry_id)
		 SELECT r.id, (SELECT t.id FROM transcript_entries t WHERE t.campaign_id = 'bench' ORDER BY t.id OFFSET (r.id % 100) LIMIT 1)
		 FROM relationships r WHERE r.campaign_id = 'bench'`,
		`INSERT INTO session_presence (campaign_id, session_id, at, players, split)
		 SELECT 'bench', s.id, s.started_at, '{u0,u1}'::text[], false FROM sessions s WHERE s.campaign_id = 'bench'
		 UNION ALL
		 SELECT 'bench', s.id, (SELECT t.at FROM transcript_entries t WHERE t.campaign_id = 'bench' AND t.session_id = s.id
		                        ORDER BY t.at OFFSET 50 LIMIT 1), '{u1}', true
		 FROM sessions s WHERE s.campaign_id = 'bench'`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	for _, r := range []struct {
		name string
		v    memory.Viewer
	}{{"DM", memory.DMViewer()}, {"any player", memory.PlayerViewer()}, {"bound player", memory.PlayerViewerOf("u0")}} {
		h, err := c.As(r.v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(r.name, func(b *testing.B) {
			i, found := 0, 0
			for b.Loop() {
				ns, err := h.Graph().Neighbors(ctx, benchdata.EntityID(i*37%spec.Entities), 3, memory.TraversalOpts{})
				if err != nil {
					b.Fatal(err)
				}
				i++
				found += len(ns)
			}
			b.ReportMetric(float64(found)/float64(i), "entities/op")
		})
	}
}
