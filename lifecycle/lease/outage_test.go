package lease_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// outageWorld is a claim held by process a, with a fake clock that a
// heartbeat waits on, over a PostgreSQL the test stops and restarts.
type outageWorld struct {
	cl     *pgcluster.Cluster
	clk    *clocktest.Fake
	a, b   *lease.Leases
	sa     *lease.Set
	held   func() bool
	lost   chan error
	timers int
	// beats ends when a's heartbeat reports the claim lost: a heartbeat
	// that stopped arms no timer to wait for.
	beats context.Context
}

const outageClaim = "guild/1"

func newOutageWorld(ctx context.Context, t *testing.T) *outageWorld {
	t.Helper()
	w := &outageWorld{cl: pgcluster.Start(t), clk: clocktest.NewFake(time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)),
		lost: make(chan error, 1), timers: 1}
	store := pgtest.StoreAt(t, w.cl.DSN(), 8, postgres.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	mk := func(owner string) *lease.Leases {
		l, err := lease.New(lease.Config{DB: store.Pool(), Owner: owner, TTL: ttl, Clock: w.clk})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	w.a, w.b = mk("proc-a"), mk("proc-b")
	beats, stopBeats := context.WithCancel(ctx)
	t.Cleanup(stopBeats)
	w.beats = beats
	w.sa = w.a.NewSet(func(_ string, err error) {
		w.lost <- err
		stopBeats()
	})
	t.Cleanup(func() { w.sa.Close(context.Background(), false) })
	if ok, err := w.sa.Claim(ctx, outageClaim); !ok || err != nil {
		t.Fatalf("a's claim: %v %v", ok, err)
	}
	w.held = w.sa.Holder(outageClaim)
	return w
}

// beat lets a third of the lease time pass and waits for a's heartbeat to
// have tried its renewal and armed its next timer.
func (w *outageWorld) beat(t *testing.T) {
	t.Helper()
	fail := func(what string) {
		t.Helper()
		select {
		case err := <-w.lost:
			t.Fatalf("a's heartbeat reported the claim lost: %v", err)
		default:
		}
		t.Fatal(what)
	}
	if !w.clk.WaitTimers(w.beats, 1) {
		fail("hang guard: the heartbeat never waited")
	}
	w.clk.Advance(ttl / 3)
	w.timers++
	if !w.clk.WaitCreated(w.beats, w.timers) {
		fail("hang guard: the heartbeat never came back")
	}
}

// waitLost waits for a's heartbeat to report the claim lost.
func (w *outageWorld) waitLost(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case err := <-w.lost:
		if !errors.Is(err, lease.ErrLost) {
			t.Fatalf("a's loss: %v, want ErrLost", err)
		}
	case <-ctx.Done():
		t.Fatal("hang guard: a's heartbeat never reported the loss")
	}
}

// TestOutageLongerThanTheLeaseKeepsTheClaim: PostgreSQL is down for twice
// the lease time. Nobody can take a claim while it is down, so its holder
// keeps it (Held throughout, its sessions go on spooling), renews it when
// the database is back (with the same token), and another process still
// cannot take it.
func TestOutageLongerThanTheLeaseKeepsTheClaim(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	w := newOutageWorld(ctx, t)
	before, _, err := w.a.Get(ctx, outageClaim)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	for i := range 6 { // two lease times
		w.beat(t)
		if !w.held() {
			t.Fatalf("a stopped holding the claim %v into an outage", time.Duration(i+1)*ttl/3)
		}
	}
	if err := w.cl.Restart(); err != nil {
		t.Fatal(err)
	}
	w.beat(t) // a renews the claim its stored expiry passed
	if !w.held() {
		t.Fatal("a does not hold the claim after the database came back")
	}
	if _, err := w.b.Acquire(ctx, outageClaim, ""); !errors.As(err, new(*lease.HeldError)) {
		t.Fatalf("b's Acquire after a renewed the claim: %v, want a HeldError", err)
	}
	after, _, err := w.a.Get(ctx, outageClaim)
	if err != nil {
		t.Fatal(err)
	}
	if after.Owner != "proc-a" || after.Token != before.Token || !after.Expires.After(w.clk.Now()) {
		t.Fatalf("the claim after the outage: %+v, want proc-a's, token %d, expiring after %v", after, before.Token, w.clk.Now())
	}
	if err := w.sa.Check(ctx, outageClaim); err != nil {
		t.Fatalf("Check after the outage: %v", err)
	}
	select {
	case err := <-w.lost:
		t.Fatalf("a's heartbeat reported the claim lost: %v", err)
	default:
	}
}

// TestAttackClaimTakenDuringAnOutageIsLost: the holder cannot reach the
// database for longer than the lease time, and another process that can
// (a partition; here, the first to reach the restarted server) takes the
// expired claim. The holder's renewal after the outage is fenced by the
// token: it loses the claim, and Held says so from then on.
func TestAttackClaimTakenDuringAnOutageIsLost(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	w := newOutageWorld(ctx, t)
	if err := w.cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	for range 4 { // past the stored expiry
		w.beat(t)
	}
	if err := w.cl.Restart(); err != nil {
		t.Fatal(err)
	}
	taken, err := w.b.Acquire(ctx, outageClaim, "")
	if err != nil {
		t.Fatalf("b's Acquire of the claim expired in the database: %v", err)
	}
	if err := w.sa.Check(ctx, outageClaim); !errors.Is(err, lease.ErrLost) {
		t.Fatalf("a's Check once b took the claim: %v, want ErrLost", err)
	}
	if !w.clk.WaitTimers(ctx, 1) {
		t.Fatal("hang guard: the heartbeat never waited")
	}
	w.clk.Advance(ttl / 3)
	w.waitLost(ctx, t)
	if w.held() {
		t.Fatal("a still holds the claim b took")
	}
	if got, _, err := w.b.Get(ctx, outageClaim); err != nil || got.Owner != "proc-b" || got.Token != taken.Token {
		t.Fatalf("the claim after a's renewal: %+v %v, want b's with token %d", got, err, taken.Token)
	}
}

// TestStallDuringAnOutageLosesTheClaim: a process that stalls past its
// lease during an outage loses the claim at its first instant awake, as
// without one: the outage extends a claim only from renewals attempted in
// time.
func TestStallDuringAnOutageLosesTheClaim(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	w := newOutageWorld(ctx, t)
	if err := w.cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	w.beat(t)
	if !w.clk.WaitTimers(ctx, 1) {
		t.Fatal("hang guard: the heartbeat never waited")
	}
	w.clk.Advance(ttl + ttl/3) // the stall: no heartbeat in between
	if w.held() {
		t.Fatal("a holds the claim a lease time after its last renewal attempt")
	}
	w.waitLost(ctx, t)
}
