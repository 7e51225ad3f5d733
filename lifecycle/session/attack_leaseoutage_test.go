package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
)

// TestAttackOutageLongerThanTheLease runs a session as glyphoxa serve
// does: under its guild's claim (lifecycle/lease, Config.Held from the
// claim set, as voicesession wires table.Config.Held). PostgreSQL stops
// for longer than the lease time (15 s by default; the lease's clock is a
// fake one advanced past it, so nothing here depends on the machine's
// speed). Only one process runs: nobody can take the guild over while the
// database is down.
//
// README: "Lines said meanwhile are spooled to disk and replayed, in
// order, exactly once." Every line said at the table during the outage
// must be recorded.
func TestAttackOutageLongerThanTheLease(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	store, camp := outageCampaign(t, cl)
	clk := clocktest.NewFake(time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC))
	leases, err := lease.New(lease.Config{DB: store.Pool(), Owner: "serve-a", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	lostC := make(chan error, 1)
	// beats ends when the heartbeat reports the claim lost: it then arms
	// no timer to wait for.
	beats, stopBeats := context.WithCancel(ctx)
	defer stopBeats()
	set := leases.NewSet(func(_ string, err error) {
		lostC <- err
		stopBeats()
	})
	defer set.Close(context.Background(), false)
	const claim = "guild/1"
	if ok, err := set.Claim(ctx, claim); !ok || err != nil {
		t.Fatalf("claiming the guild: %v %v", ok, err)
	}
	s, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping, StateDir: t.TempDir(),
		Summarizer: noSummary, MaxTokens: 1 << 30, ConsolidateEvery: time.Hour,
		Probe:        reconnect.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond},
		WriteTimeout: 2 * time.Second, DrainTimeout: time.Minute, Held: set.Holder(claim), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)

	const n = 30
	var refused []int
	var firstErr error
	record := func(from, to int) {
		for i := from; i < to; i++ {
			if err := s.Record(ctx, line(i)); err != nil {
				refused = append(refused, i)
				if firstErr == nil {
					firstErr = err
				}
			}
		}
	}
	record(0, 10)
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	record(10, 20) // the first seconds of the outage: spooled
	// The outage outlasts the lease time (DefaultTTL, 15 s): the claim's
	// heartbeat tries to renew it every third of that, and fails.
	for beat := 1; beat <= 4 && beats.Err() == nil; beat++ {
		if !clk.WaitTimers(beats, 1) {
			break
		}
		clk.Advance(lease.DefaultTTL / 3)
		clk.WaitCreated(beats, beat+1) // its next beat, unless it stopped
	}
	if ctx.Err() != nil {
		t.Fatal("hang guard: the claim's heartbeat never came back")
	}
	select {
	case err := <-lostC:
		t.Fatalf("the claim's heartbeat reported it lost %v into an outage nobody could take it in: %v", 4*lease.DefaultTTL/3, err)
	default:
	}
	record(20, n) // said at the table 20 s into the outage
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.Memory().WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) > 0 || len(got) != n {
		t.Fatalf("a single serve process, a %v outage: %d of %d lines said at the table were refused (lines %v; first error: %v) "+
			"and the session log holds %d lines: everything said after the lease time into the outage is lost, though "+
			"no other process could have taken the guild while the database was down",
			lease.DefaultTTL+5*time.Second, len(refused), n, refused, firstErr, len(got))
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", n)
}
