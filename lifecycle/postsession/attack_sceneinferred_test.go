package postsession_test

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestAttackInferredFactRevealsSceneEntity attacks the entity secrecy of
// split scenes through a fact extraction draws from a public window about
// an entity first heard in a scene, without that window naming it: the
// extractor is handed the campaign's known entities (the hidden one
// among them) and resolves "a rich lady" to it. The fact rests on the
// public line it quotes, so every player reads it (factRevealed), and
// with it the entity (view.entityTraced: a fact they may see that has it
// as an end). Mira asked Hadrik, with the party together, who buys his
// crowns; he would not say. Yet afterwards Mira reads "Hadrik SELLS_TO
// Veiled Abbess", a name said only in Thorin's scene.
func TestAttackInferredFactRevealsSceneEntity(t *testing.T) {
	t.Parallel()
	a := newSceneAttack(t, "inferred")
	if err := a.camp.Graph().UpsertEntity(a.ctx, memory.Entity{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"}); err != nil {
		t.Fatal(err)
	}
	// Session 1: Thorin alone with Hadrik hears of the Veiled Abbess.
	a.scene("mira", "hadrik", "The Veiled Abbess buys every crown I forge.",
		postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Veiled Abbess", Type: "npc"}}})
	if es := a.sees("mira", "Abbess"); len(es) != 0 {
		t.Fatalf("after s1 Mira already sees %v: the attack proves nothing", es)
	}

	// Session 2, the party together: Hadrik will not name his buyer. The
	// extractor, handed the known entities, resolves "a rich lady".
	a.party("mira", []said{{"mira", "Hadrik, who buys all your crowns?"}, {"hadrik", "A rich lady, and that is all I will say."}},
		postsession.Extraction{Relationships: []postsession.ExtractedRelationship{{Source: "Hadrik", Type: "SELLS_TO",
			Target: "Veiled Abbess", Evidence: "A rich lady, and that is all I will say.", Confidence: 0.9, Basis: "inferred"}}})
	for _, e := range a.sees("mira", "Abbess") {
		t.Errorf("LEAK to Mira: after a public window that never names it, she reads %q (%s), first heard in Thorin's scene", e.Name, e.Type)
	}
}

// TestAttackEpithetRevealsSceneEntity attacks the same resolution with an
// epithet: the extractor, handed the known entities, lists the public
// window's "the rich lady" as an entity whose alias is the hidden one's
// name (a model that knows who she is). The resolver matches the alias,
// and namedIn takes the public line naming "the rich lady" (the name
// used) as a line naming the Veiled Abbess: every player now reads her
// name, though only an epithet was said with the party together.
func TestAttackEpithetRevealsSceneEntity(t *testing.T) {
	t.Parallel()
	a := newSceneAttack(t, "epithet")
	a.scene("mira", "hadrik", "The Veiled Abbess buys every crown I forge.",
		postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Veiled Abbess", Type: "npc"}}})
	if es := a.sees("mira", "Veiled"); len(es) != 0 {
		t.Fatalf("after s1 Mira already sees %v: the attack proves nothing", es)
	}
	a.party("mira", []said{{"hadrik", "The rich lady pays well, that is all I will say."}},
		postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "the rich lady", Type: "npc", Aliases: []string{"Veiled Abbess"}}}})
	for _, e := range a.sees("mira", "Veiled") {
		t.Errorf("LEAK to Mira: only \"the rich lady\" was said with the party together, yet she reads %q (%s), first heard in Thorin's scene", e.Name, e.Type)
	}
}
