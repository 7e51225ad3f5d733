package postgres_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestEntityCRUD(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()

	e := must[memory.Entity](t)(g.Entity(ctx, "grimjaw"))
	if e.Name != "Grimjaw" || e.Attributes["occupation"] != "blacksmith" || !slices.Equal(e.Aliases, []string{"Grim"}) {
		t.Fatalf("got %+v", e)
	}
	name := "Grimjaw Ironfist"
	aliases := []string{"Grim", "Ironfist"}
	u := must[memory.Entity](t)(g.UpdateEntity(ctx, "grimjaw", memory.EntityUpdate{Name: &name, Aliases: &aliases,
		SetAttributes: map[string]any{"mood": "grumpy"}, DeleteAttributes: []string{"occupation"}}))
	if u.Name != name || u.Attributes["mood"] != "grumpy" || u.Attributes["occupation"] != nil || len(u.Aliases) != 2 {
		t.Fatalf("update: %+v", u)
	}
	if !u.UpdatedAt.After(e.UpdatedAt) {
		t.Errorf("updated_at did not move")
	}
	found := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{Name: "ironf"}))
	if fmt.Sprint(ids(found, entityID)) != "[grimjaw]" {
		t.Errorf("find by alias: %v", ids(found, entityID))
	}
	locs := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{Type: memory.EntityLocation}))
	if fmt.Sprint(ids(locs, entityID)) != "[ironhold vault tower]" {
		t.Errorf("find by type: %v", ids(locs, entityID))
	}
	// Re-saving an identical entity changes nothing, not even updated_at.
	same := must[memory.Entity](t)(g.Entity(ctx, "ironhold"))
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "ironhold", Type: memory.EntityLocation, Name: "Ironhold"}))
	if again := must[memory.Entity](t)(g.Entity(ctx, "ironhold")); !again.UpdatedAt.Equal(same.UpdatedAt) {
		t.Errorf("identical upsert moved updated_at")
	}
	check(t, g.DeleteEntity(ctx, "hammer"))
	if _, err := g.Entity(ctx, "hammer"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("deleted entity: %v", err)
	}
	if err := g.DeleteEntity(ctx, "hammer"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	rels := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))
	for _, r := range rels {
		if r.TargetID == "hammer" {
			t.Fatal("relationship to a deleted entity survived")
		}
	}
}

