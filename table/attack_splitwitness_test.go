package table_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestAttackSplitSceneWithoutNPCsIsHeardByEveryNPC attacks the split
// scene through the NPCs' witness logs. The DM takes Thorin aside
// (/npc scene players:@Thorin) without putting any NPC in the scene, and
// Thorin talks to Grimjaw there. Every NPC of the campaign was taken to
// witness the scene's lines (no NPC named: "every NPC is there"), so once
// the party is together again Brannoc, Elara or Vexa retell to the
// players who were not there what was said in it (their history, the
// lines said before them, their digest). While the party is split with no
// NPC named, an NPC hears the lines said to it and its own, no others.
func TestAttackSplitSceneWithoutNPCsIsHeardByEveryNPC(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	controls := live.NewControls()
	// Split well before the line (see TestNoAnswerFromASplitSceneToAPlayerOutsideIt).
	controls.UseClock(func() time.Time { return time.Now().Add(-time.Hour) })
	controls.SetScene(live.Scene{Players: []string{player}, By: "the-dm"})
	r := newRigWith(t, 0, nil, func(c *table.Config) { c.Controls = controls })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-r.reports:
		if l.Addressee != "grimjaw" || l.Reply == "" {
			t.Fatalf("Thorin's line in the scene: addressee %q, reply %q: Grimjaw did not answer, the attack proves nothing", l.Addressee, l.Reply)
		}
	case <-ctx.Done():
		t.Fatal("no report of the line")
	}
	if got := r.s.Witness().Lines("grimjaw"); len(got) != 2 {
		t.Errorf("Grimjaw witnessed %d lines, want Thorin's and his own reply: %+v", len(got), got)
	}
	for _, id := range []string{"brannoc", "elara", "vexa"} {
		for _, e := range r.s.Witness().Lines(id) {
			t.Errorf("LEAK: %s, in no scene, witnessed the split scene's line %q (%s)", id, e.Text, e.SpeakerName)
		}
	}
}
