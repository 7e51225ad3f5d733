package postgres_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// A fact waiting for review, or rejected, is the DM's business: no player
// or NPC read returns it, the NPC's own included (issue 25).
func TestViewerHidesPendingAndRejectedFacts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	ctx := ctxT(t)
	g := c.Graph()
	low := memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 0.1, Source: memory.SourceInferred}
	pending := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "tower",
		Type: "PENDING_VISIT", Provenance: low}))
	rejected := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "vault",
		Type: "REJECTED_VISIT", Provenance: low}))
	if pending.Status != memory.StatusPending {
		t.Fatalf("a low-confidence fact is %s, want pending", pending.Status)
	}
	must[memory.Relationship](t)(g.RejectFact(ctx, rejected.ID))
	all := postgres.FactQuery{Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending, memory.StatusRetired,
		memory.StatusRejected}}
	for _, tc := range []struct {
		viewer memory.Viewer
		sees   bool
	}{
		{memory.DMViewer(), true},
		{memory.PlayerViewer(), false},
		{memory.NPCViewer("grimjaw"), false}, // an end of both facts
		{memory.NPCViewer("elara"), false},
	} {
		t.Run(tc.viewer.String(), func(t *testing.T) {
			v := mustAs(t, c, tc.viewer).Graph()
			for _, f := range []memory.Relationship{pending, rejected} {
				_, err := v.Fact(ctx, f.ID)
				if got := err == nil; got != tc.sees {
					t.Errorf("Fact(%s) err = %v, want seen %v", f.Type, err, tc.sees)
				}
				if !tc.sees && !errors.Is(err, memory.ErrNotFound) {
					t.Errorf("Fact(%s) of a hidden fact: %v, want not found", f.Type, err)
				}
			}
			facts := must[[]postgres.FactWithNames](t)(v.FindFacts(ctx, all))
			got := slices.ContainsFunc(facts, func(f postgres.FactWithNames) bool { return f.ID == pending.ID || f.ID == rejected.ID })
			if got != tc.sees {
				t.Errorf("FindFacts shows the pending or rejected fact: %v, want %v", got, tc.sees)
			}
			ps := must[[]memory.Relationship](t)(v.PendingFacts(ctx, memory.FactFilter{}))
			if (len(ps) > 0) != tc.sees {
				t.Errorf("PendingFacts = %d facts, want seen %v", len(ps), tc.sees)
			}
			n := must[postgres.Counts](t)(mustAs(t, c, tc.viewer).Counts(ctx))
			if (n.Pending > 0) != tc.sees {
				t.Errorf("Counts.Pending = %d, want seen %v", n.Pending, tc.sees)
			}
		})
	}
}

// The NPC paths that take the NPC as an argument (identity snapshot,
// visible subgraph: the hot context and the NPC's tools) give edges
// without their DM-only keys; a secret fact the NPC may see keeps its
// public attributes and its marker.
func TestNPCPathsStripDMOnlyFactAttributes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	forged := seedSecrets(t, c)
	ctx := ctxT(t)
	g := c.Graph()
	must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "elara", Type: "KNOWS",
		Attributes: map[string]any{"since": "childhood", "gm_notes": "dm-only-x1", "Hidden_Why": "dm-only-x2",
			"detail": map[string]any{memory.AttrSecret: true, "text": "dm-only-x3"}},
		Provenance: memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 1, Source: memory.SourceStated}}))
	id := must[memory.NPCIdentity](t)(g.IdentitySnapshot(ctx, "grimjaw"))
	_, rels, err := g.VisibleSubgraph(ctx, "grimjaw", memory.VisibilityScope{RelTypes: []string{"KNOWS", "FORGED"}})
	check(t, err)
	for name, rs := range map[string][]memory.Relationship{"identity": id.Relationships, "visible subgraph": rels} {
		b, _ := json.Marshal(rs)
		if strings.Contains(string(b), "dm-only") || strings.Contains(string(b), memory.AttrKnownBy) {
			t.Errorf("%s: DM-only fact attributes reach the NPC: %s", name, b)
		}
		knows, secret := false, false
		for _, r := range rs {
			if r.Type == "KNOWS" && r.TargetID == "elara" {
				knows = r.Attributes["since"] == "childhood"
			}
			if r.ID == forged.ID {
				secret = r.Attributes[memory.AttrSecret] == true && r.Attributes["note"] == "at night"
			}
		}
		if !knows || !secret {
			t.Errorf("%s: public fact attributes lost (KNOWS since: %v; the forged fact's marker and note: %v): %s", name, knows, secret, b)
		}
	}
}