func TestRelationshipUpsertAndReview(t *testing.T) {
	t.Parallel()
	s := newStore(t) // review threshold 0.7
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()

	low := memory.Relationship{SourceID: "elara", TargetID: "guild", Type: "HOSTILE_TO",
		Attributes: map[string]any{"why": "debts"},
		Provenance: memory.Provenance{SessionID: "s2", Timestamp: t0, Confidence: 0.4, Source: memory.SourceInferred}}
	r := must[memory.Relationship](t)(g.UpsertRelationship(ctx, low))
	if r.Status != memory.StatusPending || r.ID == 0 {
		t.Fatalf("low-confidence fact: %+v", r)
	}
	pending := must[[]memory.Relationship](t)(g.PendingFacts(ctx, memory.FactFilter{}))
	if len(pending) != 1 || pending[0].ID != r.ID || pending[0].Provenance.SessionID != "s2" {
		t.Fatalf("pending: %+v", pending)
	}
	// Pending facts are not canon: traversals do not follow them.
	ns := must[[]memory.Neighbor](t)(g.Neighbors(ctx, "elara", 1, memory.TraversalOpts{}))
	if slices.Contains(ids(ns, neighborID), "guild") {
		t.Fatal("a pending fact was traversed")
	}
	// Proposing it again with more confidence but still below the threshold
	// updates the same fact; nothing is duplicated.
	low.Provenance.Confidence = 0.6
	low.Attributes = map[string]any{"since": "winter"}
	r2 := must[memory.Relationship](t)(g.UpsertRelationship(ctx, low))
	if r2.ID != r.ID || r2.Provenance.Confidence != 0.6 || r2.Attributes["why"] != "debts" || r2.Attributes["since"] != "winter" {
		t.Fatalf("re-proposal: %+v", r2)
	}
	// Lower confidence never lowers it.
	low.Provenance.Confidence = 0.1
	if r3 := must[memory.Relationship](t)(g.UpsertRelationship(ctx, low)); r3.Provenance.Confidence != 0.6 {
		t.Fatalf("confidence dropped to %v", r3.Provenance.Confidence)
	}
	conf := must[memory.Relationship](t)(g.ConfirmFact(ctx, r.ID))
	if conf.Status != memory.StatusActive || !conf.Provenance.DMConfirmed {
		t.Fatalf("confirmed: %+v", conf)
	}
	if p := must[[]memory.Relationship](t)(g.PendingFacts(ctx, memory.FactFilter{})); len(p) != 0 {
		t.Fatalf("still pending: %+v", p)
	}

	// Rejected facts stay rejected when proposed again.
	other := memory.Relationship{SourceID: "grimjaw", TargetID: "tower", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s3", Confidence: 0.3, Source: memory.SourceInferred}}
	o := must[memory.Relationship](t)(g.UpsertRelationship(ctx, other))
	rej := must[memory.Relationship](t)(g.RejectFact(ctx, o.ID))
	if rej.Status != memory.StatusRejected {
		t.Fatalf("rejected: %+v", rej)
	}
	again := must[memory.Relationship](t)(g.UpsertRelationship(ctx, other))
	if again.ID != o.ID || again.Status != memory.StatusRejected {
		t.Fatalf("re-proposing a rejected fact revived it: %+v", again)
	}
	// Unless the DM writes it.
	other.Provenance.DMConfirmed = true
	dm := must[memory.Relationship](t)(g.UpsertRelationship(ctx, other))
	if dm.Status != memory.StatusActive || dm.ID == o.ID {
		t.Fatalf("DM canon: %+v", dm)
	}
	// LOCATED_AT is single-valued: the DM's canon retired where Grimjaw was.
	where := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{
		RelTypes: []string{"LOCATED_AT"}, Direction: memory.Outgoing}))
	if len(where) != 1 || where[0].ID != dm.ID {
		t.Fatalf("Grimjaw's canon locations after the DM's write: %+v, want only fact %d", where, dm.ID)
	}
	// High-confidence facts are accepted directly.
	hi := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "ironhold",
		Type: "VISITED", Provenance: memory.Provenance{Confidence: 0.7, Source: memory.SourceStated}}))
	if hi.Status != memory.StatusActive {
		t.Fatalf("confidence at the threshold: %+v", hi)
	}
	if _, err := g.ConfirmFact(ctx, 999999); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("confirming a missing fact: %v", err)
	}
	ret := must[memory.Relationship](t)(g.RetireFact(ctx, hi.ID, "s4"))
	if ret.Status != memory.StatusRetired || ret.ValidUntilSession != "s4" {
		t.Fatalf("retired: %+v", ret)
	}
}

