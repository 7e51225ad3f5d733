package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestEntityID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, want string }{
		{"Old Mill Tower", "old-mill-tower"},
		{"  Smiths' Guild ", "smiths-guild"},
		{"Zoë-Ann", "zoë-ann"},
		{"!!!", ""},
	} {
		if got := postgres.EntityID(tc.name); got != tc.want {
			t.Errorf("EntityID(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAddEntity(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()
	before := must[int64](t)(c.LastChange(ctx))

	e := must[memory.Entity](t)(g.AddEntity(ctx, memory.Entity{Name: "Old Mill Tower", Type: " Location ",
		Aliases:    []string{"the mill", " ", "Old Mill Tower", "The Mill"},
		Attributes: map[string]any{"description": "a ruin by the river", "dm_notes": "the cult meets here"}}))
	if e.ID != "old-mill-tower" || e.Type != "location" || !slices.Equal(e.Aliases, []string{"the mill"}) {
		t.Fatalf("stored %+v", e)
	}
	// Found by name and alias; the change log has it.
	found := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{Name: "mill"}))
	if len(found) != 1 || found[0].ID != e.ID {
		t.Fatalf("find by alias: %+v", found)
	}
	chs := changesSince(t, c, before, 0)
	if len(chs) != 1 || chs[0].Kind != "entity" || chs[0].Ref != e.ID || chs[0].Op != "insert" {
		t.Fatalf("changes %+v", chs)
	}
	// The DM-only note is a secret the store already hides from players.
	player := must[*postgres.Campaign](t)(c.As(memory.PlayerViewer()))
	pe := must[memory.Entity](t)(player.Graph().Entity(ctx, e.ID))
	if _, ok := pe.Attributes["dm_notes"]; ok || pe.Attributes["description"] == nil {
		t.Fatalf("a player reads %+v", pe.Attributes)
	}

	for _, tc := range []struct {
		name string
		e    memory.Entity
		err  error
	}{
		{"taken id", memory.Entity{ID: "grimjaw", Name: "Other", Type: "npc"}, memory.ErrInvalid},
		{"taken name", memory.Entity{Name: "grimjaw", Type: "npc"}, memory.ErrInvalid},
		{"name is an alias", memory.Entity{Name: "Grim", Type: "npc"}, memory.ErrInvalid},
		{"alias is a name", memory.Entity{Name: "Someone", Aliases: []string{"Elara"}, Type: "npc"}, memory.ErrInvalid},
		{"no name", memory.Entity{Type: "npc"}, memory.ErrInvalid},
		{"no kind", memory.Entity{Name: "Nobody"}, memory.ErrInvalid},
	} {
		if _, err := g.AddEntity(ctx, tc.e); !errors.Is(err, tc.err) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.err)
		}
	}
	// A player's handle is refused, and nothing was written.
	if _, err := player.Graph().AddEntity(ctx, memory.Entity{Name: "Sneaky", Type: "npc"}); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("a player added an entity: %v", err)
	}
	if _, err := g.Entity(ctx, "sneaky"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("the refused entity exists: %v", err)
	}
}

