package table_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestPresenceFollowsTheVoiceChannelAndTheScene: the table records who is
// present as lines are logged: the voice channel's users; when the DM
// splits the party, only the scene's players; nothing new while it does
// not change.
func TestPresenceFollowsTheVoiceChannelAndTheScene(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	controls := live.NewControls()
	controls.SetScene(live.Scene{Present: []string{"grimjaw"}})
	r := newRigWith(t, 0, nil, func(c *table.Config) { c.Controls = controls })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard, not a budget
	defer cancel()
	say := func(text string) {
		t.Helper()
		if err := r.s.Say(ctx, "grimjaw", text); err != nil {
			t.Fatal(err)
		}
	}
	// waitRows waits for the session's presence rows to number n.
	waitRows := func(n int) [][]string {
		t.Helper()
		for {
			ps, err := r.camp.Presence(ctx, "bench")
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) >= n {
				out := make([][]string, len(ps))
				for i, p := range ps {
					out[i] = p.Players
				}
				return out
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%d presence rows, want %d", len(ps), n)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	say("The forge is hot today.")
	say("Mind the sparks.") // nobody came or went: no new span
	// The DM splits the party: the scene holds another player only.
	scene := controls.Scene()
	scene.Players = []string{"someone-else"}
	controls.SetScene(scene)
	say("Only the others hear this.")
	got := waitRows(2)
	want := [][]string{{player}, {}}
	if len(got) != len(want) || !slices.Equal(got[0], want[0]) || len(got[1]) != 0 {
		t.Fatalf("presence spans = %v, want %v", got, want)
	}
}

// TestPresenceLeavesOutOptedOutPlayers: a player who opted out is not
// recorded as present either (nothing is stored about them).
func TestPresenceLeavesOutOptedOutPlayers(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	r := newRigWith(t, 0, func(c *postgres.Campaign) {
		if err := c.OptOut(context.Background(), player); err != nil {
			t.Fatal(err)
		}
	}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard, not a budget
	defer cancel()
	if err := r.s.Say(ctx, "grimjaw", "Anyone there?"); err != nil {
		t.Fatal(err)
	}
	for {
		ps, err := r.camp.Presence(ctx, "bench")
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) > 0 {
			if len(ps) != 1 || len(ps[0].Players) != 0 {
				t.Fatalf("presence with an opted-out player in the channel: %+v", ps)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no presence recorded")
		case <-time.After(20 * time.Millisecond):
		}
	}
}
