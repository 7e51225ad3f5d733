package bundle_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// playerStamps is what a player reads of grimjaw's and of fact's last
// change in c.
func playerStamps(t *testing.T, c *postgres.Campaign, fact memory.Relationship) (entity, f time.Time) {
	t.Helper()
	ctx := context.Background()
	pc := must[*postgres.Campaign](t)(c.As(memory.PlayerViewer()))
	entity = must[memory.Entity](t)(pc.Graph().Entity(ctx, "grimjaw")).UpdatedAt
	for _, x := range playerFacts(t, pc) {
		if x.SourceID == fact.SourceID && x.TargetID == fact.TargetID && x.Type == fact.Type {
			return entity, x.UpdatedAt
		}
	}
	t.Fatalf("the player of %s reads no fact %s -%s-> %s", c.ID(), fact.SourceID, fact.Type, fact.TargetID)
	return entity, f
}

// TestAttackBundleImportStampsTellOfDMNotes: the DM writes notes players
// may not read on an entity and on a fact, and moves the campaign to
// another server with a bundle. The players' stamps of the entity and the
// fact (public_updated_at, migrations 0046 and 0050) did not move with the
// notes, and the bundle carries them; but the import set them to
// updated_at, the time of the DM's notes, so on the new server players
// read when the DM last wrote a secret note (and their fact lists put
// that fact first).
func TestAttackBundleImportStampsTellOfDMNotes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, dims)
	orig := pgtest.Import(t, s, sample)
	g := orig.Graph()
	var fact memory.Relationship
	for _, f := range playerFacts(t, must[*postgres.Campaign](t)(orig.As(memory.PlayerViewer()))) {
		if f.Status == memory.StatusActive {
			fact = f.Relationship
			break
		}
	}
	if fact.ID == 0 {
		t.Fatal("the sample has no fact a player reads")
	}
	if _, err := g.UpdateEntity(ctx, "grimjaw", memory.EntityUpdate{SetAttributes: map[string]any{
		"dm_notes": "he sold the key twice"}}); err != nil {
		t.Fatal(err)
	}
	noted := memory.Relationship{SourceID: fact.SourceID, TargetID: fact.TargetID, Type: fact.Type,
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}
	// The DM confirms the fact first (a change players read): the note is
	// then the only change.
	must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), noted, ""))
	noted.Attributes = map[string]any{"dm_notes": "not what it seems"}
	if w := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), noted, "")); w.Fact.ID != fact.ID {
		t.Fatalf("the note made fact %d, want it on %d", w.Fact.ID, fact.ID)
	}
	wantEntity, wantFact := playerStamps(t, orig, fact)
	var b bytes.Buffer
	must[bundle.Counts](t)(bundle.Export(ctx, s.Pool(), campaign, &b, now))
	must[bundle.Result](t)(bundle.Import(ctx, s.Pool(), "ironhold-copy", &b))
	gotEntity, gotFact := playerStamps(t, pgtest.Campaign(t, s, "ironhold-copy"), fact)
	if !gotEntity.Equal(wantEntity) {
		t.Errorf("LEAK: the copy's player reads grimjaw updated %s, the original's %s (before the DM's note)", gotEntity, wantEntity)
	}
	if !gotFact.Equal(wantFact) {
		t.Errorf("LEAK: the copy's player reads the fact updated %s, the original's %s (before the DM's note)", gotFact, wantFact)
	}
}
