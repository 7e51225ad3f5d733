package table_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestForgetTakesThePlayerOutOfTheStatus: after forget-me the running
// session's status (the console's Live page and the feed it publishes to
// other processes) no longer shows the player's lines among the latest
// turns, nor the player among the recorded speakers (ATTACK3: the turns
// kept quoting the forgotten player's words until 20 newer turns pushed
// them out).
func TestForgetTakesThePlayerOutOfTheStatus(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	r := newRig(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	l, err := r.turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := r.s.Status()
	if len(st.Turns) != 1 || st.Turns[0].Corrected != l.Corrected {
		t.Fatalf("the status before forget-me: %d turns; want the player's turn", len(st.Turns))
	}
	if _, err := r.s.Forget(ctx, player, func(ctx context.Context) error {
		_, err := r.camp.ForgetSpeaker(ctx, player)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	st = r.s.Status()
	for _, turn := range st.Turns {
		if turn.SpeakerID == player {
			t.Errorf("the status still shows the forgotten player's line %q", turn.Corrected)
		}
	}
	if n, ok := st.Recorded[player]; ok {
		t.Errorf("the status still lists the forgotten player (%s) as recorded", n)
	}
}
