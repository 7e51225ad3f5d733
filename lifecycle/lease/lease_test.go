package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const ttl = 10 * time.Second

// pair returns the claims of two processes, a and b, on one fresh
// database, sharing a fake clock.
func pair(t *testing.T) (a, b *lease.Leases, clk *clocktest.Fake) {
	t.Helper()
	s, _ := pgtest.NewStore(t, 8)
	clk = clocktest.NewFake(time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC))
	mk := func(owner string) *lease.Leases {
		l, err := lease.New(lease.Config{DB: s.Pool(), Owner: owner, TTL: ttl, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	return mk("proc-a"), mk("proc-b"), clk
}

func hangGuard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestTakeoverFencesTheOldHolder(t *testing.T) {
	a, b, clk := pair(t)
	ctx := hangGuard(t)

	la, err := a.Acquire(ctx, "guild/1", "")
	if err != nil {
		t.Fatal(err)
	}
	if la.Token != 1 || la.Owner != "proc-a" {
		t.Fatalf("first claim = %+v, want token 1 held by proc-a", la)
	}
	if la, err = a.SetState(ctx, la, `{"session":"s1"}`); err != nil {
		t.Fatal(err)
	}
	again, err := a.Acquire(ctx, "guild/1", "")
	if err != nil || again.Token != 1 || again.State != `{"session":"s1"}` {
		t.Fatalf("re-claim by the holder = %+v, %v; want the same token and state", again, err)
	}

	_, err = b.Acquire(ctx, "guild/1", "")
	var held *lease.HeldError
	if !errors.As(err, &held) || held.Holder != "proc-a" {
		t.Fatalf("claim of a held guild = %v, want a HeldError naming proc-a", err)
	}
	if orphans, err := b.Orphans(ctx, "guild/"); err != nil || len(orphans) != 0 {
		t.Fatalf("orphans while held = %v, %v; want none", orphans, err)
	}

	clk.Advance(ttl) // a stops renewing: its claim expires
	orphans, err := b.Orphans(ctx, "guild/")
	if err != nil || len(orphans) != 1 || orphans[0].Name != "guild/1" || orphans[0].Owner != "proc-a" {
		t.Fatalf("orphans after expiry = %+v, %v; want guild/1 of proc-a", orphans, err)
	}
	lb, err := b.Acquire(ctx, "guild/1", "")
	if err != nil {
		t.Fatal(err)
	}
	if lb.Token != 2 || lb.Owner != "proc-b" || lb.State != `{"session":"s1"}` {
		t.Fatalf("takeover = %+v, want token 2 held by proc-b with the session to resume", lb)
	}

	// Every write of the old holder is fenced off.
	if _, err := a.Renew(ctx, la); !errors.Is(err, lease.ErrLost) {
		t.Errorf("old holder's renewal = %v, want ErrLost", err)
	}
	if _, err := a.SetState(ctx, la, "x"); !errors.Is(err, lease.ErrLost) {
		t.Errorf("old holder's state write = %v, want ErrLost", err)
	}
	if err := a.Check(ctx, la); !errors.Is(err, lease.ErrLost) {
		t.Errorf("old holder's fence check = %v, want ErrLost", err)
	}
	if err := b.Check(ctx, lb); err != nil {
		t.Errorf("new holder's fence check = %v", err)
	}
	// Its release changes nothing either.
	if err := a.Release(ctx, la, false); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := b.Get(ctx, "guild/1"); got.Owner != "proc-b" || got.State == "" {
		t.Fatalf("after the old holder's release: %+v", got)
	}

	// A release keeps the token growing: the next holder gets 3.
	if err := b.Release(ctx, lb, false); err != nil {
		t.Fatal(err)
	}
	la2, err := a.Acquire(ctx, "guild/1", "")
	if err != nil || la2.Token != 3 || la2.State != "" {
		t.Fatalf("claim after release = %+v, %v; want token 3, no state", la2, err)
	}
}

func TestKeeperRenewsAndReportsLoss(t *testing.T) {
	a, b, clk := pair(t)
	ctx := hangGuard(t)
	la, err := a.Acquire(ctx, "background/c1", "")
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan error, 1)
	k := a.Keep(la, func(err error) { lost <- err })
	defer k.Stop()

	// Four heartbeats: the claim outlives its first lease time.
	for n := 1; n <= 4; n++ {
		if !clk.WaitCreated(ctx, n) {
			t.Fatal("no heartbeat armed")
		}
		clk.Advance(ttl / 3)
	}
	if !clk.WaitCreated(ctx, 5) { // the fourth renewal is written
		t.Fatal("no fifth heartbeat")
	}
	if clk.Now().Before(la.Expires) {
		t.Fatalf("test setup: the first lease time has not passed")
	}
	if _, err := b.Acquire(ctx, "background/c1", ""); err == nil {
		t.Fatal("another process took a claim that is renewed")
	}
	select {
	case err := <-lost:
		t.Fatalf("lost while renewed: %v", err)
	default:
	}

	// The claim is taken behind its back (as after a long pause): the next
	// heartbeat reports the loss.
	if _, err := a.DB().Exec(ctx, "UPDATE leases SET owner = 'proc-b', token = token + 1 WHERE name = 'background/c1'"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(ttl / 3)
	select {
	case err := <-lost:
		if !errors.Is(err, lease.ErrLost) {
			t.Fatalf("loss reported as %v, want ErrLost", err)
		}
	case <-ctx.Done():
		t.Fatal("the keeper did not report the lost claim")
	}
}

func TestAcquireWait(t *testing.T) {
	t.Run("a dead holder's claim is taken after it expires", func(t *testing.T) {
		a, b, clk := pair(t)
		ctx := hangGuard(t)
		if _, err := a.Acquire(ctx, "shard/0of2", ""); err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		var lb lease.Lease
		go func() {
			var err error
			lb, err = b.AcquireWait(ctx, "shard/0of2", "")
			got <- err
		}()
		if !clk.WaitTimers(ctx, 1) {
			t.Fatal("b does not wait")
		}
		clk.Advance(ttl + time.Millisecond)
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		if lb.Owner != "proc-b" || lb.Token != 2 {
			t.Fatalf("taken claim = %+v", lb)
		}
	})
	t.Run("a live holder is an error naming both", func(t *testing.T) {
		a, b, clk := pair(t)
		ctx := hangGuard(t)
		la, err := a.Acquire(ctx, "shard/0of2", "")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			_, err := b.AcquireWait(ctx, "shard/0of2", "")
			got <- err
		}()
		if !clk.WaitTimers(ctx, 1) {
			t.Fatal("b does not wait")
		}
		// a renews while b waits.
		clk.Advance(ttl / 2)
		if _, err := a.Renew(ctx, la); err != nil {
			t.Fatal(err)
		}
		clk.Advance(ttl/2 + time.Millisecond)
		err = <-got
		var c *lease.ConflictError
		if !errors.As(err, &c) || c.Holder != "proc-a" || c.Owner != "proc-b" {
			t.Fatalf("got %v, want a ConflictError naming proc-a and proc-b", err)
		}
		for _, want := range []string{"shard/0of2", "proc-a", "proc-b"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %s", err, want)
			}
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	s, _ := pgtest.NewStore(t, 8)
	for _, tc := range []struct {
		name string
		cfg  lease.Config
	}{
		{"no database", lease.Config{Owner: "x"}},
		{"no owner", lease.Config{DB: s.Pool(), Owner: " "}},
		{"negative lease time", lease.Config{DB: s.Pool(), Owner: "x", TTL: -time.Second}},
	} {
		if _, err := lease.New(tc.cfg); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	if a, b := lease.NewOwner(), lease.NewOwner(); a == b || a == "" {
		t.Errorf("owner ids %q and %q: want distinct", a, b)
	}
}
