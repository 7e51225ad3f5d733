package postgres_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// seedSecrets adds to seedWorld's campaign the secrets of issue 17: a key
// Grimjaw forged in secret, known to Elara; and attributes for the DM's
// eyes only (secret_plan, gm_notes, a nested secret object).
func seedSecrets(t *testing.T, c *postgres.Campaign) memory.Relationship {
	t.Helper()
	ctx := ctxT(t)
	g := c.Graph()
	check(t, g.UpsertEntities(ctx, []memory.Entity{
		{ID: "vault-key", Type: memory.EntityItem, Name: "Vault Key", Attributes: map[string]any{
			"material": "iron", "secret_plan": "opens the vault at midnight", "gm_notes": "the real key is a fake",
			"history":     map[string]any{"maker": "unknown", "true_maker": map[string]any{"secret": true, "name": "Grimjaw"}},
			"Hidden_Door": "behind the forge",
		}},
	}))
	forged := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "vault-key",
		Type: "FORGED", Attributes: map[string]any{memory.AttrSecret: true, memory.AttrKnownBy: []any{"elara"}, "note": "at night"},
		Provenance: memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 1, Source: memory.SourceStated}}))
	return forged
}

func mustAs(t *testing.T, c *postgres.Campaign, v memory.Viewer) *postgres.Campaign {
	t.Helper()
	x, err := c.As(v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// leaks reports the secret words found in v rendered as JSON.
func leaks(v any) []string {
	b, _ := json.Marshal(v)
	s := strings.ToLower(string(b))
	var out []string
	for _, w := range []string{"midnight", "real key is a fake", "true_maker", "behind the forge", "owes the guild", "lost heir", "known_by", "forged"} {
		if strings.Contains(s, w) {
			out = append(out, w)
		}
	}
	return out
}

func TestViewerFiltersEveryReadPath(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	base := pgtest.Campaign(t, s, "camp")
	seedWorld(t, base)
	forged := seedSecrets(t, base)
	ctx := ctxT(t)

	type reads struct {
		entity     memory.Entity
		entities   []memory.Entity
		rels       []memory.Relationship
		facts      []postgres.FactWithNames
		fact       error
		neighbors  []memory.Neighbor
		path       []memory.PathStep
		pathErr    error
		pending    []memory.Relationship
		changes    []postgres.Change
		graphFacts []int64
	}
	read := func(t *testing.T, c *postgres.Campaign) reads {
		t.Helper()
		g := c.Graph()
		var r reads
		r.entity = must[memory.Entity](t)(g.Entity(ctx, "vault-key"))
		r.entities = must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{}))
		r.rels = must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))
		r.facts = must[[]postgres.FactWithNames](t)(g.FindFacts(ctx, postgres.FactQuery{Text: "forged"}))
		_, r.fact = g.Fact(ctx, forged.ID)
		r.neighbors = must[[]memory.Neighbor](t)(g.Neighbors(ctx, "vault-key", 1, memory.TraversalOpts{}))
		r.path, r.pathErr = g.FindPath(ctx, "grimjaw", "vault-key", 1)
		r.pending = must[[]memory.Relationship](t)(g.PendingFacts(ctx, memory.FactFilter{}))
		r.changes = changesSince(t, c, 0, 1000)
		if _, err := c.LoadGraph(ctx, func(e postgres.GraphEdge) error {
			if e.Kind == postgres.EdgeFact {
				r.graphFacts = append(r.graphFacts, e.FactID)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return r
	}
	changedFact := func(ch []postgres.Change, id int64) bool {
		return slices.ContainsFunc(ch, func(c postgres.Change) bool { return c.Kind == "fact" && c.Ref == jsonNum(id) })
	}

	t.Run("dm", func(t *testing.T) {
		r := read(t, mustAs(t, base, memory.DMViewer()))
		if r.entity.Attributes["gm_notes"] == nil || r.fact != nil || !slices.Contains(r.graphFacts, forged.ID) ||
			!changedFact(r.changes, forged.ID) {
			t.Fatalf("the DM must see everything: %+v fact err %v", r.entity.Attributes, r.fact)
		}
	})
	for _, tc := range []struct {
		name      string
		viewer    memory.Viewer
		seesFact  bool
		ownSecret string // an entity whose secret_knowledge this viewer sees
	}{
		{name: "player", viewer: memory.PlayerViewer()},
		{name: "npc not in the secret", viewer: memory.NPCViewer("tower")},
		{name: "npc listed in known_by", viewer: memory.NPCViewer("elara"), seesFact: true, ownSecret: "elara"},
		{name: "npc at an end", viewer: memory.NPCViewer("grimjaw"), seesFact: true, ownSecret: "grimjaw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := read(t, mustAs(t, base, tc.viewer))
			want := map[string]any{"material": "iron", "history": map[string]any{"maker": "unknown"}}
			if !reflect.DeepEqual(r.entity.Attributes, want) {
				t.Errorf("vault key attributes = %v, want %v", r.entity.Attributes, want)
			}
			for _, e := range r.entities {
				_, has := e.Attributes[memory.AttrSecretKnowledge]
				if has != (e.ID == tc.ownSecret) {
					t.Errorf("%s secret_knowledge shown = %v", e.ID, has)
				}
			}
			hasFact := func(id int64) bool { return id == forged.ID }
			seen := map[string]bool{
				"Relationships": slices.ContainsFunc(r.rels, func(x memory.Relationship) bool { return hasFact(x.ID) }),
				"FindFacts":     slices.ContainsFunc(r.facts, func(x postgres.FactWithNames) bool { return hasFact(x.ID) }),
				"Fact":          r.fact == nil,
				"Neighbors":     slices.ContainsFunc(r.neighbors, func(n memory.Neighbor) bool { return n.Entity.ID == "grimjaw" }),
				"FindPath":      r.pathErr == nil,
				"LoadGraph":     slices.Contains(r.graphFacts, forged.ID),
				"ChangesSince":  changedFact(r.changes, forged.ID),
			}
			for path, got := range seen {
				if got != tc.seesFact {
					t.Errorf("%s shows the secret fact: %v, want %v", path, got, tc.seesFact)
				}
			}
			if !tc.seesFact && !errors.Is(r.fact, memory.ErrNotFound) {
				t.Errorf("Fact of a hidden fact: %v, want not found", r.fact)
			}
			for _, x := range r.rels {
				if _, ok := x.Attributes[memory.AttrKnownBy]; ok {
					t.Errorf("fact %d shows known_by to %s", x.ID, tc.viewer)
				}
			}
			if tc.seesFact {
				for _, x := range r.rels {
					if x.ID == forged.ID && x.Attributes[memory.AttrSecret] != true {
						t.Errorf("a secret fact the NPC may see lost its secret marker: %v", x.Attributes)
					}
				}
			}
			if l := leaks(struct {
				E  memory.Entity
				Es []memory.Entity
				N  []memory.Neighbor
			}{r.entity, r.entities, r.neighbors}); len(l) > 0 && !tc.seesFact {
				t.Errorf("secrets leak to %s: %v", tc.viewer, l)
			}
		})
	}
}

