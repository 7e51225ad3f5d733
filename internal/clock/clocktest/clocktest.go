// Package clocktest provides a fake clock for tests of timing logic.
package clocktest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// Fake is a clock that only moves when the test advances it. It is safe for
// concurrent use.
type Fake struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*timer
	changed chan struct{} // closed and replaced whenever a timer is created
	created []time.Duration
}

var _ clock.Clock = (*Fake)(nil)

// NewFake returns a fake clock showing start.
func NewFake(start time.Time) *Fake {
	return &Fake{now: start, changed: make(chan struct{})}
}

// Now is the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// NewTimer returns a timer that fires when the clock has been advanced by d.
func (f *Fake) NewTimer(d time.Duration) clock.Timer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &timer{f: f, at: f.now.Add(d), c: make(chan time.Time, 1)}
	f.created = append(f.created, d)
	if d <= 0 {
		t.c <- f.now
		t.fired = true
	} else {
		f.timers = append(f.timers, t)
	}
	close(f.changed)
	f.changed = make(chan struct{})
	return t
}

// Advance moves the clock forward by d, firing every timer that comes due,
// in deadline order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	slices.SortStableFunc(f.timers, func(a, b *timer) int { return a.at.Compare(b.at) })
	keep := f.timers[:0]
	for _, t := range f.timers {
		if !t.at.After(f.now) {
			t.fired = true
			t.c <- t.at
			continue
		}
		keep = append(keep, t)
	}
	clear(f.timers[len(keep):])
	f.timers = keep
}

// Pending returns how long each armed timer still has to run, soonest first.
func (f *Fake) Pending() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]time.Duration, 0, len(f.timers))
	for _, t := range f.timers {
		out = append(out, t.at.Sub(f.now))
	}
	slices.Sort(out)
	return out
}

// Created returns the durations of every timer made so far, in order.
func (f *Fake) Created() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.created)
}

// WaitTimers blocks until at least n timers are armed, or ctx ends; it
// reports whether they are.
func (f *Fake) WaitTimers(ctx context.Context, n int) bool {
	for {
		f.mu.Lock()
		have, changed := len(f.timers), f.changed
		f.mu.Unlock()
		if have >= n {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
			// Timers are also removed by Stop; poll briefly to notice.
		}
	}
}

// WaitCreated blocks until at least n timers have been created in total, or
// ctx ends; it reports whether they have.
func (f *Fake) WaitCreated(ctx context.Context, n int) bool {
	for {
		f.mu.Lock()
		have, changed := len(f.created), f.changed
		f.mu.Unlock()
		if have >= n {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

type timer struct {
	f     *Fake
	at    time.Time
	c     chan time.Time
	fired bool
}

func (t *timer) C() <-chan time.Time { return t.c }

func (t *timer) Stop() bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	if t.fired {
		return false
	}
	for i, x := range t.f.timers {
		if x == t {
			t.f.timers = slices.Delete(t.f.timers, i, i+1)
			return true
		}
	}
	return false
}
