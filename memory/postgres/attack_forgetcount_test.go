package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

// TestAttackForgetMeCountsSecretFacts attacks the report of /privacy
// forget-me as a count oracle. Lyra says two things at the table;
// extraction rests a fact on each line, and the DM makes one of them
// secret. Lyra asks to be forgotten through her own handle: both facts go
// (they rested only on her lines), and the reply she reads counted both,
// telling her that a fact she could not read existed. The report counts
// for her only the facts she could read; the others are counted apart, for
// the DM's logs.
func TestAttackForgetMeCountsSecretFacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t, memory.Entity{ID: "old-well", Type: memory.EntityLocation, Name: "Old Well"},
		memory.Entity{ID: "crown", Type: memory.EntityItem, Name: "Crown"})
	public := sessionLine(t, w.sl, "lyra", "The crown is heavier than it looks.", w.t0.Add(10*time.Second))
	said := sessionLine(t, w.sl, "lyra", "I think the crown came from the old well.", w.t0.Add(20*time.Second))
	for _, f := range []struct {
		rel    string
		line   int64
		secret bool
	}{{"IS_HEAVY", public, false}, {"CAME_FROM", said, true}} {
		attrs := map[string]any{}
		if f.secret {
			attrs["secret"] = true
		}
		if _, _, err := w.g.RecordFactOn(ctx, memory.Relationship{SourceID: "crown", TargetID: "old-well", Type: f.rel, Attributes: attrs,
			Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.9, Source: memory.SourceStated}}, []int64{f.line}); err != nil {
			t.Fatal(err)
		}
	}
	if fs := crownAsLyra(ctx, t, w)(); len(fs) != 1 {
		t.Fatalf("Lyra reads %d facts about the crown before forget-me, want the public one: %+v", len(fs), fs)
	}
	lyra, err := w.camp.As(memory.PlayerViewerOf("lyra"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := lyra.ForgetSpeaker(ctx, "lyra")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Facts != 1 {
		t.Errorf("LEAK: Lyra's forget-me report counts %d deleted facts; she could read 1 (the other is the DM's secret)", rep.Facts)
	}
	if rep.HiddenFacts != 1 {
		t.Errorf("the report counts %d deleted facts Lyra could not read, want 1 (for the DM's logs)", rep.HiddenFacts)
	}
	if fs := crownAsLyra(ctx, t, w)(); len(fs) != 0 {
		t.Errorf("facts resting only on Lyra's lines are still there: %+v", fs)
	}
}