func TestTraversals(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()

	cases := []struct {
		name  string
		depth int
		opts  memory.TraversalOpts
		want  string
	}{
		{"depth 1", 1, memory.TraversalOpts{}, "[hammer elara ironhold guild]"},
		{"depth 2", 2, memory.TraversalOpts{}, "[hammer elara ironhold guild vault tower]"},
		{"outgoing only, typed", 3, memory.TraversalOpts{RelTypes: []string{"MEMBER_OF", "LOCATED_AT"}, Direction: memory.Outgoing}, "[ironhold guild]"},
		{"limit", 2, memory.TraversalOpts{Limit: 2}, "[hammer elara]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := must[[]memory.Neighbor](t)(g.Neighbors(ctx, "grimjaw", tc.depth, tc.opts))
			got := ids(ns, neighborID)
			if fmt.Sprint(got) != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, n := range ns {
				if _, ok := n.Entity.Attributes[memory.AttrSecretKnowledge]; ok {
					t.Fatalf("%s reached with its secret knowledge", n.Entity.ID)
				}
			}
		})
	}
	ns := must[[]memory.Neighbor](t)(g.Neighbors(ctx, "grimjaw", 3, memory.TraversalOpts{}))
	depth := map[string]int{}
	for _, n := range ns {
		depth[n.Entity.ID] = n.Depth
	}
	if depth["ironhold"] != 1 || depth["tower"] != 2 || depth["vault"] != 2 {
		t.Fatalf("depths: %v", depth)
	}

	path := must[[]memory.PathStep](t)(g.FindPath(ctx, "hammer", "vault", 5))
	got := ids(path, func(p memory.PathStep) string { return p.Entity.ID })
	if fmt.Sprint(got) != "[hammer grimjaw elara vault]" {
		t.Fatalf("path: %v", got)
	}
	if path[0].Via.ID != 0 || path[1].Via.Type != "OWNS" || path[3].Via.Type != "KNOWS" {
		t.Fatalf("path edges: %+v", path)
	}
	if _, err := g.FindPath(ctx, "hammer", "vault", 2); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("path longer than maxDepth: %v", err)
	}
	if p := must[[]memory.PathStep](t)(g.FindPath(ctx, "grimjaw", "grimjaw", 3)); len(p) != 1 {
		t.Fatalf("path to self: %+v", p)
	}
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "island", Type: "location", Name: "Lonely Island"}))
	if _, err := g.FindPath(ctx, "grimjaw", "island", 6); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("path to an unconnected entity: %v", err)
	}

	// Read together, each entity's relationships are what reading it
	// alone gives, for every reader.
	for _, v := range []memory.Viewer{memory.DMViewer(), memory.PlayerViewer(), memory.NPCViewer("elara")} {
		cv, err := c.As(v)
		check(t, err)
		gv := cv.Graph()
		ents := []string{"grimjaw", "island", "elara", "nosuch", "grimjaw"}
		for _, o := range []memory.TraversalOpts{{Limit: 200}, {Limit: 1, Direction: memory.Incoming}} {
			all := must[[][]memory.Relationship](t)(gv.RelationshipsOfEach(ctx, ents, o))
			if len(all) != len(ents) {
				t.Fatalf("%d lists for %d entities", len(all), len(ents))
			}
			types := must[[][]postgres.FactType](t)(gv.FactTypesOfEach(ctx, ents, o))
			if len(types) != len(ents) {
				t.Fatalf("%d type lists for %d entities", len(types), len(ents))
			}
			for i, id := range ents {
				one := must[[]memory.Relationship](t)(gv.Relationships(ctx, id, o))
				if fmt.Sprint(all[i]) != fmt.Sprint(one) {
					t.Errorf("%v %s %+v: together %v, alone %v", v, id, o, all[i], one)
				}
				var want []postgres.FactType
				for _, r := range one {
					want = append(want, postgres.FactType{ID: r.ID, Type: r.Type})
				}
				if fmt.Sprint(types[i]) != fmt.Sprint(want) {
					t.Errorf("%v %s %+v: types %v, relationships %v", v, id, o, types[i], want)
				}
			}
		}
		// Facts by id gives each reader only the active facts it may see,
		// as it reads them otherwise, whatever ids it asks for (all the
		// DM's, a secret one among them, and an id of no fact).
		var asked []int64
		mine := map[int64]memory.Relationship{}
		for _, id := range ents {
			for _, r := range must[[]memory.Relationship](t)(c.Graph().Relationships(ctx, id, memory.TraversalOpts{})) {
				asked = append(asked, r.ID)
			}
			for _, r := range must[[]memory.Relationship](t)(gv.Relationships(ctx, id, memory.TraversalOpts{})) {
				mine[r.ID] = r
			}
		}
		got := must[map[int64]memory.Relationship](t)(gv.Facts(ctx, append(asked, -1)))
		if v.Role == memory.RolePlayer && len(got) >= len(set(asked)) {
			t.Errorf("a player reads every fact by id, the secret one too: %v", got)
		}
		if len(got) != len(mine) {
			t.Errorf("%v: facts by id %v, visible %v", v, got, mine)
		}
		for id, r := range mine {
			if fmt.Sprint(got[id]) != fmt.Sprint(r) {
				t.Errorf("%v: fact %d by id %v, as a relationship %v", v, id, got[id], r)
			}
		}
	}
}

