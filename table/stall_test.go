package table_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestASenderStalledMidLineIsOneLine: the rig's sender is descheduled in
// the middle of the player's line for longer than the silence that ends an
// utterance (as on a loaded machine), twice in a row. The line is still
// heard as one utterance, answered once per turn, and no line is split in
// two whose second half talks over the answer to the first (before the rig
// stamped its packets on its own clock, the lanes took the stall for the
// player falling silent: a turn got a report with no reply and no error).
func TestASenderStalledMidLineIsOneLine(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	r := newRig(t, 0)
	stall := audio.DefaultTickSlack + audio.DefaultEndpoint + 500*time.Millisecond
	mid := len(r.packets) / 2
	r.stall = func(i int) {
		if i == mid {
			time.Sleep(stall) // the scheduler's time, not the rig's
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	for k := range 2 {
		l, err := r.turn(ctx)
		if err != nil {
			t.Fatalf("turn %d: %v", k+1, err)
		}
		if !strings.Contains(l.Corrected, "Grimjaw") || l.Addressee != "grimjaw" {
			t.Fatalf("turn %d: line %q answered by %q, want Grimjaw's answer", k+1, l.Corrected, l.Addressee)
		}
	}
	if streamed, batch := streamCalls(r.dg.Calls()); streamed+batch != 2 {
		t.Fatalf("%d utterances transcribed for 2 lines, want 2", streamed+batch)
	}
	select {
	case l := <-r.reports:
		t.Fatalf("a line more than the player said: %+v", l)
	default:
	}
}
