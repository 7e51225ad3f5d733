package table_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestNoAnswerFromASplitSceneToAPlayerOutsideIt: while the DM has split
// the party, a player outside the scene who names one of its NPCs is not
// heard by it: the NPC does not answer (its answer would tell the table
// what the scene's NPC knows, and it would speak into the scene), the
// line is reported as said outside the scene, and the DM's "answers next"
// is kept for a line of the scene.
func TestNoAnswerFromASplitSceneToAPlayerOutsideIt(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	controls := live.NewControls()
	// The DM split the party well before the player spoke: the rig sends
	// the player's packets at once, so the line's start is taken from its
	// audio, seconds before it arrives, and a split timed now could
	// postdate it.
	controls.UseClock(func() time.Time { return time.Now().Add(-time.Hour) })
	controls.SetScene(live.Scene{Present: []string{"grimjaw"}, Players: []string{"someone-else"}, By: "the-dm"})
	controls.SetNext("grimjaw")
	r := newRigWith(t, 0, nil, func(c *table.Config) { c.Controls = controls })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var l table.LineReport
	select {
	case l = <-r.reports:
	case <-ctx.Done():
		t.Fatal("no report of the line")
	}
	if l.Addressee != "" || l.Reply != "" || l.Reason != table.ReasonOutsideScene {
		t.Fatalf("a line from outside the split scene: addressee %q, reply %q, reason %q; want no answer, reason %q",
			l.Addressee, l.Reply, l.Reason, table.ReasonOutsideScene)
	}
	r.voice.mu.Lock()
	frames := r.voice.frames
	r.voice.mu.Unlock()
	if frames != 0 {
		t.Fatalf("the scene's NPC sent %d frames to a player outside the scene", frames)
	}
	if got := controls.TakeNext(); got != "grimjaw" {
		t.Fatalf("the DM's answers-next was taken by a line from outside the scene (left %q)", got)
	}
}
