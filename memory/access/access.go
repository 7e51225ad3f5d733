// Package access is the one door to a campaign's memory for everything that
// reads it: the NPC turn and its tools, the DM console, the MCP server,
// slash commands, recaps and `glyphoxa ask`.
//
// A [Door] hands out [Campaign] handles, each bound to a [memory.Viewer] (the
// DM, a player or one NPC) when it is opened. The viewer decides in SQL what
// the handle returns (secret facts, DM-only attribute keys in every
// spelling, object values marked secret, pending and rejected facts for
// anyone but the DM; see memory/viewer.go for the one definition of
// secrecy), and a handle bound to a player or an NPC cannot be re-bound to
// see more. No method of a handle takes a "dm" flag: the role comes from
// the viewer alone.
//
// Every statement a handle sends passes the door's health gate, the
// MemoryGuard for reads: when a statement meets an outage (the database
// down, unreachable, shutting down or out of connections) the door becomes
// degraded and refuses further statements at once with an error wrapping
// [memory.ErrUnavailable], instead of letting every reader wait on a dead
// connection; a probe with jittered exponential backoff sees the database
// back and opens the door again. Session-log writes of a running table are
// spooled by lifecycle/guard on top of this, so no line is lost.
//
// The unscoped store (memory/postgres) is for the writers that own data:
// import, consolidation and extraction, wired in cmd/. No package outside
// memory/ and cmd/ imports memory/postgres.
package access

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Defaults of a Config.
const (
	// DefaultStatementTimeout bounds one statement of a reader: an NPC turn,
	// a console page or an MCP tool waits no longer on a database that has
	// stopped answering.
	DefaultStatementTimeout = 10 * time.Second
	// DefaultProbeTimeout bounds one health check.
	DefaultProbeTimeout = 3 * time.Second
)

// Config configures a Door. Store is required.
type Config struct {
	// Store is the PostgreSQL store the door reads through.
	Store *postgres.Store
	// StatementTimeout bounds one statement (default
	// DefaultStatementTimeout); a statement that takes longer counts as an
	// outage. A statement whose caller's own deadline passes first (an
	// NPC's tool budget, a turn's timeout) does not: its error wraps
	// context.DeadlineExceeded, not memory.ErrUnavailable, and the door
	// stays open.
	StatementTimeout time.Duration
	// ProbeTimeout bounds one health check (default DefaultProbeTimeout).
	ProbeTimeout time.Duration
	// Probe shapes the health probe's backoff (default 1 s doubling to
	// 30 s, ±20 %). The probe never gives up.
	Probe reconnect.Backoff
	// Clock and Rand drive the probe's backoff (defaults: system clock,
	// math/rand/v2).
	Clock clock.Clock
	Rand  func() float64
	// Logger receives state changes (default slog.Default()).
	Logger *slog.Logger
}

// Door opens viewer-bound, guarded handles on campaigns. It is safe for
// concurrent use.
type Door struct {
	store   *postgres.Store
	cfg     Config
	log     *slog.Logger
	probe   *reconnect.Reconnector[probeConn]
	started atomic.Bool

	degraded atomic.Bool
	mu       sync.Mutex
	since    time.Time // when the door became degraded
	checked  time.Time // the last recheck
	cause    error
	outages  int
	closed   bool
}

// probeConn stands for a successful health check.
type probeConn struct{}

func (probeConn) Close() error { return nil }

