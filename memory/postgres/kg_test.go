package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

var kgNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// seedKG writes a campaign of n nodes: the first recent of them updated in
// the last week, the others 8 to 207 days ago; about 1.5 edges per node.
func seedKG(tb testing.TB, s *postgres.Store, c *postgres.Campaign, n, recent int) {
	tb.Helper()
	ctx := context.Background()
	_, err := s.Pool().Exec(ctx, `
		INSERT INTO entities (campaign_id, id, type, name, aliases, attributes, updated_at)
		SELECT $1, 'n' || i, 'concept', 'Node ' || i, '{}',
		       jsonb_build_object('gist', 'what node ' || i || ' is' || repeat(' and more', i % 5),
		                          'notes', CASE WHEN i % 3 = 0 THEN 'a caveat about ' || i ELSE '' END,
		                          'touches', CASE WHEN i % 4 = 0 THEN jsonb_build_array('n' || (i % $2 + 1)) ELSE '[]'::jsonb END),
		       $3::timestamptz - make_interval(days => CASE WHEN i <= $4 THEN i % 7 ELSE 8 + i % 200 END, hours => i % 24)
		FROM generate_series(1, $2) i`, c.ID(), n, kgNow, recent)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = s.Pool().Exec(ctx, `
		INSERT INTO relationships (campaign_id, source_id, target_id, rel_type, confidence, source, status)
		SELECT $1, 'n' || (i % $2 + 1), 'n' || ((i * 37 + 11) % $2 + 1), 'REL_' || (i / $2), 1, 'stated', 'active'
		FROM generate_series(1, $2 * 3 / 2) i WHERE i % $2 <> (i * 37 + 11) % $2
		ON CONFLICT DO NOTHING`, c.ID(), n)
	if err != nil {
		tb.Fatal(err)
	}
}

func TestKGCompaction2000(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStore(t)
	c := pgtest.Campaign(t, s, "kg-compaction")
	seedKG(t, s, c, 2000, 100)
	before := must[postgres.KGView](t)(c.KGRead(ctx, true))
	if before.Tokens <= postgres.DefaultKGTokenLimit {
		t.Fatalf("the seed is already under the limit: %d tokens", before.Tokens)
	}
	rep := must[postgres.Compaction](t)(c.CompactKG(ctx, postgres.KGCampaign, kgNow))
	after := must[postgres.KGView](t)(c.KGRead(ctx, true))
	if rep.After != after.Tokens || after.Tokens > postgres.DefaultKGTokenLimit*9/10 || rep.Archived == 0 {
		t.Fatalf("compaction %+v; kg_read now %d tokens, want ≤ 90%% of %d", rep, after.Tokens, postgres.DefaultKGTokenLimit)
	}
	active := map[string]bool{}
	for _, n := range after.Nodes {
		active[n.ID] = true
	}
	rows, err := s.Pool().Query(ctx, `SELECT id FROM entities WHERE campaign_id = $1 AND updated_at > $2`, c.ID(), kgNow.Add(-postgres.KGProtected))
	check(t, err)
	var recent int
	for rows.Next() {
		var id string
		check(t, rows.Scan(&id))
		recent++
		if !active[id] {
			t.Errorf("node %s, updated within 7 days, was archived", id)
		}
	}
	if recent != 100 {
		t.Fatalf("%d recent nodes, want 100", recent)
	}
	if len(after.Traces) == 0 {
		t.Fatal("no memory traces to archived nodes")
	}
	for _, tr := range after.Traces {
		if active[tr.From] == active[tr.To] || !tr.Trace {
			t.Fatalf("trace %+v must join an active and an archived node", tr)
		}
	}
	// A second pass has nothing to do.
	if again := must[postgres.Compaction](t)(c.CompactKG(ctx, postgres.KGCampaign, kgNow)); again.Archived != 0 {
		t.Errorf("second pass archived %d", again.Archived)
	}
	// Recall brings a trace's archived end back, fresh.
	tr := after.Traces[0]
	gone := tr.To
	if !active[tr.From] {
		gone = tr.From
	}
	back := must[postgres.KGNode](t)(c.KGRecall(ctx, postgres.KGCampaign, gone, false, kgNow))
	if back.Archived || !back.UpdatedAt.Equal(kgNow) {
		t.Fatalf("recalled %+v", back)
	}
	if v := must[postgres.KGView](t)(c.KGRead(ctx, false)); !slices.ContainsFunc(v.Nodes, func(n postgres.KGNode) bool { return n.ID == gone }) {
		t.Fatalf("recalled node %s is not in kg_read", gone)
	}
	// A player's recall cannot undo the DM's deletion.
	_, err = s.Pool().Exec(ctx, `UPDATE entities SET attributes = attributes || '{"archived": true}' WHERE campaign_id = $1 AND id = 'n1'`, c.ID())
	check(t, err)
	if _, err := c.KGRecall(ctx, postgres.KGCampaign, "n1", false, kgNow); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("recalling a deleted node without DM rights: %v", err)
	}
}

