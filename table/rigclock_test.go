package table_test

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// rigClock is the rig's time, the table's clock in the rig: the system
// clock, except that it stands still while the rig sends a player's line
// and then moves on by the line's length at once (hold), as the scene
// player's clock does. The rig stamps each packet with its arrival in
// this time, one every 20 ms as Discord delivers them, and the lanes'
// ticks, which end an utterance after its silence, run on it: the end of
// speech is decided in the rig's time, so a sender descheduled in the
// middle of a line (a loaded machine) is not taken for a player who fell
// silent, and a line sent at once is not cut by the rate limit.
type rigClock struct {
	mu      sync.Mutex
	held    bool
	heldAt  time.Time     // the rig's time while held
	offset  time.Duration // the rig's time less the system clock's
	changed chan struct{} // closed and replaced when the clock stops or starts
}

var _ clock.Clock = (*rigClock)(nil)

func newRigClock() *rigClock {
	return &rigClock{changed: make(chan struct{})}
}

// Now is the rig's time.
func (c *rigClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked(time.Now())
}

func (c *rigClock) nowLocked(sys time.Time) time.Time {
	if c.held {
		return c.heldAt
	}
	return sys.Add(c.offset)
}

// hold stops the clock and returns the time it stands at; release starts
// it again, moved on by d. Holds do not nest: the rig sends one line at a
// time.
func (c *rigClock) hold() (at time.Time, release func(d time.Duration)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.heldAt = c.nowLocked(time.Now())
	c.held = true
	close(c.changed)
	c.changed = make(chan struct{})
	return c.heldAt, func(d time.Duration) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.offset = c.heldAt.Add(d).Sub(time.Now())
		c.held = false
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// NewTimer returns a timer that fires when the rig's time has moved on by
// d. Its goroutine ends when it fires or is stopped.
func (c *rigClock) NewTimer(d time.Duration) clock.Timer {
	t := &rigTimer{c: make(chan time.Time, 1), stop: make(chan struct{})}
	go t.run(c, c.Now().Add(d))
	return t
}

type rigTimer struct {
	c    chan time.Time
	stop chan struct{}
	done atomic.Bool // fired or stopped
}

func (t *rigTimer) run(c *rigClock, at time.Time) {
	for {
		c.mu.Lock()
		now, held, changed := c.nowLocked(time.Now()), c.held, c.changed
		c.mu.Unlock()
		if held {
			select {
			case <-changed:
				continue
			case <-t.stop:
				return
			}
		}
		if !now.Before(at) {
			if t.done.CompareAndSwap(false, true) {
				t.c <- now
			}
			return
		}
		w := time.NewTimer(at.Sub(now))
		select {
		case <-w.C:
		case <-changed: // held, or moved on past at
			w.Stop()
		case <-t.stop:
			w.Stop()
			return
		}
	}
}

func (t *rigTimer) C() <-chan time.Time { return t.c }

func (t *rigTimer) Stop() bool {
	if t.done.CompareAndSwap(false, true) {
		close(t.stop)
		return true
	}
	return false
}