// The memory-tool view (kg_read, kg_recall, kg_sync) of a player takes
// gist, notes and touches from the public attributes: an object marked
// secret, under any of those keys or in touches, is not shown; edge notes
// likewise. The DM's view is the raw text.
func TestKGReadsThroughTheViewer(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	ctx := ctxT(t)
	g := c.Graph()
	check(t, g.UpsertEntities(ctx, []memory.Entity{
		{ID: "crypt", Type: memory.EntityLocation, Name: "Crypt", Attributes: map[string]any{
			"gist":    map[string]any{memory.AttrSecret: true, "text": "hidden-gist"},
			"notes":   map[string]any{memory.AttrSecret: true, "text": "hidden-notes"},
			"touches": []any{"altar", map[string]any{memory.AttrSecret: true, "text": "hidden-touch"}},
		}},
		{ID: "altar", Type: memory.EntityItem, Name: "Altar", Attributes: map[string]any{
			"gist": "a stone altar", "description": map[string]any{memory.AttrSecret: true, "text": "hidden-description"}}},
		{ID: "warden", Type: memory.EntityNPC, Name: "Warden", Attributes: map[string]any{
			"gist": map[string]any{memory.AttrSecret: true, "text": "warden-own-gist"}}},
	}))
	must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "altar", TargetID: "crypt", Type: "IN",
		Attributes: map[string]any{"notes": map[string]any{memory.AttrSecret: true, "text": "hidden-edge-notes"}},
		Provenance: memory.Provenance{Timestamp: t0, Confidence: 1, Source: memory.SourceStated}}))

	dm := must[postgres.KGView](t)(mustAs(t, c, memory.DMViewer()).KGRead(ctx, true))
	if b, _ := json.Marshal(dm); !strings.Contains(string(b), "hidden-gist") || !strings.Contains(string(b), "hidden-edge-notes") {
		t.Fatalf("the DM's kg view lacks the secrets (else this test proves nothing): %s", b)
	}
	player := mustAs(t, c, memory.PlayerViewer())
	pv := must[postgres.KGView](t)(player.KGRead(ctx, false))
	node := must[postgres.KGNode](t)(player.KGNode(ctx, postgres.KGCampaign, "crypt"))
	npc := mustAs(t, c, memory.NPCViewer("warden"))
	nv := must[postgres.KGView](t)(npc.KGRead(ctx, false))
	for name, v := range map[string]any{"player kg_read": pv, "player node": node, "npc kg_read": nv} {
		b, _ := json.Marshal(v)
		if strings.Contains(string(b), "hidden-") {
			t.Errorf("%s shows a secret: %s", name, b)
		}
	}
	if !slices.ContainsFunc(pv.Nodes, func(n postgres.KGNode) bool { return n.ID == "altar" && n.Gist == "a stone altar" }) ||
		!slices.Equal(node.Touches, []string{"altar"}) {
		t.Errorf("the player lost public text: %+v, crypt touches %v", pv.Nodes, node.Touches)
	}
	if !slices.ContainsFunc(nv.Nodes, func(n postgres.KGNode) bool { return n.ID == "warden" && strings.Contains(n.Gist, "warden-own-gist") }) {
		t.Errorf("the NPC does not see its own gist: %+v", nv.Nodes)
	}
}

