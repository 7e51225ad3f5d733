package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Keeper is the heartbeat of a held claim: it renews it every third of
// the lease time until Stop or Release, and calls its lost function, once,
// when the claim is lost (a renewal says so, or renewals failed until the
// claim expired). Whoever calls Keep owns it and stops it.
type Keeper struct {
	l    *Leases
	lost func(error)

	mu sync.Mutex
	ls Lease

	// Read by Held without the lock, which a renewal holds for a round
	// trip: the expiry of the last renewal (Unix nanoseconds) and whether
	// the claim was lost or released.
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
// released, and the expiry of its last renewal is still ahead on the
// clock. Past that expiry the claim is lost even if the heartbeat has not
// noticed yet (a process that stalled past its lease time and woke up, or
// whose renewals failed): no renewal can succeed any more (Renew requires
// an unexpired claim) and another process may have taken it. Whoever
// writes for the claim asks Held before each write; this is the one place
// that rule lives.
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
		ctx, cancel := context.WithTimeout(context.Background(), every)
		k.mu.Lock()
		ls, err := k.l.Renew(ctx, k.ls)
		if err == nil {
			k.ls = ls
			k.expires.Store(ls.Expires.UnixNano())
		}
		expires := k.ls.Expires
		k.mu.Unlock()
		cancel()
		switch {
		case err == nil:
			continue
		case errors.Is(err, ErrLost):
		case !k.l.clk.Now().Before(expires):
			err = fmt.Errorf("%w: renewals failed until it expired: %w", ErrLost, err)
		default:
			continue // try again; the claim still runs
		}
		k.gone.Store(true)
		if k.lost != nil {
			k.lost(err)
		}
		return
	}
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
