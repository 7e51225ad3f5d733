package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestFactPublicIsThePlayersView: the change log's trigger (migration
// 0039) decides whether every player could read a fact that leaves the
// graph with glyphoxa_fact_public, a restatement in SQL of the store's one
// rule for a player (view.factVisible for the unbound player), since a
// trigger cannot call the Go that writes that rule. This test holds the two
// together on facts of every kind the rule tells apart: the function may
// say "public" only where the rule lets any player read the fact (else
// kg_sync would name a secret), and says it wherever the rule does, save
// for a fact naming an entity first heard in a split scene, which it
// leaves out whatever the rule says (the safe side).
func TestFactPublicIsThePlayersView(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	sl := camp.Sessions()
	t0 := splitAfterAMinute(t, sl)
	g := camp.Graph()
	pub := sessionLine(t, sl, "dana", "Ada and Bo: all of it said at the table.", t0.Add(10*time.Second))
	scene := sessionLine(t, sl, "thorin", "In the scene: Ada, Bo and the Ghost.", t0.Add(2*time.Minute))
	for _, e := range []memory.Entity{{ID: "ada", Type: memory.EntityNPC, Name: "Ada"}, {ID: "bo", Type: memory.EntityNPC, Name: "Bo"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// An entity first heard in a line of the split scene: hidden from the
	// players outside it.
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "ghost", Type: memory.EntityNPC, Name: "Ghost"}, []int64{scene}); err != nil {
		t.Fatal(err)
	}
	type fact struct {
		name     string
		target   string
		attrs    map[string]any
		conf     float64 // 1 when 0; below the store's threshold the fact waits for review
		evidence []int64
		then     func(id int64) error
	}
	facts := []fact{
		{name: "said at the table", target: "bo", evidence: []int64{pub}},
		{name: "said in the scene only", target: "bo", evidence: []int64{scene}},
		{name: "said at the table and in the scene", target: "bo", evidence: []int64{pub, scene}},
		{name: "the DM's, on no line", target: "bo"},
		{name: "secret", target: "bo", attrs: map[string]any{"secret": true}, evidence: []int64{pub}},
		{name: "secret false", target: "bo", attrs: map[string]any{"secret": false}, evidence: []int64{pub}},
		{name: "pending", target: "bo", conf: 0.1, evidence: []int64{pub}},
		{name: "rejected", target: "bo", evidence: []int64{pub}, then: func(id int64) error { _, err := g.RejectFact(ctx, id); return err }},
		{name: "retired", target: "bo", evidence: []int64{pub}, then: func(id int64) error { _, err := g.RetireFact(ctx, id, "s1"); return err }},
		{name: "naming the Ghost", target: "ghost", evidence: []int64{pub}},
	}
	ids := map[string]int64{}
	for i, f := range facts {
		conf := f.conf
		if conf == 0 {
			conf = 1
		}
		r, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "ada", TargetID: f.target, Type: "REL_" + string(rune('A'+i)),
			Attributes: f.attrs, Provenance: memory.Provenance{SessionID: "s1", Confidence: conf, Source: memory.SourceStated}})
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if len(f.evidence) > 0 {
			if err := g.AddEvidence(ctx, r.ID, f.evidence); err != nil {
				t.Fatal(err)
			}
		}
		if f.then != nil {
			if err := f.then(r.ID); err != nil {
				t.Fatalf("%s: %v", f.name, err)
			}
		}
		ids[f.name] = r.ID
	}
	rule := postgres.FactVisibleSQLForTest(memory.PlayerViewer(), "r")
	var public, readable int
	for _, f := range facts {
		var fn, vis, sceneEnd bool
		err := s.Pool().QueryRow(ctx, `SELECT glyphoxa_fact_public(r), r.status = 'active' AND r.proposed_by = '' AND `+rule+`,
			EXISTS (SELECT 1 FROM entities e WHERE e.campaign_id = r.campaign_id AND e.id IN (r.source_id, r.target_id) AND e.scene_only)
			FROM relationships r WHERE r.id = $1`, ids[f.name]).Scan(&fn, &vis, &sceneEnd)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case fn && !vis:
			t.Errorf("%s: glyphoxa_fact_public says every player could read it; the store's rule says no player may (kg_sync would name it)", f.name)
		case vis && !fn && !sceneEnd:
			t.Errorf("%s: the store's rule lets every player read it; glyphoxa_fact_public says no (kg_sync would not name its removal)", f.name)
		}
		t.Logf("%-36s public %v, readable %v, a scene end %v", f.name, fn, vis, sceneEnd)
		if fn {
			public++
		}
		if vis {
			readable++
		}
	}
	// The corpus has both answers.
	if public != 4 || readable != 4 {
		t.Errorf("%d facts public by the function, %d readable by the rule; want 4 and 4", public, readable)
	}
}