func TestIdentityAndVisibility(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()

	id := must[memory.NPCIdentity](t)(g.IdentitySnapshot(ctx, "grimjaw"))
	if id.Entity.Attributes[memory.AttrSecretKnowledge] != "owes the guild 300 gold" {
		t.Errorf("an NPC's own secret belongs in its identity: %+v", id.Entity)
	}
	if fmt.Sprint(ids(id.RelatedEntities, entityID)) != "[hammer elara ironhold guild]" {
		t.Errorf("related: %v", ids(id.RelatedEntities, entityID))
	}
	if len(id.Relationships) != 4 {
		t.Errorf("relationships: %d", len(id.Relationships))
	}
	for _, e := range id.RelatedEntities {
		if _, ok := e.Attributes[memory.AttrSecretKnowledge]; ok {
			t.Errorf("identity of grimjaw leaks %s's secret", e.ID)
		}
	}
	if _, err := g.IdentitySnapshot(ctx, "nobody"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("identity of a missing NPC: %v", err)
	}

	ents, rels := mustVisible(t, g, "grimjaw", memory.VisibilityScope{})
	if fmt.Sprint(ids(ents, entityID)) != "[grimjaw hammer elara ironhold guild tower]" {
		t.Errorf("grimjaw sees %v", ids(ents, entityID))
	}
	for _, r := range rels {
		if r.Attributes[memory.AttrSecret] == true {
			t.Errorf("grimjaw sees the secret edge %+v", r)
		}
	}
	for _, e := range ents {
		if _, ok := e.Attributes[memory.AttrSecretKnowledge]; ok && e.ID != "grimjaw" {
			t.Errorf("grimjaw sees %s's secret knowledge", e.ID)
		}
	}
	// Elara is an end of the secret edge: she sees it and the vault.
	ents, rels = mustVisible(t, g, "elara", memory.VisibilityScope{})
	if !slices.Contains(ids(ents, entityID), "vault") {
		t.Errorf("elara does not see the vault: %v", ids(ents, entityID))
	}
	// Granting grimjaw knowledge of the secret (known_by) reveals it to him.
	must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "vault", Type: "KNOWS",
		Attributes: map[string]any{memory.AttrKnownBy: []string{"grimjaw"}},
		Provenance: memory.Provenance{Confidence: 1, DMConfirmed: true}}))
	ents, _ = mustVisible(t, g, "grimjaw", memory.VisibilityScope{})
	if !slices.Contains(ids(ents, entityID), "vault") {
		t.Errorf("known_by did not reveal the vault: %v", ids(ents, entityID))
	}
	// A narrow scope sees only its own edges.
	ents, _ = mustVisible(t, g, "grimjaw", memory.VisibilityScope{RelTypes: []string{"OWNS"}, MaxDepth: 1})
	if fmt.Sprint(ids(ents, entityID)) != "[grimjaw hammer elara ironhold guild]" {
		t.Errorf("narrow scope: %v", ids(ents, entityID))
	}
	_ = rels
}

func mustVisible(t *testing.T, g memory.KnowledgeGraph, npc string, sc memory.VisibilityScope) ([]memory.Entity, []memory.Relationship) {
	t.Helper()
	e, r, err := g.VisibleSubgraph(ctxT(t), npc, sc)
	if err != nil {
		t.Fatal(err)
	}
	return e, r
}

func set[T comparable](xs []T) map[T]bool {
	out := map[T]bool{}
	for _, x := range xs {
		out[x] = true
	}
	return out
}
