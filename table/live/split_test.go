package live_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/table/live"
)

// TestPlayersAtIsTheSplitInForceThen: the scene's players at a time are
// the set the DM had set by then, so a line said before the party was
// rejoined (or split) and processed after counts for the scene it was
// said in; changes of the NPCs or place alone are no split.
func TestPlayersAtIsTheSplitInForceThen(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	now := t0
	c := live.NewControls()
	c.UseClock(func() time.Time { return now })
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	now = at(time.Minute)
	c.SetScene(live.Scene{LocationID: "vault", Players: []string{"p1", "p2"}}) // split
	now = at(2 * time.Minute)
	c.SetScene(live.Scene{LocationID: "crypt", Present: []string{"vexa"}, Players: []string{"p1", "p2"}}) // same players
	now = at(3 * time.Minute)
	c.SetScene(live.Scene{LocationID: "hall"}) // rejoined
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{0, "[]"},
		{time.Minute - time.Nanosecond, "[]"},
		{time.Minute, "[p1 p2]"},
		{2*time.Minute + 59*time.Second, "[p1 p2]"}, // said in the split scene, processed after the rejoin
		{3 * time.Minute, "[]"},
		{time.Hour, "[]"},
	} {
		if got := fmt.Sprint(c.PlayersAt(at(tc.at))); got != tc.want {
			t.Errorf("PlayersAt(+%s) = %s, want %s", tc.at, got, tc.want)
		}
	}
	if got := c.PresentPlayers(); len(got) != 0 {
		t.Errorf("PresentPlayers after the rejoin = %v", got)
	}
}

// TestSplitAtNamesTheDMWhoSplit: the DM who split the party is kept with
// the split in force at a time (their lines are narration the scene
// hears); another DM resplitting the same players starts a new split.
func TestSplitAtNamesTheDMWhoSplit(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	now := t0
	c := live.NewControls()
	c.UseClock(func() time.Time { return now })
	now = t0.Add(time.Minute)
	c.SetScene(live.Scene{Players: []string{"p1"}, By: "dm1"})
	now = t0.Add(2 * time.Minute)
	c.SetScene(live.Scene{Players: []string{"p1"}, By: "dm2"})
	now = t0.Add(3 * time.Minute)
	c.SetScene(live.Scene{})
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{0, "[] "},
		{time.Minute, "[p1] dm1"},
		{2 * time.Minute, "[p1] dm2"},
		{3 * time.Minute, "[] "},
	} {
		players, by := c.SplitAt(t0.Add(tc.at))
		if got := fmt.Sprint(players) + " " + by; got != tc.want {
			t.Errorf("SplitAt(+%s) = %q, want %q", tc.at, got, tc.want)
		}
	}
	if got := c.Scene().By; got != "" {
		t.Errorf("Scene().By after the rejoin = %q", got)
	}
}
