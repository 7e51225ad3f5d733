package table_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/conn"
)

// laterClock is the system clock moved on by a time the test sets: timers
// run in real time, and Now jumps ahead when the test says hours passed.
type laterClock struct {
	clock.Clock
	ahead atomic.Int64 // nanoseconds
}

func (c *laterClock) Now() time.Time { return c.Clock.Now().Add(time.Duration(c.ahead.Load())) }

// End-to-end encryption failing three times hours apart in a long session
// is rejoined three times, and the DM is told nothing: only rejoins within
// the last hour count against the limit.
func TestEndToEndFailuresHoursApartAreEachRejoined(t *testing.T) {
	clk := &laterClock{Clock: clock.Real()}
	var mu sync.Mutex
	var told []string
	var rv *rejoinVoice
	r := newRigWith(t, 0, nil, func(c *table.Config) {
		rv = &rejoinVoice{benchVoice: c.Voice.(*benchVoice)}
		c.Voice = rv
		c.Clock = clk
		c.Announce = func(s string) {
			mu.Lock()
			told = append(told, s)
			mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	send := func(e conn.Event) {
		select {
		case r.voice.events <- e:
		case <-ctx.Done():
			t.Fatal("the table does not read its voice events")
		}
	}
	for i := 1; i <= 3; i++ {
		send(conn.Event{Kind: conn.EventE2EEFailed, Err: errors.New("gave up")})
		// One more event through the unbuffered channel: the watch loop
		// has handled the failure before it.
		send(conn.Event{Kind: conn.EventE2EEEpoch})
		for rv.rejoins() < i {
			select {
			case <-ctx.Done():
				t.Fatalf("failure %d: rejoined %d times", i, rv.rejoins())
			case <-time.After(5 * time.Millisecond):
			}
		}
		clk.ahead.Add(int64(61 * time.Minute))
	}
	if _, err := r.s.Finish(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if rv.rejoins() != 3 || len(told) != 0 {
		t.Fatalf("rejoined %d times (want 3), told the DM %q (want nothing)", rv.rejoins(), told)
	}
}