func TestKGDMLevelAndGrace(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStore(t)
	c := pgtest.Campaign(t, s, "kg-dm")
	check(t, c.SetKGLimit(ctx, 40))
	old := kgNow.Add(-30 * 24 * time.Hour)
	for _, id := range []string{"plot", "twist", "lonely"} {
		must[postgres.KGNode](t)(c.KGPutNode(ctx, postgres.KGDM, postgres.KGNodeInput{ID: id, Gist: "the " + id + " of the campaign"}, old))
	}
	check(t, c.KGPutDMEdge(ctx, "plot", "twist", "LEADS_TO", nil, old))
	must[postgres.KGNode](t)(c.KGPutNode(ctx, postgres.KGDM, postgres.KGNodeInput{ID: "fresh", Gist: "written today"}, kgNow))
	if v := must[postgres.KGView](t)(c.KGRead(ctx, false)); len(v.Nodes) != 0 {
		t.Fatalf("a player's kg_read shows DM notes: %+v", v.Nodes)
	}
	rep := must[postgres.Compaction](t)(c.CompactKG(ctx, postgres.KGDM, kgNow))
	v := must[postgres.KGView](t)(c.KGRead(ctx, true))
	if rep.Archived == 0 || v.Tokens > 36 || !slices.ContainsFunc(v.Nodes, func(n postgres.KGNode) bool { return n.ID == "fresh" }) {
		t.Fatalf("compaction %+v, view %+v", rep, v)
	}
	// Past the grace period, archived nodes without an active neighbour go.
	later := kgNow.Add(postgres.KGGrace + time.Hour)
	rep = must[postgres.Compaction](t)(c.CompactKG(ctx, postgres.KGDM, later))
	if rep.Deleted == 0 {
		t.Fatalf("nothing deleted after the grace period: %+v", rep)
	}
	if _, err := c.KGNode(ctx, postgres.KGDM, "lonely"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("lonely survived the grace period: %v", err)
	}
}

// BenchmarkKGRead reads a 2,000-node campaign; it reports the p95.
func BenchmarkKGRead(b *testing.B) {
	s, _ := pgtest.NewStore(b, testDims)
	c := pgtest.Campaign(b, s, "kg-bench")
	seedKG(b, s, c, 2000, 100)
	ctx := context.Background()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		if _, err := c.KGRead(ctx, true); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t))
	}
	b.StopTimer()
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	b.ReportMetric(float64(ds[len(ds)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkKGCompaction runs a compaction pass on a 2,000-node campaign
// (the archive marks are cleared between passes, off the clock).
func BenchmarkKGCompaction(b *testing.B) {
	s, _ := pgtest.NewStore(b, testDims)
	c := pgtest.Campaign(b, s, "kg-bench")
	seedKG(b, s, c, 2000, 100)
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		if _, err := s.Pool().Exec(ctx, `UPDATE entities SET kg_archived_at = NULL WHERE campaign_id = $1`, c.ID()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := c.CompactKG(ctx, postgres.KGCampaign, kgNow)
		if err != nil || rep.Archived == 0 {
			b.Fatal(rep, err)
		}
	}
}
