package lease_test

import (
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
)

func TestSetClaimsTakesOverAndReportsLoss(t *testing.T) {
	a, b, clk := pair(t)
	ctx := hangGuard(t)
	lost := make(chan string, 1)
	sa := a.NewSet(func(name string, err error) {
		if errors.Is(err, lease.ErrLost) {
			lost <- name
		}
	})
	sb := b.NewSet(nil)

	// a claims the guild and records its session; b stays out.
	if ok, state, err := sa.Take(ctx, "guild/7"); !ok || state != "" || err != nil {
		t.Fatalf("first take = %v %q %v", ok, state, err)
	}
	if err := sa.SetState(ctx, "guild/7", "session s7"); err != nil {
		t.Fatal(err)
	}
	if ok, state, _ := sa.Take(ctx, "guild/7"); !ok || state != "" {
		t.Errorf("take of a held claim = %v %q, want held, no work handed over", ok, state)
	}
	if ok, err := sb.Claim(ctx, "guild/7"); ok || err != nil {
		t.Fatalf("b claimed a held guild: %v %v", ok, err)
	}
	if err := sb.SetState(ctx, "guild/7", "x"); !errors.Is(err, lease.ErrLost) {
		t.Errorf("b's state write on a claim it does not hold = %v, want ErrLost", err)
	}

	// a stalls (its heartbeat does not run: the fake clock jumps past the
	// lease time at once); b takes the guild with its session. The jump
	// waits for a's heartbeat to arm its timer: armed after it, the timer
	// would count from the new time and never fire (a quiet CI run waited
	// out its hang guard so).
	if !clk.WaitTimers(ctx, 1) {
		t.Fatal("a's heartbeat never armed its timer")
	}
	clk.Advance(ttl + 1)
	ok, state, err := sb.Take(ctx, "guild/7")
	if !ok || state != "session s7" || err != nil {
		t.Fatalf("takeover = %v %q %v, want the session to resume", ok, state, err)
	}
	select {
	case name := <-lost:
		if name != "guild/7" {
			t.Errorf("lost %s", name)
		}
	case <-ctx.Done():
		t.Fatal("a was not told it lost the guild")
	}
	if sa.Holds("guild/7") || !sb.Holds("guild/7") {
		t.Errorf("after the takeover a holds %v, b %v", sa.Holds("guild/7"), sb.Holds("guild/7"))
	}
	if err := sb.Close(ctx, false); err != nil {
		t.Fatal(err)
	}
	if ok, err := sb.Claim(ctx, "guild/8"); ok || err == nil {
		t.Errorf("a closed set claimed: %v %v", ok, err)
	}
	if err := sa.Close(ctx, false); err != nil {
		t.Fatal(err)
	}
}

// Check sees a loss the heartbeat has not noticed yet (the claim was taken
// behind the holder's back; its next renewal is a third of the lease time
// away), and names a claim the set never held as lost.
func TestSetCheckSeesALossBeforeTheHeartbeat(t *testing.T) {
	a, _, _ := pair(t)
	ctx := hangGuard(t)
	sa := a.NewSet(nil)
	defer sa.Close(ctx, false)
	if ok, err := sa.Claim(ctx, "guild/9"); !ok || err != nil {
		t.Fatalf("claim = %v %v", ok, err)
	}
	if err := sa.Check(ctx, "guild/9"); err != nil {
		t.Fatalf("check of a held claim = %v", err)
	}
	if err := sa.Check(ctx, "guild/10"); !errors.Is(err, lease.ErrLost) {
		t.Errorf("check of a claim never held = %v, want ErrLost", err)
	}
	if _, err := a.DB().Exec(ctx, `UPDATE leases SET owner = 'proc-b', token = token + 1 WHERE name = 'guild/9'`); err != nil {
		t.Fatal(err)
	}
	if !sa.Holds("guild/9") {
		t.Fatal("the heartbeat noticed the loss already: the test does not test Check")
	}
	if err := sa.Check(ctx, "guild/9"); !errors.Is(err, lease.ErrLost) {
		t.Errorf("check of a claim taken behind the holder's back = %v, want ErrLost", err)
	}
}

// A claim is held only until the expiry of its last renewal, on the
// process's clock: a process that stalled past its lease time (here its
// heartbeat is stopped, as a process under SIGSTOP) no longer holds it
// when it wakes up, before any heartbeat of its own has run, and its set
// no longer answers for it, while another process takes it. Released, it
// is not held either.
func TestHeldEndsAtTheExpiryBeforeTheHeartbeat(t *testing.T) {
	a, b, clk := pair(t)
	ctx := hangGuard(t)
	la, err := a.Acquire(ctx, "guild/11", "session s11")
	if err != nil {
		t.Fatal(err)
	}
	k := a.Keep(la, nil)
	if !k.Held() {
		t.Fatal("a claim just taken is not held")
	}
	k.Stop() // the process stalls: no heartbeat runs from now on
	clk.Advance(ttl - time.Millisecond)
	if !k.Held() {
		t.Fatal("the claim is not held before its expiry")
	}
	clk.Advance(time.Millisecond)
	if k.Held() {
		t.Error("the claim is still held at its expiry, with no renewal since")
	}
	if _, err := b.Acquire(ctx, "guild/11", ""); err != nil {
		t.Fatalf("another process cannot take the expired claim: %v", err)
	}
	if k.Held() {
		t.Error("the claim is held after another process took it")
	}

	// A set: its claim stops answering at the expiry, whether or not its
	// heartbeat has run since (and noticed the loss).
	sa := a.NewSet(nil)
	defer sa.Close(ctx, false)
	if ok, err := sa.Claim(ctx, "guild/12"); !ok || err != nil {
		t.Fatalf("claim = %v %v", ok, err)
	}
	clk.Advance(ttl)
	if sa.Holds("guild/12") {
		t.Error("the set holds a claim past its expiry")
	}
	if _, err := b.Acquire(ctx, "guild/12", ""); err != nil {
		t.Fatalf("another process cannot take the expired claim: %v", err)
	}
	if ok, err := sa.Claim(ctx, "guild/12"); ok || err != nil {
		t.Errorf("the set answers for a claim past its expiry: %v %v", ok, err)
	}

	// Released: not held.
	lc, err := a.Acquire(ctx, "guild/13", "")
	if err != nil {
		t.Fatal(err)
	}
	kc := a.Keep(lc, nil)
	if err := kc.Release(ctx, false); err != nil {
		t.Fatal(err)
	}
	if kc.Held() {
		t.Error("a released claim is held")
	}
}
