package guard_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestPresenceSurvivesOutageAndRestart: presence recorded while the
// database is down waits in the spool with the lines, survives a restart
// of the process, and reaches the database on replay, with whether the DM
// had split the party (a split span stays split: players who were not in
// the scene must not read it); a player forgotten meanwhile leaves the
// spooled presence too. A presence record spooled by an older glyphoxa,
// without the split field, still replays (as not split).
func TestPresenceSurvivesOutageAndRestart(t *testing.T) {
	leakcheck.Check(t)
	store, dsn := pgtest.NewStore(t, 8)
	dir := t.TempDir()
	ctx := context.Background()

	down, ping := closedStore(t, dsn)
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet(),
		Forget: func(context.Context, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	check := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	check(g.StartSession(ctx, "s1", t0))
	check(g.RecordPresence(ctx, "s1", t0, []string{"p1", "p2", "p3"}, false))
	_, err = g.WriteEntry(ctx, entry(1))
	check(err)
	check(g.RecordPresence(ctx, "s1", t0.Add(90*time.Second), []string{"p1", "p2"}, true))
	_, err = g.WriteEntry(ctx, entry(2))
	check(err)
	if !g.IsDegraded() {
		t.Fatal("not degraded although every write failed")
	}
	// p2 asks to be forgotten while the database is down.
	if _, err := g.Forget(ctx, "p2", t0.Add(time.Hour), nil); err != nil {
		t.Fatalf("Forget during an outage: %v", err)
	}
	// Bad input is refused, not spooled.
	if err := g.RecordPresence(ctx, "", t0, nil, false); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("presence without a session: %v", err)
	}
	if err := g.RecordPresence(ctx, "s1", time.Time{}, nil, true); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("presence without a time: %v", err)
	}
	check(g.Close())
	// A record an older glyphoxa spooled: no split field.
	sp, err := spool.Open(dir, spool.Options{Logger: quiet()})
	check(err)
	check(sp.Append([]byte(`{"op":"presence","session":"s1","at":"` + t0.Add(3*time.Minute).Format(time.RFC3339Nano) + `","players":["p1","p3"]}`)))
	check(sp.Close())

	// The next run, with the database up, replays the spool.
	camp := pgtest.Campaign(t, store, "c")
	g2, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(),
		Logger: quiet(), Forget: func(ctx context.Context, who string) error { _, err := camp.ForgetSpeaker(ctx, who); return err }})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	g2.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	check(g2.WaitHealthy(wctx))
	ps, err := camp.Presence(ctx, "s1")
	check(err)
	if len(ps) != 3 {
		t.Fatalf("%d presence rows after replay, want 3: %+v", len(ps), ps)
	}
	want := []struct {
		players []string
		split   bool
	}{{[]string{"p1", "p3"}, false}, {[]string{"p1"}, true}, {[]string{"p1", "p3"}, false}}
	for i, p := range ps {
		if !slices.Equal(p.Players, want[i].players) {
			t.Errorf("presence %d = %v, want %v (p2 forgotten)", i, p.Players, want[i].players)
		}
		if p.Split != want[i].split {
			t.Errorf("presence %d split = %v, want %v", i, p.Split, want[i].split)
		}
	}
	if !ps[1].At.Equal(t0.Add(90 * time.Second)) {
		t.Errorf("second span from %v", ps[1].At)
	}
	if got, _ := g2.Entries(ctx, "s1"); len(got) != 2 {
		t.Errorf("%d lines after replay, want 2", len(got))
	}
}

// TestPresenceNeedsACapableStore: a session log that records no presence
// refuses it at once instead of spooling what can never be replayed.
func TestPresenceNeedsACapableStore(t *testing.T) {
	leakcheck.Check(t)
	g, err := guard.New(guard.Config{Store: plainLog{}, Ping: func(context.Context) error { return nil },
		SpoolDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.RecordPresence(context.Background(), "s1", t0, []string{"p1"}, false); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("RecordPresence on a plain store = %v, want ErrInvalid", err)
	}
}

// plainLog is a session log without the presence capability.
type plainLog struct{ memory.SessionStore }
