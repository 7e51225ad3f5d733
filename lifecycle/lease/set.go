package lease

import (
	"context"
	"errors"
	"sync"
)

// Set holds the claims a process took, each renewed by its own Keeper:
// the guilds it answers, for instance. Its methods are safe for concurrent
// use; Close stops every heartbeat.
type Set struct {
	l    *Leases
	lost func(name string, err error)

	mu     sync.Mutex
	held   map[string]*Keeper
	closed bool
}

// NewSet returns an empty set of claims of l. lost (which may be nil) is
// called, once per loss and on no lock of the set, when a held claim is
// lost to another process; the claim is out of the set by then.
func (l *Leases) NewSet(lost func(name string, err error)) *Set {
	return &Set{l: l, lost: lost, held: map[string]*Keeper{}}
}

// Leases are the claims the set takes from.
func (s *Set) Leases() *Leases { return s.l }

// Claim reports whether this process holds name, taking it when nobody
// does (or its holder let it expire). It is false, with no error, when
// another process holds it.
func (s *Set) Claim(ctx context.Context, name string) (bool, error) {
	ok, _, err := s.claim(ctx, name)
	return ok, err
}

// Take is Claim that also returns the work a claim carries when this call
// took it (the state its previous holder left); it is empty when the set
// held the claim already.
func (s *Set) Take(ctx context.Context, name string) (ok bool, state string, err error) {
	return s.claim(ctx, name)
}

func (s *Set) claim(ctx context.Context, name string) (bool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, "", errors.New("lease: the claims are closed (shutting down)")
	}
	if k, ok := s.held[name]; ok {
		// Past its expiry the claim is lost, whether or not the heartbeat
		// has noticed (Keeper.Held): this process no longer answers for it.
		return k.Held(), "", nil
	}
	ls, err := s.l.Acquire(ctx, name, "")
	var held *HeldError
	if errors.As(err, &held) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	var k *Keeper
	k = s.l.Keep(ls, func(err error) {
		s.mu.Lock()
		mine := s.held[name] == k
		if mine {
			delete(s.held, name)
		}
		s.mu.Unlock()
		if mine && s.lost != nil {
			s.lost(name, err)
		}
	})
	s.held[name] = k
	return true, ls.State, nil
}

// Holds reports whether the set holds name as far as the process knows
// without asking the database (Keeper.Held): it took the claim, and the
// claim was neither lost nor released nor let expire on the clock.
func (s *Set) Holds(name string) bool {
	s.mu.Lock()
	k, ok := s.held[name]
	s.mu.Unlock()
	return ok && k.Held()
}

// Holder returns the Keeper.Held of name's claim as the set holds it now,
// for a writer that asks before each write and must not wait on the set's
// lock (a claim being taken holds it for a round trip). A later claim of
// the same name (taken again after a loss) is another claim: the function
// returned for this one stays false. It always returns false when the set
// does not hold name now.
func (s *Set) Holder(name string) func() bool {
	s.mu.Lock()
	k, ok := s.held[name]
	s.mu.Unlock()
	if !ok {
		return func() bool { return false }
	}
	return k.Held
}

// Check asks the database whether the set still holds name: nil when its
// token is current and it has not expired, an error wrapping ErrLost when
// it does not (or the set never held it), another error when the database
// cannot tell. Unlike Holds, it sees a loss before the heartbeat does. A
// claim held through a database outage is renewed first (Leases.Reclaim).
func (s *Set) Check(ctx context.Context, name string) error {
	s.mu.Lock()
	k, ok := s.held[name]
	s.mu.Unlock()
	if !ok {
		return ErrLost
	}
	return k.check(ctx)
}

// SetState records the work a held claim resumes; it returns ErrLost when
// the set does not hold it.
func (s *Set) SetState(ctx context.Context, name, state string) error {
	s.mu.Lock()
	k, ok := s.held[name]
	s.mu.Unlock()
	if !ok {
		return ErrLost
	}
	return k.SetState(ctx, state)
}

// Release gives a claim up (see Keeper.Release); a claim not held is
// nothing to release.
func (s *Set) Release(ctx context.Context, name string, keepState bool) error {
	s.mu.Lock()
	k, ok := s.held[name]
	delete(s.held, name)
	s.mu.Unlock()
	if !ok {
		return nil
	}
	return k.Release(ctx, keepState)
}

// Close releases every claim, keeping their work for another process to
// resume when keepState is true, and refuses new ones.
func (s *Set) Close(ctx context.Context, keepState bool) error {
	s.mu.Lock()
	s.closed = true
	held := s.held
	s.held = map[string]*Keeper{}
	s.mu.Unlock()
	var errs []error
	for _, k := range held {
		errs = append(errs, k.Release(ctx, keepState))
	}
	return errors.Join(errs...)
}