// New returns a door on cfg.Store; call Start to run its health probe and
// Close to stop it.
func New(cfg Config) (*Door, error) {
	if cfg.Store == nil {
		return nil, errors.New("access: Config.Store is required")
	}
	if cfg.StatementTimeout <= 0 {
		cfg.StatementTimeout = DefaultStatementTimeout
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	d := &Door{store: cfg.Store, cfg: cfg, log: cfg.Logger.With("component", "memory-door")}
	var err error
	d.probe, err = reconnect.New(reconnect.Config[probeConn]{
		Dial:        d.check,
		OnReconnect: func(probeConn) { d.recovered() },
		Backoff:     cfg.Probe,
		MaxAttempts: -1,
		Clock:       cfg.Clock,
		Rand:        cfg.Rand,
		Logger:      d.log,
	})
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return d, nil
}

// Start runs the health probe until Close or ctx ends. Until Start, a
// degraded door stays degraded until a successful [Door.Ping].
func (d *Door) Start(ctx context.Context) {
	d.started.Store(true)
	d.probe.Start(ctx)
	if d.degraded.Load() {
		d.probe.NotifyDisconnect()
	}
}

// Close stops the health probe. Handles keep working; an outage then stays
// until a successful Ping. It is idempotent and does not close the store.
func (d *Door) Close() error {
	d.mu.Lock()
	closed := d.closed
	d.closed = true
	d.mu.Unlock()
	if !closed {
		d.probe.Stop()
	}
	return nil
}

// Open returns campaign id's memory bound to viewer v and guarded by the
// door. A campaign that does not exist is created for the DM (the DM's
// commands start new campaigns) and is an error wrapping memory.ErrNotFound
// for anyone else, naming no other campaign. An outage while opening (the
// statement timeout included) is an error wrapping memory.ErrUnavailable,
// and degrades the door.
func (d *Door) Open(ctx context.Context, id string, v memory.Viewer) (*Campaign, error) {
	if err := v.Validate(); err != nil {
		return nil, fmt.Errorf("opening campaign %s: %w", memory.Quote(id, 40), err)
	}
	if err := memory.ValidateCampaignID(id); err != nil {
		return nil, err
	}
	if err := d.recheck(ctx); err != nil {
		return nil, fmt.Errorf("opening campaign %q: %w", id, err)
	}
	var (
		pc  *postgres.Campaign
		err error
	)
	// Bounded like every statement behind the door: a database that has
	// stopped answering is an outage after StatementTimeout, not a page or
	// a tool call that waits forever.
	sctx, cancel := context.WithTimeout(ctx, d.cfg.StatementTimeout)
	defer cancel()
	if v.Role == memory.RoleDM {
		pc, err = d.store.Campaign(sctx, id)
	} else {
		pc, err = d.store.ExistingCampaign(sctx, id)
	}
	switch {
	case err == nil:
	case postgres.IsOutageFor(ctx, err):
		d.Failed(err)
		if !errors.Is(err, memory.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", memory.ErrUnavailable, err)
		}
		return nil, fmt.Errorf("opening campaign %q: %w", id, err)
	case errors.Is(err, memory.ErrNotFound):
		// The store's error lists the known campaigns: for the DM only.
		return nil, fmt.Errorf("campaign %q has no memory yet: %w", id, memory.ErrNotFound)
	default:
		return nil, err
	}
	pc, err = pc.Through(d).As(v)
	if err != nil {
		return nil, err
	}
	return &Campaign{pc: pc, door: d}, nil
}

// RecheckEvery is how often, at most, opening a handle on a degraded door
// checks the database itself instead of waiting for the probe: a page, a
// command or a session that starts when the database is back works at once,
// and a flood of requests in an outage costs one check a second.
const RecheckEvery = time.Second

// recheck returns nil when the door is open; on a degraded door it checks
// the database (at most once per RecheckEvery) and returns the door's
// UnavailableError if it is still down.
func (d *Door) recheck(ctx context.Context) error {
	if !d.degraded.Load() {
		return nil
	}
	now := d.cfg.Clock.Now()
	d.mu.Lock()
	due := now.Sub(d.checked) >= RecheckEvery
	if due {
		d.checked = now
	}
	d.mu.Unlock()
	if due {
		if _, err := d.check(ctx); err == nil {
			d.recovered()
			return nil
		}
	}
	return d.Enter()
}

// Campaigns lists the campaign ids. An outage (the statement timeout
// included) is an error wrapping memory.ErrUnavailable, and degrades the
// door.
func (d *Door) Campaigns(ctx context.Context) ([]string, error) {
	var ids []string
	err := d.guard(ctx, "listing campaigns", func(ctx context.Context) (err error) {
		ids, err = d.store.Campaigns(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// Dimensions is the embedding dimension of the semantic index.
func (d *Door) Dimensions() int { return d.store.Dimensions() }

// Ping checks that the database answers. A successful ping opens a degraded
// door at once; a failed one degrades it, unless the caller's ctx ended
// first (a memory guard closed while its probe pinged: the database was
// not found down). The memory guard of a running table pings through it,
// so a recovered session log reopens the door too.
func (d *Door) Ping(ctx context.Context) error {
	if _, err := d.check(ctx); err != nil {
		if postgres.IsOutageFor(ctx, err) {
			d.Failed(err)
		}
		return fmt.Errorf("%w: %w", memory.ErrUnavailable, err)
	}
	d.recovered()
	return nil
}

// Health is the door's state.
type Health struct {
	// Degraded is true while the database is considered unreachable.
	Degraded bool
	// Since is when the door became degraded.
	Since time.Time
	// Cause is the outage that degraded it.
	Cause error
	// Outages counts how often the door became degraded.
	Outages int
}

// Health reports whether the door is open or degraded, and since when.
func (d *Door) Health() Health {
	d.mu.Lock()
	defer d.mu.Unlock()
	return Health{Degraded: d.degraded.Load(), Since: d.since, Cause: d.cause, Outages: d.outages}
}

// Enter implements postgres.Gate: nil while the database answers, an error
// wrapping memory.ErrUnavailable while the door is degraded.
func (d *Door) Enter() error {
	if !d.degraded.Load() {
		return nil
	}
	d.mu.Lock()
	since, cause := d.since, d.cause
	d.mu.Unlock()
	return &UnavailableError{Since: since, Cause: cause}
}

// Failed implements postgres.Gate: an outage degrades the door and wakes
// the probe.
func (d *Door) Failed(err error) {
	if !d.degraded.CompareAndSwap(false, true) {
		return
	}
	d.mu.Lock()
	d.since, d.cause = d.cfg.Clock.Now(), err
	d.outages++
	d.mu.Unlock()
	d.log.Warn("memory degraded: the database cannot be reached; reads fail at once until it answers", "err", err)
	if d.started.Load() {
		d.probe.NotifyDisconnect()
	}
}

// Timeout implements postgres.Gate.
func (d *Door) Timeout() time.Duration { return d.cfg.StatementTimeout }

var _ postgres.Gate = (*Door)(nil)

func (d *Door) check(ctx context.Context) (probeConn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ProbeTimeout)
	defer cancel()
	if err := d.store.Ping(ctx); err != nil {
		return probeConn{}, fmt.Errorf("database health check: %w", err)
	}
	return probeConn{}, nil
}

func (d *Door) recovered() {
	if d.degraded.CompareAndSwap(true, false) {
		d.mu.Lock()
		since := d.since
		d.mu.Unlock()
		d.log.Info("memory recovered: the database answers again", "down_for", d.cfg.Clock.Now().Sub(since).Round(time.Millisecond))
	}
}

// UnavailableError is what a degraded door answers. It wraps
// memory.ErrUnavailable and the outage that degraded the door.
type UnavailableError struct {
	Since time.Time
	Cause error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%v (since %s)", memory.ErrUnavailable, e.Since.UTC().Format(time.TimeOnly))
}

func (e *UnavailableError) Unwrap() []error {
	if e.Cause == nil {
		return []error{memory.ErrUnavailable}
	}
	return []error{memory.ErrUnavailable, e.Cause}
}

// IsOutage reports whether err means the database could not be reached
// (see postgres.IsOutage); the memory guard spools a session-log write that
// meets one.
func IsOutage(err error) bool { return postgres.IsOutage(err) }
