package reconnect_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

// conn is a connection that records being closed.
type conn struct {
	id     int
	closed atomic.Bool
	mu     sync.Mutex
	got    []string // what its user sent on it
}

func (c *conn) Close() error {
	if c.closed.Swap(true) {
		return fmt.Errorf("conn %d closed twice", c.id)
	}
	return nil
}

func (c *conn) send(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, s)
}

func (c *conn) sent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

// dialer fails the first failures dials, then opens connections numbered
// from 2 (1 is the caller's first connection).
type dialer struct {
	failures int
	mu       sync.Mutex
	calls    int
	opened   []*conn
}

var errRefused = errors.New("connection refused")

func (d *dialer) dial(ctx context.Context) (*conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.calls <= d.failures {
		return nil, errRefused
	}
	c := &conn{id: len(d.opened) + 2}
	d.opened = append(d.opened, c)
	return c, nil
}

func (d *dialer) callCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

// stepUntil advances the fake clock through each armed timer until the
// reconnector has dialled want times.
func stepUntil(t *testing.T, clk *clocktest.Fake, d *dialer, want int) {
	t.Helper()
	ctx := ctxT(t)
	for n := d.callCount(); n < want; n = d.callCount() {
		if !clk.WaitCreated(ctx, n+1) || !clk.WaitTimers(ctx, 1) {
			t.Fatalf("no timer armed after %d dials", n)
		}
		clk.Advance(clk.Pending()[0])
		deadline := time.Now().Add(2 * time.Minute) // a hang guard: a loaded machine may take long
		for d.callCount() == n {
			if time.Now().After(deadline) {
				t.Fatalf("timer fired but dial %d did not happen", n+1)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func TestBackoffSchedule(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	d := &dialer{failures: 1000}
	gaveUp := make(chan error, 1)
	r, err := reconnect.New(reconnect.Config[*conn]{
		Dial:     d.dial,
		OnGiveUp: func(err error) { gaveUp <- err },
		Clock:    clk, Rand: func() float64 { return 0.5 }, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	first := &conn{id: 1}
	r.Use(first)
	r.Start(context.Background())
	defer r.Stop()

	r.NotifyDisconnect()
	stepUntil(t, clk, d, 10)
	select {
	case err := <-gaveUp:
		if !errors.Is(err, reconnect.ErrGaveUp) || !errors.Is(err, errRefused) {
			t.Fatalf("give-up error %v wraps neither ErrGaveUp nor the dial error", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("OnGiveUp was not called after 10 failed dials")
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30, 30, 30}
	got := clk.Created()
	if len(got) != len(want) {
		t.Fatalf("timers %v, want %d", got, len(want))
	}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Errorf("delay before attempt %d = %v, want %v", i+1, got[i], want[i]*time.Second)
		}
	}
	if !first.closed.Load() {
		t.Error("the lost connection was not closed")
	}
	if s := r.Stats(); s.FailedDials != 10 || s.GiveUps != 1 || s.Reconnects != 0 {
		t.Errorf("stats %+v", s)
	}
	if n := d.callCount(); n != 10 {
		t.Errorf("%d dials, want at most 10", n)
	}
	if _, ok := r.Conn(); ok {
		t.Error("a connection is current after giving up")
	}
}

func TestDelayJitter(t *testing.T) {
	b := reconnect.Backoff{}
	for _, tc := range []struct {
		attempt int
		r       float64
		want    time.Duration
	}{
		{1, 0.5, time.Second},
		{1, 0, 800 * time.Millisecond},
		{1, 0.999999, 1199999600 * time.Nanosecond},
		{3, 0, 3200 * time.Millisecond},
		{5, 0.75, 17600 * time.Millisecond},
		{6, 0, 24 * time.Second},
		{6, 0.99, 30 * time.Second}, // capped: never above Max
		{40, 0.5, 30 * time.Second},
		{0, 0.5, time.Second},
	} {
		if got := b.Delay(tc.attempt, tc.r); got != tc.want {
			t.Errorf("Delay(%d, %v) = %v, want %v", tc.attempt, tc.r, got, tc.want)
		}
	}
	custom := reconnect.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Multiplier: 3, Jitter: 0.1}
	if got := custom.Delay(3, 0.5); got != 900*time.Millisecond {
		t.Errorf("custom Delay(3) = %v, want 900ms", got)
	}
	if got := custom.Delay(4, 0.5); got != time.Second {
		t.Errorf("custom Delay(4) = %v, want the 1s cap", got)
	}
}

// session is a user of a connection whose state must survive reconnects.
type session struct {
	mu   sync.Mutex
	conn *conn
	seq  int
}

func (s *session) resume(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn = c
	c.send(fmt.Sprintf("resume seq=%d", s.seq))
}

func (s *session) say(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.conn.send(fmt.Sprintf("%d:%s", s.seq, msg))
}

func TestReconnectHandsOverState(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	d := &dialer{failures: 3}
	sess := &session{}
	reconnected := make(chan *conn, 1)
	r, err := reconnect.New(reconnect.Config[*conn]{
		Dial:        d.dial,
		OnReconnect: func(c *conn) { sess.resume(c); reconnected <- c },
		Clock:       clk, Rand: func() float64 { return 0.5 }, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	first := &conn{id: 1}
	sess.conn = first
	r.Use(first)
	r.Start(context.Background())
	defer r.Stop()

	sess.say("hello")
	sess.say("again")
	r.NotifyDisconnect()
	r.NotifyDisconnect() // merged into the same reconnect
	stepUntil(t, clk, d, 4)
	var second *conn
	select {
	case second = <-reconnected:
	case <-time.After(hangGuard):
		t.Fatal("OnReconnect was not called")
	}
	if !first.closed.Load() {
		t.Error("the old connection was not closed")
	}
	if second.closed.Load() {
		t.Error("the new connection is closed")
	}
	if c, ok := r.Conn(); !ok || c != second {
		t.Errorf("Conn() = %v, %v; want the new connection", c, ok)
	}
	sess.say("after")
	if got, want := second.sent(), []string{"resume seq=2", "3:after"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("new connection got %q, want %q", got, want)
	}
	if got := clk.Created(); fmt.Sprint(got) != fmt.Sprint([]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}) {
		t.Errorf("delays %v", got)
	}
	if s := r.Stats(); s.Reconnects != 1 || s.FailedDials != 3 {
		t.Errorf("stats %+v", s)
	}

	// A second loss starts a new schedule from the initial delay.
	r.NotifyDisconnect()
	stepUntil(t, clk, d, 5)
	select {
	case third := <-reconnected:
		if !second.closed.Load() || third.closed.Load() {
			t.Error("the second connection was not replaced cleanly")
		}
	case <-time.After(hangGuard):
		t.Fatal("second reconnect did not happen")
	}
	if got := clk.Created(); got[len(got)-1] != time.Second {
		t.Errorf("second reconnect waited %v first, want 1s", got[len(got)-1])
	}

	r.Stop()
	if c, _ := d.opened[len(d.opened)-1], 0; !c.closed.Load() {
		t.Error("Stop did not close the current connection")
	}
}

func TestWaitsForNotification(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	d := &dialer{}
	r, err := reconnect.New(reconnect.Config[*conn]{Dial: d.dial, Clock: clk, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	r.Use(&conn{id: 1})
	r.Start(context.Background())
	time.Sleep(50 * time.Millisecond)
	clk.Advance(time.Hour)
	time.Sleep(50 * time.Millisecond)
	if n := len(clk.Created()); n != 0 || d.callCount() != 0 {
		t.Errorf("without a notification the loop armed %d timers and dialled %d times", n, d.callCount())
	}
	r.Stop()
}

func TestStopDuringBackoff(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	d := &dialer{failures: 1000}
	r, err := reconnect.New(reconnect.Config[*conn]{Dial: d.dial, Clock: clk, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	r.NotifyDisconnect()
	stepUntil(t, clk, d, 2)
	if !clk.WaitTimers(ctxT(t), 1) {
		t.Fatal("no backoff timer armed")
	}
	stopped := make(chan struct{})
	go func() { r.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(hangGuard):
		t.Fatal("Stop did not interrupt the backoff wait")
	}
	if n := d.callCount(); n != 2 {
		t.Errorf("%d dials, want 2 (none after Stop)", n)
	}
	if p := clk.Pending(); len(p) != 0 {
		t.Errorf("timers still armed after Stop: %v", p)
	}
	r.Stop() // idempotent
}

func TestStopDuringDial(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	dialing := make(chan struct{})
	r, err := reconnect.New(reconnect.Config[*conn]{
		Dial: func(ctx context.Context) (*conn, error) {
			close(dialing)
			<-ctx.Done()
			return nil, ctx.Err()
		},
		OnReconnect: func(*conn) { t.Error("OnReconnect called after Stop") },
		OnGiveUp:    func(error) { t.Error("OnGiveUp called after Stop") },
		Clock:       clk, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	r.NotifyDisconnect()
	if !clk.WaitTimers(ctxT(t), 1) {
		t.Fatal("no timer")
	}
	clk.Advance(clk.Pending()[0]) // the delay is jittered around 1 s
	select {
	case <-dialing:
	case <-time.After(hangGuard):
		t.Fatal("the timer fired but no dial started")
	}
	done := make(chan struct{})
	go func() { r.Stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Stop did not interrupt the dial")
	}
}

func TestUnboundedAttempts(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	d := &dialer{failures: 25}
	ok := make(chan struct{})
	r, err := reconnect.New(reconnect.Config[*conn]{
		Dial: d.dial, MaxAttempts: -1,
		Backoff:     reconnect.Backoff{Initial: 500 * time.Millisecond, Max: 5 * time.Second},
		OnReconnect: func(*conn) { close(ok) },
		OnGiveUp:    func(error) { t.Error("gave up although attempts are unbounded") },
		Clock:       clk, Rand: func() float64 { return 0.5 }, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Start(context.Background())
	defer r.Stop()
	r.NotifyDisconnect()
	stepUntil(t, clk, d, 26)
	select {
	case <-ok:
	case <-time.After(hangGuard):
		t.Fatal("no reconnect after 26 dials")
	}
	if got := clk.Created(); got[len(got)-1] != 5*time.Second {
		t.Errorf("last delay %v, want the 5s cap", got[len(got)-1])
	}
}

func TestNewNeedsDial(t *testing.T) {
	if _, err := reconnect.New(reconnect.Config[*conn]{}); err == nil {
		t.Fatal("New without Dial succeeded")
	}
}
