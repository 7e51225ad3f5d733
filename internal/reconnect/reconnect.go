package reconnect

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// Config configures a Reconnector. Only Dial is required.
type Config[C io.Closer] struct {
	// Dial opens a new connection. It should give up when ctx ends.
	Dial func(ctx context.Context) (C, error)
	// OnReconnect receives each connection Dial opened, once the lost one is
	// closed, so that its owner resumes its work (its state) on it. It runs
	// on the reconnect loop and must not call Stop.
	OnReconnect func(c C)
	// OnGiveUp is called when MaxAttempts dials in a row failed, with an
	// error wrapping ErrGaveUp and the last dial error. It runs on the
	// reconnect loop and must not call Stop.
	OnGiveUp func(err error)
	// Backoff shapes the delays (default 1 s doubling to 30 s, ±20 %).
	Backoff Backoff
	// MaxAttempts bounds the dials of one reconnect (default 10); a
	// negative value means no bound.
	MaxAttempts int
	// Clock is the time source (default the system clock).
	Clock clock.Clock
	// Rand returns uniform random numbers in [0, 1) for the jitter (default
	// math/rand/v2).
	Rand func() float64
	// Logger receives one line per failed dial (default slog.Default()).
	Logger *slog.Logger
}

// Stats count what a Reconnector did.
type Stats struct {
	// Reconnects is the number of connections Dial opened.
	Reconnects int
	// FailedDials is the number of dials that failed.
	FailedDials int
	// GiveUps is the number of times OnGiveUp was called.
	GiveUps int
}

// Reconnector replaces a lost connection. Its methods are safe for
// concurrent use.
type Reconnector[C io.Closer] struct {
	cfg    Config[C]
	notify chan struct{}

	mu      sync.Mutex
	conn    C
	hasConn bool
	stats   Stats
	cancel  context.CancelFunc
	done    chan struct{}
	stopped bool
}

// New returns a Reconnector for cfg; call Start to run it.
func New[C io.Closer](cfg Config[C]) (*Reconnector[C], error) {
	if cfg.Dial == nil {
		return nil, errNoDial
	}
	cfg.Backoff = cfg.Backoff.withDefaults()
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Reconnector[C]{cfg: cfg, notify: make(chan struct{}, 1)}, nil
}

// Use makes c the current connection, closing the previous one. Use it for
// a connection its owner opened itself, such as the first.
func (r *Reconnector[C]) Use(c C) {
	r.mu.Lock()
	old, had := r.conn, r.hasConn
	r.conn, r.hasConn = c, true
	r.mu.Unlock()
	if had {
		r.closeConn(old)
	}
}

// Conn returns the current connection, if there is one.
func (r *Reconnector[C]) Conn() (C, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conn, r.hasConn
}

// Stats returns the counts so far.
func (r *Reconnector[C]) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Start runs the reconnect loop until Stop is called or ctx ends. Calling
// it again does nothing.
func (r *Reconnector[C]) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil || r.stopped {
		return
	}
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go r.loop(ctx, r.done)
}

// NotifyDisconnect reports that the current connection is lost. It never
// blocks; notifications that arrive while a reconnect is under way are
// merged into it.
func (r *Reconnector[C]) NotifyDisconnect() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Stop interrupts any wait or dial, waits for the loop to end and closes
// the current connection. It is idempotent. It must not be called from
// OnReconnect or OnGiveUp.
func (r *Reconnector[C]) Stop() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.stopped = true
	cancel, done := r.cancel, r.done
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	r.mu.Lock()
	old, had := r.conn, r.hasConn
	var zero C
	r.conn, r.hasConn = zero, false
	r.mu.Unlock()
	if had {
		r.closeConn(old)
	}
}

func (r *Reconnector[C]) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.notify:
		}
		r.dropConn()
		if !r.reconnect(ctx) {
			return
		}
	}
}

// reconnect dials until it succeeds, gives up or ctx ends; it reports false
// when ctx ended.
func (r *Reconnector[C]) reconnect(ctx context.Context) bool {
	var lastErr error
	attempts := 0
	for n := 1; r.cfg.MaxAttempts < 0 || n <= r.cfg.MaxAttempts; n++ {
		t := r.cfg.Clock.NewTimer(r.cfg.Backoff.Delay(n, r.cfg.Rand()))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
		}
		attempts = n
		c, err := r.cfg.Dial(ctx)
		if ctx.Err() != nil {
			if err == nil {
				r.closeConn(c)
			}
			return false
		}
		if err != nil {
			lastErr = err
			r.mu.Lock()
			r.stats.FailedDials++
			r.mu.Unlock()
			r.cfg.Logger.Warn("reconnect attempt failed", "attempt", n, "max_attempts", r.cfg.MaxAttempts, "err", err)
			continue
		}
		r.mu.Lock()
		r.conn, r.hasConn = c, true
		r.stats.Reconnects++
		r.mu.Unlock()
		// Reports about the connection just replaced are stale.
		select {
		case <-r.notify:
		default:
		}
		if r.cfg.OnReconnect != nil {
			r.cfg.OnReconnect(c)
		}
		return true
	}
	r.mu.Lock()
	r.stats.GiveUps++
	r.mu.Unlock()
	err := fmt.Errorf("%w after %d attempts: %w", ErrGaveUp, attempts, lastErr)
	r.cfg.Logger.Error("reconnecting failed", "attempts", attempts, "err", lastErr)
	if r.cfg.OnGiveUp != nil {
		r.cfg.OnGiveUp(err)
	}
	return true
}

// dropConn closes the lost connection.
func (r *Reconnector[C]) dropConn() {
	r.mu.Lock()
	old, had := r.conn, r.hasConn
	var zero C
	r.conn, r.hasConn = zero, false
	r.mu.Unlock()
	if had {
		r.closeConn(old)
	}
}

func (r *Reconnector[C]) closeConn(c C) {
	if err := c.Close(); err != nil {
		r.cfg.Logger.Debug("closing a replaced connection", "err", err)
	}
}
