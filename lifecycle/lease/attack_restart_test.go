package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
)

// TestAttackHolderThroughARestart: PostgreSQL restarts (fast, then
// immediate shutdown) while process a holds a claim, each time for less
// than the lease time. a's pooled connections die with the server; its
// heartbeat's renewals fail while the server is down and must succeed
// once it is back, so a keeps the claim (Held throughout) and b cannot
// take it at any point; past a's last renewal, and only then, b can.
func TestAttackHolderThroughARestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	w := newOutageWorld(ctx, t)
	cl, b, sa, held, lost, name := w.cl, w.b, w.sa, w.held, w.lost, outageClaim
	beat := func() { t.Helper(); w.beat(t) }
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