func TestMergeEntities(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()
	// "Grimm the smith" was extracted as an entity of its own: it repeats
	// one of Grimjaw's facts, adds a new one, points at Grimjaw, and is
	// mentioned in a chunk and speaks a line.
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "grimm", Type: memory.EntityNPC, Name: "Grimm the Smith",
		Aliases: []string{"Smith", "Grim"}, Attributes: map[string]any{"occupation": "smith", "beard": "red"}}))
	p := memory.Provenance{SessionID: "s2", Timestamp: t0, Confidence: 0.9, Source: memory.SourceStated}
	dup := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimm", TargetID: "ironhold", Type: "LOCATED_AT", Provenance: p}))
	newFact := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "grimm", Type: "TRUSTS", Provenance: p}))
	loop := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimm", TargetID: "grimjaw", Type: "SAME_AS", Provenance: p}))
	must[int](t)(c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
		entry("s2", "u1", "Grimm, where is the hammer?", time.Minute),
		{SessionID: "s2", SpeakerID: "grimm", SpeakerName: "Grimm", NPCID: "grimm", Text: "In the forge.", At: t0.Add(2 * time.Minute), IdempotencyKey: "s2/grimm"},
	}))
	es := must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctx, "s2"))
	check(t, g.AddEvidence(ctx, dup.ID, []int64{es[0].ID}))
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "c1", SessionID: "s2", Content: "Grimm, where is the hammer?", EntityIDs: []string{"grimm"}, StartAt: t0},
		{ID: "c2", SessionID: "s2", Content: "Grimm and Grimjaw", EntityIDs: []string{"grimm", "grimjaw"}, StartAt: t0},
	}))
	kept := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))
	var keptID int64
	for _, r := range kept {
		if r.Type == "LOCATED_AT" {
			keptID = r.ID
		}
	}
	before := must[int64](t)(c.LastChange(ctx))

	m := must[postgres.EntityMerge](t)(g.MergeEntities(ctx, "grimm", "grimjaw", "s3"))
	if !slices.Equal(m.FactsRetired, []int64{dup.ID, loop.ID}) || m.FactsMoved != 3 || m.Mentions != 1 || m.Lines != 1 {
		t.Fatalf("merge %+v", m)
	}
	if !slices.Equal(m.Into.Aliases, []string{"Grim", "Grimm the Smith", "Smith"}) ||
		m.Into.Attributes["occupation"] != "blacksmith" || m.Into.Attributes["beard"] != "red" {
		t.Fatalf("into %+v", m.Into)
	}
	if _, err := g.Entity(ctx, "grimm"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("the merged entity is still there: %v", err)
	}
	// The new fact now names Grimjaw; the repeated one is retired as of s3
	// and its evidence moved to the fact it repeated.
	if f := must[memory.Relationship](t)(g.Fact(ctx, newFact.ID)); f.TargetID != "grimjaw" || f.Status != memory.StatusActive {
		t.Fatalf("moved fact %+v", f)
	}
	if f := must[memory.Relationship](t)(g.Fact(ctx, dup.ID)); f.SourceID != "grimjaw" || f.Status != memory.StatusRetired || f.ValidUntilSession != "s3" {
		t.Fatalf("repeated fact %+v", f)
	}
	if ev := must[[]memory.TranscriptEntry](t)(g.Evidence(ctx, keptID)); len(ev) != 1 || ev[0].ID != es[0].ID {
		t.Fatalf("evidence of the kept fact: %+v", ev)
	}
	chunks := must[[]memory.Chunk](t)(c.Index().Chunks(ctx, "s2"))
	for _, ch := range chunks {
		if !slices.Equal(ch.EntityIDs, []string{"grimjaw"}) {
			t.Fatalf("chunk %s mentions %v", ch.ID, ch.EntityIDs)
		}
	}
	if es := must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctx, "s2")); es[1].NPCID != "grimjaw" || es[1].SpeakerID != "grimjaw" {
		t.Fatalf("NPC line %+v", es[1])
	}
	// Found by its old name; the change log has the deletion and the update.
	if found := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{Name: "grimm the"})); len(found) != 1 || found[0].ID != "grimjaw" {
		t.Fatalf("find by the merged name: %+v", found)
	}
	ops := map[string]bool{}
	for _, ch := range changesSince(t, c, before, 0) {
		ops[ch.Kind+":"+ch.Ref+":"+ch.Op] = true
	}
	for _, want := range []string{"entity:grimm:delete", "entity:grimjaw:update", "fact:" + strconv.FormatInt(newFact.ID, 10) + ":update"} {
		if !ops[want] {
			t.Errorf("change log lacks %s: %v", want, ops)
		}
	}
	for _, tc := range []struct {
		from, into string
		err        error
	}{
		{"grimjaw", "grimjaw", memory.ErrInvalid},
		{"nobody", "grimjaw", memory.ErrNotFound},
		{"elara", "nobody", memory.ErrNotFound},
	} {
		if _, err := g.MergeEntities(ctx, tc.from, tc.into, ""); !errors.Is(err, tc.err) {
			t.Errorf("merge %s into %s: err = %v, want %v", tc.from, tc.into, err, tc.err)
		}
	}
	npc := must[*postgres.Campaign](t)(c.As(memory.NPCViewer("elara")))
	if _, err := npc.Graph().MergeEntities(ctx, "tower", "vault", ""); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("an NPC merged: %v", err)
	}
}