func jsonNum(id int64) string { b, _ := json.Marshal(id); return string(b) }

func TestViewerRefusesNoRole(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	for _, v := range []memory.Viewer{{}, {Role: memory.RoleNPC}, {Role: memory.RolePlayer, NPCID: "x"}, memory.NPCViewer("a\x00b")} {
		if _, err := c.As(v); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("As(%+v) = %v, want ErrInvalid", v, err)
		}
	}
	p := mustAs(t, c, memory.PlayerViewer())
	if _, err := p.Graph().Conflicts(ctxT(t)); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player listing conflicts: %v, want ErrForbidden", err)
	}
}

// An NPC id with a quote is quoted, not run.
func TestViewerQuotesNPCID(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	ctx := ctxT(t)
	check(t, c.Graph().UpsertEntity(ctx, memory.Entity{ID: "o'brien'); DROP TABLE entities; --", Type: "npc", Name: "O'Brien",
		Attributes: map[string]any{memory.AttrSecretKnowledge: "mine"}}))
	v := mustAs(t, c, memory.NPCViewer("o'brien'); DROP TABLE entities; --"))
	e := must[memory.Entity](t)(v.Graph().Entity(ctx, "o'brien'); DROP TABLE entities; --"))
	if e.Attributes[memory.AttrSecretKnowledge] != "mine" {
		t.Fatalf("the NPC does not see its own secret: %v", e.Attributes)
	}
	if n := len(must[[]memory.Entity](t)(v.Graph().FindEntities(ctx, memory.EntityFilter{}))); n != 8 {
		t.Fatalf("%d entities, want 8", n)
	}
}

