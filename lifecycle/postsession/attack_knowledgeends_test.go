package postsession_test

import (
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestAttackKnowledgeNamesSceneEntity attacks what a character knows
// (Campaign.KnowledgeOf: the console's "My character" page, `/recap
// for:me`) with the inferred fact of TestAttackInferredFactRevealsSceneEntity:
// with the party together Hadrik would not name his buyer, and the
// extractor, handed the known entities, resolved "a rich lady" to the
// Veiled Abbess, a name said only in Thorin's split scene. Every graph read
// hides the fact from Mira with its end (view.endsVisibleSQL); the facts
// revealed in her character's presence must too, even once the DM
// confirms the fact (a fact the DM writes about such an entity is hidden
// with it).
func TestAttackKnowledgeNamesSceneEntity(t *testing.T) {
	t.Parallel()
	a := newSceneAttack(t, "knowledge-ends")
	if err := a.camp.Graph().UpsertEntity(a.ctx, memory.Entity{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"}); err != nil {
		t.Fatal(err)
	}
	a.scene("mira", "hadrik", "The Veiled Abbess buys every crown I forge.",
		postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Veiled Abbess", Type: "npc"}}})
	a.party("mira", []said{{"mira", "Hadrik, who buys all your crowns?"}, {"hadrik", "A rich lady, and that is all I will say."}},
		postsession.Extraction{Relationships: []postsession.ExtractedRelationship{{Source: "Hadrik", Type: "SELLS_TO",
			Target: "Veiled Abbess", Evidence: "A rich lady, and that is all I will say.", Confidence: 0.9, Basis: "inferred"}}})
	// The DM confirms whatever waits for review: canon now.
	pend, err := a.camp.Graph().PendingFacts(a.ctx, memory.FactFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range pend {
		if _, err := a.camp.Graph().ConfirmFact(a.ctx, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	if es := a.sees("mira", "Abbess"); len(es) != 0 {
		t.Fatalf("Mira's graph already shows %v: the attack proves nothing", es)
	}
	canon, err := a.camp.Graph().FindFacts(a.ctx, postgres.FactQuery{Types: []string{"SELLS_TO"}, Statuses: []memory.FactStatus{memory.StatusActive}})
	if err != nil || len(canon) != 1 {
		t.Fatalf("the inferred fact is not canon (%v): %+v", err, canon)
	}
	mira, err := a.camp.As(memory.PlayerViewerOf("mira"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := mira.KnowledgeOf(a.ctx, "mira", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range k.Facts {
		if strings.Contains(f.Source+" "+f.Target, "Abbess") {
			t.Errorf("LEAK to Mira: her character's knowledge lists %q %s %q; the Veiled Abbess was named only in Thorin's scene", f.Source, f.Rel, f.Target)
		}
	}
}