// Every shape of FindEntities reads attributes as the viewer: asking by id
// alone (the name index's and retrieval's query, which has a query of its
// own) once returned the raw row, DM-only keys and all. The entity holds
// every spelling memory.SecretKey treats as secret and object values
// marked secret, at the top and nested.
func TestFindEntitiesReadsAsTheViewerInEveryShape(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	ctx := ctxT(t)
	hidden := map[string]any{"occupation": "ferryman", "lore": map[string]any{"public": "rows at dusk",
		"GM_Notes": "hidden-nested-gm", "deeper": map[string]any{"secret": true, "text": "hidden-deep-object"}}}
	for i, k := range []string{"secret_knowledge", "Secret_Plan", "Secretive", "gm_notes", "GM_Notes", "gm_x", "dm_notes", "DM_Motive",
		"dm_x", "notes_gm", "NOTES_DM", "notes_dm", "hidden", "Hidden_Past", "known_by"} {
		hidden[k] = fmt.Sprintf("hidden-key-%d", i)
	}
	hidden["mood"] = map[string]any{"secret": true, "text": "hidden-object-value"}
	hidden["allies"] = []any{"the guild", map[string]any{"secret": true, "name": "hidden-array-object"}}
	check(t, c.Graph().UpsertEntities(ctx, []memory.Entity{
		{ID: "charon", Type: memory.EntityNPC, Name: "Charon", Attributes: hidden},
		{ID: "styx", Type: memory.EntityLocation, Name: "Styx"},
	}))
	shapes := []struct {
		name string
		f    memory.EntityFilter
	}{
		{"all", memory.EntityFilter{}},
		{"by name", memory.EntityFilter{Name: "char"}},
		{"by type", memory.EntityFilter{Type: memory.EntityNPC}},
		{"by id alone", memory.EntityFilter{IDs: []string{"charon", "styx"}}},
		{"by id and name", memory.EntityFilter{IDs: []string{"charon"}, Name: "Charon"}},
		{"by id with a limit", memory.EntityFilter{IDs: []string{"charon"}, Limit: 1}},
	}
	for _, tc := range []struct {
		viewer memory.Viewer
		sees   bool
	}{
		{memory.DMViewer(), true},
		{memory.NPCViewer("charon"), true}, // its own secrets
		{memory.PlayerViewer(), false},
		{memory.NPCViewer("styx"), false},
	} {
		g := mustAs(t, c, tc.viewer).Graph()
		for _, sh := range shapes {
			t.Run(tc.viewer.String()+"/"+sh.name, func(t *testing.T) {
				es := must[[]memory.Entity](t)(g.FindEntities(ctx, sh.f))
				k := slices.IndexFunc(es, func(e memory.Entity) bool { return e.ID == "charon" })
				if k < 0 {
					t.Fatalf("FindEntities(%+v) lost Charon: %v", sh.f, es)
				}
				b, _ := json.Marshal(es[k].Attributes)
				if got := strings.Count(string(b), "hidden-"); (got > 0) != tc.sees {
					t.Errorf("%s sees %d secrets, want seen %v: %s", tc.viewer, got, tc.sees, b)
				}
				if tc.sees && strings.Count(string(b), "hidden-") != 19 {
					t.Errorf("%s sees only some of the secrets: %s", tc.viewer, b)
				}
				if !strings.Contains(string(b), "rows at dusk") || es[k].Attributes["occupation"] != "ferryman" {
					t.Errorf("%s lost public attributes: %s", tc.viewer, b)
				}
			})
		}
	}
}