// The SQL definition of secrecy (migration 0010) and the Go one
// (memory.PublicValue) agree.
func TestSecrecyAgreesWithGo(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	for _, in := range []string{
		`{}`, `{"a": 1}`, `{"secret": true}`, `{"secret": false, "x": 1}`, `{"secret": "true"}`,
		`{"Secret_Plan": 1, "SECRET": 2, "gm_notes": 3, "GM_x": 4, "dm_y": 5, "dm": 6, "gm": 7, "known_by": ["a"], "hiddenX": 8, "notes_dm": 9, "notes": 10}`,
		`{"list": [1, {"secret": true}, {"a": {"secret_k": 1, "b": null}}, null], "n": null}`,
		`{"deep": {"deeper": {"secret": true}}, "keep": {"secret": false}}`,
		`{" secret": 1, "secretive": 2, "ſecret": 3, "ＳＥＣＲＥＴ": 4}`,
	} {
		var v map[string]any
		check(t, json.Unmarshal([]byte(in), &v))
		wantB, _ := json.Marshal(memory.PublicAttributes(v))
		var got []byte
		check(t, s.Pool().QueryRow(ctx, `SELECT glyphoxa_public_attributes($1::jsonb)`, in).Scan(&got))
		var g, w any
		check(t, json.Unmarshal(got, &g))
		check(t, json.Unmarshal(wantB, &w))
		if !reflect.DeepEqual(g, w) {
			t.Errorf("%s: SQL %s, Go %s", in, got, wantB)
		}
	}
}

// The NPC paths (identity snapshot, visible subgraph, neighbours, GraphRAG
// entities) use the same definition of secrecy: another entity comes with
// its public attributes only (no secret_plan, gm_notes, hidden_*, nested
// secret objects), the NPC itself with all of them.
func TestNPCPathsStripEverySecretAttribute(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	seedSecrets(t, c)
	ctx := ctxT(t)
	check(t, c.Graph().UpsertEntity(ctx, memory.Entity{ID: "grimjaw", Type: memory.EntityNPC, Name: "Grimjaw",
		Attributes: map[string]any{"occupation": "blacksmith", "secret_plan": "flee at dawn"}}))
	public := map[string]any{"material": "iron", "history": map[string]any{"maker": "unknown"}}

	id := must[memory.NPCIdentity](t)(c.Graph().IdentitySnapshot(ctx, "grimjaw"))
	if id.Entity.Attributes["secret_plan"] != "flee at dawn" {
		t.Errorf("the NPC lost its own secret: %v", id.Entity.Attributes)
	}
	found := false
	for _, e := range id.RelatedEntities {
		if e.ID == "vault-key" {
			found = true
			if !reflect.DeepEqual(e.Attributes, public) {
				t.Errorf("identity snapshot: the vault key comes with %v, want %v", e.Attributes, public)
			}
		}
	}
	if !found {
		t.Fatal("the vault key is not related to Grimjaw, so the test proves nothing")
	}
	ents, _, err := c.Graph().VisibleSubgraph(ctx, "elara", memory.VisibilityScope{RelTypes: []string{"FORGED", "KNOWS"}, MaxDepth: 2})
	check(t, err)
	sawKey := false
	for _, e := range ents {
		sawKey = sawKey || e.ID == "vault-key"
		if e.ID == "vault-key" && !reflect.DeepEqual(e.Attributes, public) {
			t.Errorf("visible subgraph: the vault key comes with %v", e.Attributes)
		}
		if e.ID == "grimjaw" && e.Attributes["secret_plan"] != nil {
			t.Errorf("visible subgraph: Elara sees Grimjaw's plan: %v", e.Attributes)
		}
	}
	if !sawKey {
		t.Error("Elara (in known_by) does not see the vault key, so the test proves nothing")
	}
	for _, n := range must[[]memory.Neighbor](t)(c.Graph().Neighbors(ctx, "elara", 2, memory.TraversalOpts{})) {
		if n.Entity.ID == "grimjaw" && n.Entity.Attributes["secret_plan"] != nil {
			t.Errorf("neighbours: Elara sees Grimjaw's plan")
		}
	}
}
