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
// present as lines are logged, and whether the DM had split the party: the
// voice channel's users; when the DM splits the party, only the scene's
// players, marked split (a new span even when the scene holds everyone
// present: the players outside the voice channel did not hear it either,
// and a public recap must leave it out); nothing new while it does not
// change; the party together again, not split.
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
	waitRows := func(n int) []postgres.Presence {
		t.Helper()
		for {
			ps, err := r.camp.Presence(ctx, "bench")
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) >= n {
				return ps
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%d presence rows, want %d", len(ps), n)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	split := func(players ...string) {
		scene := controls.Scene()
		scene.Players = players
		controls.SetScene(scene)
	}
	say("The forge is hot today.")
	say("Mind the sparks.") // nobody came or went: no new span
	waitRows(1)
	// The DM splits the party into a scene of the one player present.
	split(player)
	say("A scene of one.")
	waitRows(2)
	// The scene holds another player only.
	split("someone-else")
	say("Only the others hear this.")
	waitRows(3)
	// players:all.
	split()
	say("Together again.")
	got := waitRows(4)
	want := []struct {
		players []string
		split   bool
	}{{[]string{player}, false}, {[]string{player}, true}, {[]string{}, true}, {[]string{player}, false}}
	if len(got) != len(want) {
		t.Fatalf("presence spans = %+v, want %+v", got, want)
	}
	for i, p := range got {
		if !slices.Equal(p.Players, want[i].players) || p.Split != want[i].split {
			t.Errorf("presence span %d = %v split=%v, want %v split=%v", i, p.Players, p.Split, want[i].players, want[i].split)
		}
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
