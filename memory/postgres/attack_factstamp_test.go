package postgres_test

import (
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// factView is what one reader reads of a campaign's two facts about
// grimjaw: the stamp of the first one written (older), and the order of
// the facts (by id) in each of the lists that show them newest first.
type factView struct {
	stamp time.Time
	lists map[string][]int64
}

// readFactView reads the view of the facts through c's graph.
func readFactView(t *testing.T, c *postgres.Campaign, older int64) factView {
	t.Helper()
	ctx := ctxT(t)
	g := c.Graph()
	v := factView{lists: map[string][]int64{}}
	v.stamp = must[memory.Relationship](t)(g.Fact(ctx, older)).UpdatedAt
	for name, q := range map[string]postgres.FactQuery{
		"FindFacts":           {},
		"FindFacts by end":    {EntityIDs: []string{"grimjaw"}},
		"FindFacts by type":   {Types: []string{"KNOWS"}},
		"FindFacts by text":   {Text: "grimjaw"},
		"FindFacts by id":     {IDs: []int64{older, older + 1}},
		"FindFacts by status": {Statuses: []memory.FactStatus{memory.StatusActive}},
	} {
		facts := must[[]postgres.FactWithNames](t)(g.FindFacts(ctx, q))
		for _, f := range facts {
			v.lists[name] = append(v.lists[name], f.ID)
			if f.ID == older && !f.UpdatedAt.Equal(v.stamp) {
				t.Errorf("%s stamps fact %d %s, Fact %s", name, f.ID, f.UpdatedAt, v.stamp)
			}
		}
	}
	rels := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))
	for _, r := range rels {
		v.lists["Relationships"] = append(v.lists["Relationships"], r.ID)
		if r.ID == older && !r.UpdatedAt.Equal(v.stamp) {
			t.Errorf("Relationships stamps fact %d %s, Fact %s", r.ID, r.UpdatedAt, v.stamp)
		}
	}
	each := must[[][]memory.Relationship](t)(g.RelationshipsOfEach(ctx, []string{"grimjaw"}, memory.TraversalOpts{}))
	for _, r := range each[0] {
		v.lists["RelationshipsOfEach"] = append(v.lists["RelationshipsOfEach"], r.ID)
	}
	types := must[[][]postgres.FactType](t)(g.FactTypesOfEach(ctx, []string{"grimjaw"}, memory.TraversalOpts{}))
	for _, f := range types[0] {
		v.lists["FactTypesOfEach"] = append(v.lists["FactTypesOfEach"], f.ID)
	}
	return v
}

// TestAttackFactOrderTellsOfADMNoteEdit: the DM writes a note players may
// not read (dm_notes) on a fact every player reads, and changes nothing a
// player sees of it. The change feeds leave the edit out (migration 0048),
// but every list of facts a player reads (FindFacts: MCP read_graph, the
// console's and Discord's lists; Relationships and RelationshipsOfEach)
// put the fact first, newest by its updated_at, and the fact's updated_at
// a player reads moved to the edit's time: the player learned that, and
// when, the DM wrote a secret note on it. A player reads and orders by the
// time of the last change they can see; the DM by the real one.
func TestAttackFactOrderTellsOfADMNoteEdit(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	g := camp.Graph()
	for _, e := range []memory.Entity{{ID: "grimjaw", Type: "npc", Name: "Grimjaw"},
		{ID: "ironhold", Type: "place", Name: "Ironhold"}, {ID: "lyra", Type: "npc", Name: "Lyra"}} {
		check(t, g.UpsertEntity(ctx, e))
	}
	fact := func(target string) memory.Relationship {
		return memory.Relationship{SourceID: "grimjaw", TargetID: target, Type: "KNOWS",
			Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}
	}
	older := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), fact("ironhold"), "")).Fact
	newer := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), fact("lyra"), "")).Fact
	if newer.ID != older.ID+1 {
		t.Fatalf("fact ids %d, %d: want consecutive", older.ID, newer.ID)
	}
	player := must[*postgres.Campaign](t)(camp.As(memory.PlayerViewer()))
	dm := must[*postgres.Campaign](t)(camp.As(memory.DMViewer()))
	seen, dmSeen := readFactView(t, player, older.ID), readFactView(t, dm, older.ID)
	for name, ids := range seen.lists {
		if len(ids) != 2 || ids[0] != newer.ID {
			t.Fatalf("the player's %s lists %v before any edit, want %d first of two", name, ids, newer.ID)
		}
	}

	// The DM writes a note only the DM reads on the older fact.
	noted := fact("ironhold")
	noted.Attributes = map[string]any{"dm_notes": "he owes the guild, not the smith"}
	if w := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), noted, "")); w.Fact.ID != older.ID {
		t.Fatalf("the note made fact %d, want it on %d", w.Fact.ID, older.ID)
	}
	got, dmGot := readFactView(t, player, older.ID), readFactView(t, dm, older.ID)
	if !got.stamp.Equal(seen.stamp) {
		t.Errorf("LEAK: the player reads the fact updated %s after the DM only wrote a DM note on it (%s before)", got.stamp, seen.stamp)
	}
	for name, ids := range got.lists {
		if len(ids) != 2 || ids[0] != newer.ID {
			t.Errorf("LEAK: the player's %s lists %v after the DM only wrote a DM note on fact %d (%v before)",
				name, ids, older.ID, seen.lists[name])
		}
	}
	// The DM (and the server's caches) read the real time and order.
	if !dmGot.stamp.After(dmSeen.stamp) {
		t.Errorf("the DM reads the fact updated %s after the DM's note, %s before: it must move", dmGot.stamp, dmSeen.stamp)
	}
	for name, ids := range dmGot.lists {
		if len(ids) != 2 || ids[0] != older.ID {
			t.Errorf("the DM's %s lists %v after the DM's note on fact %d, want it first", name, ids, older.ID)
		}
	}

	// A change the player reads moves the player's stamp and order.
	public := fact("ironhold")
	public.Attributes = map[string]any{"since": "the flood"}
	must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), public, ""))
	got = readFactView(t, player, older.ID)
	if !got.stamp.After(seen.stamp) {
		t.Errorf("the player reads the fact updated %s after a public attribute changed (%s before)", got.stamp, seen.stamp)
	}
	for name, ids := range got.lists {
		if len(ids) != 2 || ids[0] != older.ID {
			t.Errorf("the player's %s lists %v after a public attribute of fact %d changed, want it first", name, ids, older.ID)
		}
	}
}
