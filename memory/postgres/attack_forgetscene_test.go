package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestAttackForgetMeOpensASplitSceneCorrection attacks the split-scene
// secrecy of facts through /privacy forget-me. Thorin, alone in a split
// scene, tells Hadrik where he hid the crown; extraction rests the fact on
// his line, so Lyra (outside the scene) does not read it. The DM corrects
// the fact ("Save and confirm": ReplaceFact writes DM canon with a reason,
// "corrects fact N", and the same evidence). Thorin then asks to be
// forgotten: his lines go, and with them the correction's evidence; the
// DM's own fact stays (it has a dm_reason), now resting on no line, and a
// fact resting on no line is one every player reads (view.factRevealed).
// Lyra learns what was said in a scene she was not in.
func TestAttackForgetMeOpensASplitSceneCorrection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t, memory.Entity{ID: "old-well", Type: memory.EntityLocation, Name: "Old Well"},
		memory.Entity{ID: "crown", Type: memory.EntityItem, Name: "Crown"})
	line := sessionLine(t, w.sl, "thorin", "I hid the crown at the bottom of the old well.", w.t0.Add(2*time.Minute))
	f, _, err := w.g.RecordFactOn(ctx, memory.Relationship{SourceID: "crown", TargetID: "old-well", Type: "HIDDEN_IN",
		Attributes: map[string]any{"evidence": "I hid the crown at the bottom of the old well."},
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceStated}}, []int64{line})
	if err != nil {
		t.Fatal(err)
	}
	reads := crownAsLyra(ctx, t, w)
	if fs := reads(); len(fs) != 0 {
		t.Fatalf("Lyra reads the split scene's fact before anything: the attack proves nothing: %+v", fs)
	}
	// The DM corrects the fact's relation.
	corrected := f
	corrected.ID, corrected.Type = 0, "SUNK_IN"
	if _, err := w.g.ReplaceFact(ctx, f.ID, corrected); err != nil {
		t.Fatal(err)
	}
	if fs := reads(); len(fs) != 0 {
		t.Fatalf("Lyra reads the DM's correction of the split scene's fact: %+v", fs)
	}
	// Thorin asks to be forgotten.
	if _, err := w.camp.ForgetSpeaker(ctx, "thorin"); err != nil {
		t.Fatal(err)
	}
	for _, f := range reads() {
		t.Errorf("LEAK to Lyra: after Thorin was forgotten she reads %s %s %s (%v), said only in his split scene",
			f.SourceName, f.Type, f.TargetName, f.Attributes)
	}
}

// TestAttackForgetMeOpensASplitSceneFact is the same attack without the
// DM: extraction rests a fact drawn from a window of a split scene on
// every split line of the window when its quote names none (a
// paraphrase), here Thorin's line in the scene and Lyra's own line, said
// at the table outside it. Lyra may read her own line but not Thorin's,
// so the fact is hidden from her. When Thorin is forgotten the fact stays
// (it also rests on another speaker's line), now resting only on Lyra's
// line: she reads what Thorin told Hadrik alone.
func TestAttackForgetMeOpensASplitSceneFact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t, memory.Entity{ID: "old-well", Type: memory.EntityLocation, Name: "Old Well"},
		memory.Entity{ID: "crown", Type: memory.EntityItem, Name: "Crown"})
	scene := sessionLine(t, w.sl, "thorin", "I dropped it where nobody draws water any more.", w.t0.Add(2*time.Minute))
	outside := sessionLine(t, w.sl, "lyra", "Is anyone else hungry?", w.t0.Add(3*time.Minute))
	if _, _, err := w.g.RecordFactOn(ctx, memory.Relationship{SourceID: "crown", TargetID: "old-well", Type: "HIDDEN_IN",
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceInferred}}, []int64{scene, outside}); err != nil {
		t.Fatal(err)
	}
	reads := crownAsLyra(ctx, t, w)
	if fs := reads(); len(fs) != 0 {
		t.Fatalf("Lyra reads the split scene's fact before anything: the attack proves nothing: %+v", fs)
	}
	if _, err := w.camp.ForgetSpeaker(ctx, "thorin"); err != nil {
		t.Fatal(err)
	}
	for _, f := range reads() {
		t.Errorf("LEAK to Lyra: after Thorin was forgotten she reads %s %s %s, drawn from his split scene", f.SourceName, f.Type, f.TargetName)
	}
}

// crownAsLyra returns a read, as the player Lyra (outside Thorin's split
// scene), of the facts about the crown, active or retired.
func crownAsLyra(ctx context.Context, t *testing.T, w *goneWorld) func() []postgres.FactWithNames {
	t.Helper()
	lyra, err := w.camp.As(memory.PlayerViewerOf("lyra"))
	if err != nil {
		t.Fatal(err)
	}
	return func() []postgres.FactWithNames {
		t.Helper()
		fs, err := lyra.Graph().FindFacts(ctx, postgres.FactQuery{EntityIDs: []string{"crown"},
			Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusRetired}})
		if err != nil {
			t.Fatal(err)
		}
		return fs
	}
}
