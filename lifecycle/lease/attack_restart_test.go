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
)

// TestAttackHolderThroughARestart: PostgreSQL restarts (fast, then
// immediate shutdown) while process a holds a claim, each time for less
// than the lease time. a's pooled connections die with the server; its
// heartbeat's renewals fail while the server is down and must succeed
// once it is back, so a keeps the claim (Held throughout) and b cannot
// take it at any point; past a's last renewal, and only then, b can.
func TestAttackHolderThroughARestart(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	store, err := postgres.NewStore(ctx, cl.DSN(), 8, postgres.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	clk := clocktest.NewFake(time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC))
	mk := func(owner string) *lease.Leases {
		l, err := lease.New(lease.Config{DB: store.Pool(), Owner: owner, TTL: ttl, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := mk("proc-a"), mk("proc-b")
	lost := make(chan error, 1)
	sa := a.NewSet(func(_ string, err error) { lost <- err })
	defer sa.Close(context.Background(), false)
	const name = "guild/1"
	if ok, err := sa.Claim(ctx, name); !ok || err != nil {
		t.Fatalf("a's claim: %v %v", ok, err)
	}
	held := sa.Holder(name)
	timers := 1 // the heartbeat's first
	beat := func() {
		t.Helper()
		if !clk.WaitTimers(ctx, 1) {
			t.Fatal("hang guard: the heartbeat never waited")
		}
		clk.Advance(ttl / 3)
		timers++
		if !clk.WaitCreated(ctx, timers) {
			t.Fatal("hang guard: the heartbeat never came back")
		}
	}
	for round, stop := range []func() error{cl.StopFast, cl.StopImmediate} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		beat() // a renewal while the server is down: it fails
		if !held() {
			t.Fatalf("round %d: a lost the claim one failed renewal into a restart", round)
		}
		if err := cl.Restart(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(ctx, name, ""); !errors.As(err, new(*lease.HeldError)) {
			t.Fatalf("round %d: b's Acquire while a holds the claim: %v, want a HeldError", round, err)
		}
		beat() // back: a renews
		if !held() {
			t.Fatalf("round %d: a does not hold the claim after renewing", round)
		}
		if _, err := b.Acquire(ctx, name, ""); !errors.As(err, new(*lease.HeldError)) {
			t.Fatalf("round %d: b's Acquire after a's renewal: %v, want a HeldError", round, err)
		}
	}
	select {
	case err := <-lost:
		t.Fatalf("a's heartbeat reported the claim lost: %v", err)
	default:
	}
	// a stalls past its lease: b takes it, and a is no longer Held at
	// the same instant.
	sa.Release(ctx, name, true) // stops a's heartbeat; the claim expires now
	if held() {
		t.Error("a still Held after giving the claim up")
	}
	if _, err := b.Acquire(ctx, name, ""); err != nil {
		t.Fatalf("b's Acquire of a released claim: %v", err)
	}
}
