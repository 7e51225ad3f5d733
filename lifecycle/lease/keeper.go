package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Keeper is the heartbeat of a held claim: it renews it every third of
// the lease time until Stop or Release, and calls its lost function, once,
// when the claim is lost (a renewal says so, renewals the database refused
// went on until the claim expired, or the process stalled past it). Whoever
// calls Keep owns it and stops it.
//
// # Database outages
//
// A renewal that cannot reach the database (PostgreSQL stopped,
// restarting, unreachable: [postgres.IsOutage]) does not lose the claim: while
// the database is down no other process can take it either, since every
// claim is taken by a statement. The keeper goes on holding it, one lease
// time past each attempt that started in time, and its sessions go on
// spooling their lines. When the database answers again, the claim is
// renewed without the expiry condition but fenced by its token
// ([Leases.Reclaim]): another process that took it in the meantime
// incremented the token, and then the claim is lost and its work handed
// over as usual. A process that stalls past the lease time still loses the
// claim at its first instant awake, outage or not.
type Keeper struct {
	l    *Leases
	lost func(error)

	mu     sync.Mutex
	ls     Lease
	outage bool // the last renewal could not reach the database

	// Read by Held without the lock, which a renewal holds for a round
	// trip: until when the claim is held (Unix nanoseconds: the expiry of
	// the last renewal, or one lease time past the last attempt that could
	// not reach the database) and whether the claim was lost or released.
	expires atomic.Int64
	gone    atomic.Bool

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Keep starts renewing ls. lost (which may be nil) runs on the keeper's
// goroutine; it must not call Stop or Release.
func (l *Leases) Keep(ls Lease, lost func(error)) *Keeper {
	k := &Keeper{l: l, ls: ls, lost: lost, stop: make(chan struct{}), done: make(chan struct{})}
	k.expires.Store(ls.Expires.UnixNano())
	go k.run()
	return k
}

// Lease is the claim as last renewed.
func (k *Keeper) Lease() Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.ls
}

// Held reports whether the claim is still this process's as far as the
// process can know without asking the database: it was neither lost nor
// released, and the expiry of its last renewal (or, while the database
// cannot be reached, one lease time past the last attempt to renew it) is
// still ahead on the clock. Past that the claim is lost even if the
// heartbeat has not noticed yet (a process that stalled past its lease
// time and woke up, or whose renewals the database refused): another
// process may have taken it. Whoever writes for the claim asks Held before
// each write; this is the one place that rule lives.
func (k *Keeper) Held() bool {
	return !k.gone.Load() && k.l.clk.Now().UnixNano() < k.expires.Load()
}

// SetState records the work the claim resumes; see Leases.SetState.
func (k *Keeper) SetState(ctx context.Context, state string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	ls, err := k.l.SetState(ctx, k.ls, state)
	if err != nil {
		return err
	}
	k.ls = ls
	return nil
}

// Stop stops renewing without giving the claim up (it expires by itself)
// and waits for the heartbeat to end. It is idempotent.
func (k *Keeper) Stop() {
	k.once.Do(func() { close(k.stop) })
	<-k.done
}

// Release stops renewing and gives the claim up; keepState says whether
// its work stays for the next holder to resume.
func (k *Keeper) Release(ctx context.Context, keepState bool) error {
	k.Stop()
	k.gone.Store(true)
	return k.l.Release(ctx, k.Lease(), keepState)
}

func (k *Keeper) run() {
	defer close(k.done)
	every := k.l.ttl / 3
	for {
		t := k.l.clk.NewTimer(every)
		select {
		case <-k.stop:
			t.Stop()
			return
		case <-t.C():
		}
		if err := k.renew(every); err != nil {
			k.gone.Store(true)
			if k.lost != nil {
				k.lost(err)
			}
			return
		}
	}
}

// renew renews the claim once, within timeout; it returns an error
// wrapping ErrLost when the claim is lost, nil while it is held.
func (k *Keeper) renew(timeout time.Duration) error {
	start := k.l.clk.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if !start.Before(time.Unix(0, k.expires.Load())) {
		// The heartbeat comes a lease time late: the process stalled (or
		// the database refused renewals until then). Held has said no
		// since the expiry, and another process may hold the claim now.
		return fmt.Errorf("%w: it expired before it was renewed (the process stalled, or renewals failed until then)", ErrLost)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	renew := k.l.Renew
	if k.outage {
		renew = k.l.Reclaim
	}
	ls, err := renew(ctx, k.ls)
	switch {
	case err == nil:
		k.ls, k.outage = ls, false
		k.expires.Store(ls.Expires.UnixNano())
		return nil
	case errors.Is(err, ErrLost):
		return err
	case postgres.IsOutage(err):
		// Nobody can take the claim while the database is down: it stays
		// held one lease time past this attempt, which started in time.
		k.outage = true
		if until := start.Add(k.l.ttl).UnixNano(); until > k.expires.Load() {
			k.expires.Store(until)
		}
		return nil
	}
	// The database answered with an error: try again until the claim
	// expires.
	return nil
}

// check is Leases.Check of the claim, reclaiming it first when the last
// renewal could not reach the database (its stored expiry may have passed
// while the claim was held).
func (k *Keeper) check(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.Held() {
		return fmt.Errorf("the claim %s: %w", k.ls.Name, ErrLost)
	}
	if k.outage {
		ls, err := k.l.Reclaim(ctx, k.ls)
		if errors.Is(err, ErrLost) {
			k.gone.Store(true) // the heartbeat reports it at its next beat
		}
		if err != nil {
			return err
		}
		k.ls, k.outage = ls, false
		k.expires.Store(ls.Expires.UnixNano())
	}
	return k.l.Check(ctx, k.ls)
}

// ConflictError says a claim that must be unique is held by another live
// process: both are named.
type ConflictError struct {
	Name   string
	Holder string // the live process holding it
	Owner  string // this process
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s is claimed by process %s, which is alive (it renews its claim); this process is %s", e.Name, e.Holder, e.Owner)
}

// AcquireWait claims name like Acquire, but when another process holds it
// waits until the claim expires (at most about one lease time) and tries
// again: a holder that died leaves it, and it is taken. A holder that keeps
// renewing is alive, and AcquireWait returns a *ConflictError naming both
// processes.
func (l *Leases) AcquireWait(ctx context.Context, name, state string) (Lease, error) {
	ls, err := l.Acquire(ctx, name, state)
	var held *HeldError
	if !errors.As(err, &held) {
		return ls, err
	}
	// Past the expiry seen, a claim still held was renewed: its holder lives.
	t := l.clk.NewTimer(held.Expires.Sub(l.clk.Now()) + time.Millisecond)
	select {
	case <-ctx.Done():
		t.Stop()
		return Lease{}, ctx.Err()
	case <-t.C():
	}
	ls, err = l.Acquire(ctx, name, state)
	if errors.As(err, &held) {
		return Lease{}, &ConflictError{Name: name, Holder: held.Holder, Owner: l.owner}
	}
	return ls, err
}