// A handle bound to a player or an NPC writes facts only as that reader:
// claiming the DM's, the import's or extraction's writer (which write
// canon) or another NPC's is refused, and nothing is stored; its own
// writer proposes. The DM's handle writes as anyone.
func TestBoundHandlesWriteOnlyAsThemselves(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	ctx := ctxT(t)
	for i, tc := range []struct {
		viewer memory.Viewer
		writer memory.Writer
		ok     bool
	}{
		{memory.PlayerViewer(), memory.DM("mallory"), false},
		{memory.PlayerViewer(), memory.Writer{Role: memory.WriterExtraction}, false},
		{memory.PlayerViewer(), memory.Writer{Role: memory.WriterImport}, false},
		{memory.PlayerViewer(), memory.NPCWriter("grimjaw"), false},
		{memory.PlayerViewer(), memory.Player("mallory"), true},
		{memory.NPCViewer("grimjaw"), memory.DM(""), false},
		{memory.NPCViewer("grimjaw"), memory.NPCWriter("elara"), false},
		{memory.NPCViewer("grimjaw"), memory.Player("mallory"), false},
		{memory.NPCViewer("grimjaw"), memory.NPCWriter("grimjaw"), true},
		{memory.DMViewer(), memory.DM("dm1"), true},
		{memory.DMViewer(), memory.Player("p1"), true},
	} {
		t.Run(tc.viewer.String()+"/"+tc.writer.Key(), func(t *testing.T) {
			typ := fmt.Sprintf("CLAIMED_%d", i)
			g := mustAs(t, c, tc.viewer).Graph()
			w, err := g.WriteFact(ctx, tc.writer, memory.Relationship{SourceID: "grimjaw", TargetID: "vault", Type: typ,
				Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated, Timestamp: t0}}, "")
			if tc.ok != (err == nil) {
				t.Fatalf("WriteFact err = %v, want ok %v", err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, memory.ErrForbidden) {
				t.Errorf("refused with %v, want forbidden", err)
			}
			stored := must[[]postgres.FactWithNames](t)(c.Graph().FindFacts(ctx, postgres.FactQuery{Text: typ,
				Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending}}))
			if got := slices.ContainsFunc(stored, func(f postgres.FactWithNames) bool { return f.Type == typ }); got != tc.ok {
				t.Errorf("fact stored = %v, want %v", got, tc.ok)
			}
			if tc.ok && tc.writer.Proposes() && w.Fact.Status != memory.StatusPending {
				t.Errorf("a proposal is %s, want pending", w.Fact.Status)
			}
		})
	}
}

// Why an entity was retired is the DM's, as why a fact was: a reason may
// name a secret.
func TestRetiredEntityReasonIsForTheDM(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	ctx := ctxT(t)
	must[postgres.EntityRetirement](t)(c.Graph().RetireEntity(ctx, "hammer", "", "melted down by the secret cult"))
	for _, tc := range []struct {
		viewer memory.Viewer
		ok     bool
	}{
		{memory.DMViewer(), true},
		{memory.PlayerViewer(), false},
		{memory.NPCViewer("grimjaw"), false},
	} {
		t.Run(tc.viewer.String(), func(t *testing.T) {
			r, retired, err := mustAs(t, c, tc.viewer).Graph().RetiredEntity(ctx, "hammer")
			switch {
			case tc.ok && (err != nil || !retired || r.Reason != "melted down by the secret cult"):
				t.Errorf("the DM reads %+v retired %v err %v", r, retired, err)
			case !tc.ok && (!errors.Is(err, memory.ErrForbidden) || r.Reason != ""):
				t.Errorf("%s reads %+v err %v, want forbidden", tc.viewer, r, err)
			}
		})
	}
}

// An NPC's own view (identity snapshot, visible subgraph) holds its secret
// knowledge: a player's handle, or another NPC's, is refused; the DM, the
// server and the NPC itself read it.
func TestNPCViewIsTheNPCsOwn(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	ctx := ctxT(t)
	scope := memory.VisibilityScope{RelTypes: []string{"KNOWS"}}
	for _, tc := range []struct {
		name  string
		graph func() *postgres.Graph
		reads bool
	}{
		{"system", c.Graph, true},
		{"dm", func() *postgres.Graph { return mustAs(t, c, memory.DMViewer()).Graph() }, true},
		{"the npc", func() *postgres.Graph { return mustAs(t, c, memory.NPCViewer("grimjaw")).Graph() }, true},
		{"another npc", func() *postgres.Graph { return mustAs(t, c, memory.NPCViewer("elara")).Graph() }, false},
		{"player", func() *postgres.Graph { return mustAs(t, c, memory.PlayerViewer()).Graph() }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := tc.graph()
			_, err1 := g.IdentitySnapshot(ctx, "grimjaw")
			_, _, err2 := g.VisibleSubgraph(ctx, "grimjaw", scope)
			for what, err := range map[string]error{"IdentitySnapshot": err1, "VisibleSubgraph": err2} {
				if tc.reads && err != nil {
					t.Errorf("%s: %v, want the NPC's view", what, err)
				}
				if !tc.reads && !errors.Is(err, memory.ErrForbidden) {
					t.Errorf("%s: err = %v, want forbidden", what, err)
				}
			}
		})
	}
}