func TestRetireEntity(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()
	check(t, c.Sessions().StartSession(ctx, "s1", t0))
	check(t, c.Sessions().StartSession(ctx, "s4", t0.Add(72*time.Hour)))
	before := must[int64](t)(c.LastChange(ctx))
	r := must[postgres.EntityRetirement](t)(g.RetireEntity(ctx, "hammer", "s4", "melted down"))
	if len(r.Facts) != 1 || r.Session != "s4" || r.Reason != "melted down" || r.At.IsZero() {
		t.Fatalf("retirement %+v", r)
	}
	if f := must[memory.Relationship](t)(g.Fact(ctx, r.Facts[0])); f.Status != memory.StatusRetired || f.ValidUntilSession != "s4" {
		t.Fatalf("the hammer's fact %+v", f)
	}
	// "As of" an earlier session still sees it.
	if held := must[[]memory.Relationship](t)(g.FactsAsOf(ctx, "hammer", "s1")); len(held) != 1 {
		t.Fatalf("as of s1: %+v", held)
	}
	if found := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{Name: "hammer"})); len(found) != 0 {
		t.Fatalf("a retired entity is in the name list: %+v", found)
	}
	if found := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{Name: "hammer", IncludeRetired: true})); len(found) != 1 {
		t.Fatalf("asked for retired entities: %+v", found)
	}
	if found := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{IDs: []string{"hammer"}})); len(found) != 0 {
		t.Fatalf("a retired entity found by id: %+v", found)
	}
	if found := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{IDs: []string{"hammer"}, IncludeRetired: true})); len(found) != 1 {
		t.Fatalf("by id, retired ones asked for: %+v", found)
	}
	got, retired := mustRetirement(t, g, "hammer")
	if !retired || got.Reason != "melted down" || got.Session != "s4" {
		t.Fatalf("Retirement = %+v, %v", got, retired)
	}
	if _, retired := mustRetirement(t, g, "grimjaw"); retired {
		t.Fatal("grimjaw reads as retired")
	}
	if _, err := g.RetireEntity(ctx, "hammer", "", ""); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("retired twice: %v", err)
	}
	if _, err := g.RetireEntity(ctx, "nobody", "", ""); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("retired a missing entity: %v", err)
	}
	ops := map[string]bool{}
	for _, ch := range changesSince(t, c, before, 0) {
		ops[ch.Kind+":"+ch.Ref+":"+ch.Op] = true
	}
	if !ops["entity:hammer:update"] || !ops["fact:"+strconv.FormatInt(r.Facts[0], 10)+":update"] {
		t.Fatalf("change log %v", ops)
	}
	player := must[*postgres.Campaign](t)(c.As(memory.PlayerViewer()))
	if _, err := player.Graph().RetireEntity(ctx, "tower", "", ""); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("a player retired: %v", err)
	}
	kinds := must[[]postgres.EntityKind](t)(g.EntityKinds(ctx))
	if len(kinds) == 0 || kinds[0] != (postgres.EntityKind{Type: memory.EntityLocation, Count: 3}) {
		t.Fatalf("kinds %+v", kinds)
	}
}

func mustRetirement(t *testing.T, g *postgres.Graph, id string) (postgres.EntityRetirement, bool) {
	t.Helper()
	r, ok, err := g.RetiredEntity(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	return r, ok
}

// changesSince is c's change log after cursor, at most limit (0: 500).
func changesSince(t *testing.T, c *postgres.Campaign, cursor int64, limit int) []postgres.Change {
	t.Helper()
	chs, _, err := c.ChangesSince(context.Background(), cursor, "", limit)
	if err != nil {
		t.Fatal(err)
	}
	return chs
}
