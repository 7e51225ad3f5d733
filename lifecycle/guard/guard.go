// Package guard keeps a voice session running through memory outages.
//
// A [Guard] wraps a campaign's session log (L1). While PostgreSQL answers it
// passes calls through. When a call fails because the database is
// unreachable, the guard becomes degraded: reads return empty results, and
// writes go to a durable local spool (append-only, fsynced, bounded) instead
// of failing. A health probe with jittered exponential backoff (a
// [reconnect.Reconnector]) notices when the database is back; the guard then
// replays the spool in order and leaves the degraded state once it is empty.
//
// # Exactly once
//
// Every entry gets an idempotency key before its first write attempt, so an
// entry whose write timed out after the database had committed it, and which
// was therefore spooled as well, is stored once: the session log ignores a
// repeated key. A crash during replay repeats at most the batch in flight,
// with the same effect. Session starts and ends are idempotent by nature.
//
// # Order
//
// While the spool holds anything, new writes join its end rather than going
// to the database, so entries reach the database in the order they were
// written.
//
// # Forgetting a speaker
//
// [Guard.Forget] takes a speaker's words out of everything the guard holds,
// while holding both its write lock and its replay lock, so that no write and
// no replay batch is in flight: the speaker is marked forgotten up to a time
// (writes and replays of their entries said until then are dropped from now
// on), their entries are taken out of the spool by an atomic rewrite
// ([spool.Spool.Rewrite]: the kept records get fresh checksums, the new log
// is fsynced and renamed over the old one), and the caller's erase of what
// the database holds runs. When the database is unreachable, a forget record
// (a tombstone) joins the spool instead, and its replay erases the speaker
// through Config.Forget, in order: before the writes that follow it, after
// the ones that precede it. So a spooled line never comes back after a
// forget, and nothing else is lost.
//
// # Continuity cards
//
// [Guard.PutCard] sends a continuity card through Config.PutCard the same
// way: spooled during an outage after the lines written before it, so a
// card raised while the database is down outlives the process; a forget
// takes the cards quoting the speaker out of the spool with their lines.
//
// # Shutdown
//
// [Guard.Drain] waits, within its context, for the spool to be replayed:
// it checks the database at once, replays if it answers, and otherwise waits
// for the guard's drained signal (the probe replays when the database is
// back). When the context ends first it returns a [*PendingError] naming
// the records and lines that wait and where; they stay on disk, and the next
// guard on the same directory replays them.
//
// Input the store would refuse (an entry without a session or a time) is
// rejected at once with an error wrapping [memory.ErrInvalid]; it is never
// spooled. A spooled write the database refuses on replay (for instance
// text PostgreSQL cannot store) is moved to "rejected.jsonl" in the spool
// directory and logged at error level, so that it does not block the
// writes after it. A full spool is an error wrapping [spool.ErrFull], logged at
// error level: the guard never drops a write silently.
package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Defaults of a Config.
const (
	DefaultWriteTimeout = 5 * time.Second
	DefaultProbeTimeout = 3 * time.Second
	DefaultReplayBatch  = 64
	// ForgetTimeout bounds erasing a speaker from the database (one
	// transaction over the campaign's lines, chunks and facts).
	ForgetTimeout = time.Minute
)

// Config configures a Guard. Store, Ping and SpoolDir are required.
type Config struct {
	// Store is the guarded session log.
	Store memory.SessionStore
	// Ping checks that the database answers; the health probe calls it.
	Ping func(ctx context.Context) error
	// SpoolDir holds the outage spool. Records left there by an earlier run
	// are replayed after Start.
	SpoolDir string
	// MaxSpoolBytes bounds the spool (default spool.DefaultMaxBytes).
	MaxSpoolBytes int64
	// OnSpoolCorrupt, when set, is told of each damaged spool record Open
	// skipped (for a metric such as metrics.SpoolQuarantined).
	OnSpoolCorrupt func(spool.Corruption)
	// Probe shapes the health probe's backoff (default 1 s doubling to
	// 30 s, ±20 %). The probe never gives up.
	Probe reconnect.Backoff
	// WriteTimeout bounds one database write or read (default 5 s); a
	// write that takes longer counts as an outage and is spooled, and so
	// does a read whose caller still waits (a read whose caller's own
	// deadline passed first returns that caller's error).
	WriteTimeout time.Duration
	// ProbeTimeout bounds one health check (default 3 s).
	ProbeTimeout time.Duration
	// IsOutage reports whether an error means the database is unreachable
	// rather than that it refused the request (default IsOutage).
	IsOutage func(error) bool
	// Clock and Rand drive the probe's backoff (defaults: system clock,
	// math/rand/v2).
	Clock clock.Clock
	Rand  func() float64
	// Logger receives state changes (default slog.Default()).
	Logger *slog.Logger
	// Forget, if set, erases a speaker's words from the database; it runs
	// when a forget record spooled during an outage is replayed (see
	// Guard.Forget). Without it, Forget fails while the database is
	// unreachable.
	Forget func(ctx context.Context, speakerID string) error
	// PutCard, if set, stores a continuity card (such as
	// access.Campaign.PutContinuityCard, which ignores a card stored
	// already); PutCard sends cards through it, spooling them during an
	// outage like lines. Without it, PutCard fails.
	PutCard func(ctx context.Context, card access.ContinuityCard) error
}

// Stats count what a Guard did.
type Stats struct {
	// Degradations is how often the guard became degraded.
	Degradations int
	// Spooled and Replayed count spool records written and replayed.
	Spooled, Replayed int
	// Pending is the number of records waiting in the spool.
	Pending int
}

// Guard is a memory.SessionStore that survives database outages. Its
// methods are safe for concurrent use.
type Guard struct {
	cfg   Config
	log   *slog.Logger
	spool *spool.Spool
	probe *reconnect.Reconnector[probeConn]

	degraded atomic.Bool
	// writeMu orders writes: a write either reaches the database or joins
	// the spool while holding it.
	writeMu sync.Mutex
	// replayMu is held by a replay batch from Peek to Advance, and by
	// Forget (before writeMu), so that Forget never rewrites the spool
	// under a batch in flight.
	replayMu sync.Mutex
	// forgot maps a forgotten speaker to the time up to which their
	// entries are dropped; written with replayMu and writeMu held.
	forgot map[string]time.Time

	statsMu sync.Mutex
	stats   Stats

	ctx     context.Context
	cancel  context.CancelFunc
	closeMu sync.Mutex
	closed  bool
	drained chan struct{} // closed and replaced when the spool empties
}

var _ memory.SessionStore = (*Guard)(nil)

// probeConn stands for a successful health check.
type probeConn struct{}

func (probeConn) Close() error { return nil }

// New opens the spool and returns a guard; call Start to run its probe.
func New(cfg Config) (*Guard, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("guard: Config.Store is required")
	case cfg.Ping == nil:
		return nil, errors.New("guard: Config.Ping is required")
	case strings.TrimSpace(cfg.SpoolDir) == "":
		return nil, errors.New("guard: Config.SpoolDir is required")
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.IsOutage == nil {
		cfg.IsOutage = IsOutage
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sp, err := spool.Open(cfg.SpoolDir, spool.Options{MaxBytes: cfg.MaxSpoolBytes, OnCorrupt: cfg.OnSpoolCorrupt, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	g := &Guard{cfg: cfg, log: cfg.Logger.With("component", "memory-guard"), spool: sp, drained: make(chan struct{})}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.probe, err = reconnect.New(reconnect.Config[probeConn]{
		Dial:        g.check,
		OnReconnect: func(probeConn) { g.replay() },
		Backoff:     cfg.Probe,
		MaxAttempts: -1,
		Clock:       cfg.Clock,
		Rand:        cfg.Rand,
		Logger:      g.log,
	})
	if err != nil {
		sp.Close()
		return nil, err
	}
	if n := sp.Len(); n > 0 {
		g.log.Warn("spooled writes from an earlier run wait for replay", "records", n, "spool", cfg.SpoolDir)
		g.degraded.Store(true)
	}
	return g, nil
}

// Start runs the health probe. Records left in the spool by an earlier run
// are replayed as soon as the database answers.
func (g *Guard) Start(ctx context.Context) {
	g.probe.Start(ctx)
	if g.degraded.Load() {
		g.probe.NotifyDisconnect()
	}
}

// Close stops the probe and closes the spool; records not yet replayed stay
// on disk for the next run. It is idempotent.
func (g *Guard) Close() error {
	g.closeMu.Lock()
	if g.closed {
		g.closeMu.Unlock()
		return nil
	}
	g.closed = true
	g.closeMu.Unlock()
	g.cancel()
	g.probe.Stop()
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	return g.spool.Close()
}

// IsDegraded reports whether the database is considered unreachable (or the
// spool is still being replayed).
func (g *Guard) IsDegraded() bool { return g.degraded.Load() }

// Stats returns the counts so far.
func (g *Guard) Stats() Stats {
	g.statsMu.Lock()
	s := g.stats
	g.statsMu.Unlock()
	s.Pending = g.spool.Len()
	return s
}

// WaitHealthy blocks until the guard is not degraded and its spool is
// empty, or ctx ends.
func (g *Guard) WaitHealthy(ctx context.Context) error {
	for {
		g.writeMu.Lock()
		ok := !g.degraded.Load() && g.spool.Len() == 0
		ch := g.drained
		g.writeMu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the memory guard to recover (%d records spooled): %w", g.spool.Len(), ctx.Err())
		}
	}
}

// PendingError is returned by Drain when the database did not come back in
// time: the spool keeps Records writes (Lines transcript lines among them)
// in Dir, for the next run to replay.
type PendingError struct {
	Records, Lines int
	Dir            string
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("the database is unreachable: %d lines (%d spooled writes) wait in %s and are replayed by the next run on the same state directory",
		e.Lines, e.Records, e.Dir)
}

// Drain waits until the spool has been replayed into the database, or ctx
// ends. It checks the database at once and replays if it answers;
// otherwise it waits for the drained signal of the probe's replay. When
// ctx ends first it returns a *PendingError (the records stay on disk).
func (g *Guard) Drain(ctx context.Context) error {
	tried := false
	for {
		g.writeMu.Lock()
		ok := !g.degraded.Load() && g.spool.Len() == 0
		ch := g.drained
		g.writeMu.Unlock()
		if ok {
			return nil
		}
		if !tried {
			tried = true
			if _, err := g.check(ctx); err == nil {
				g.replay()
				continue
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return g.pending()
		}
	}
}

// pending describes what waits in the spool.
func (g *Guard) pending() *PendingError {
	e := &PendingError{Dir: g.cfg.SpoolDir}
	recs, err := g.spool.Peek(0)
	if err != nil {
		e.Records = g.spool.Len()
		return e
	}
	e.Records = len(recs)
	for _, b := range recs {
		var r record
		if json.Unmarshal(b, &r) == nil {
			e.Lines += len(r.Entries)
		}
	}
	return e
}

// ForgetResult says what Forget did.
type ForgetResult struct {
	// Spooled is the number of the speaker's lines taken out of the spool
	// (not yet replayed, so never stored in the database).
	Spooled int
	// Deferred is set when the database was unreachable: the erase is a
	// forget record in the spool, replayed (through Config.Forget) when the
	// database is back.
	Deferred bool
}

// Forget takes a speaker's words said until before out of the guard: they
// are dropped from every later write and replay, taken out of the spool
// (rewritten atomically), and erase (the caller's deletion of what the
// database holds, such as access.Campaign.ForgetSpeaker) runs. When the
// database is unreachable, a forget record joins the spool instead and
// Config.Forget erases the speaker when it is replayed. Forget waits for a
// replay batch in flight to end, and writes wait while it runs.
func (g *Guard) Forget(ctx context.Context, speakerID string, before time.Time, erase func(ctx context.Context) error) (ForgetResult, error) {
	if strings.TrimSpace(speakerID) == "" {
		return ForgetResult{}, fmt.Errorf("%w: forgetting an empty speaker id", memory.ErrInvalid)
	}
	g.replayMu.Lock()
	defer g.replayMu.Unlock()
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	g.closeMu.Lock()
	closed := g.closed
	g.closeMu.Unlock()
	if closed {
		return ForgetResult{}, fmt.Errorf("forgetting speaker %s: %w", speakerID, spool.ErrClosed)
	}
	if g.forgot == nil {
		g.forgot = map[string]time.Time{}
	}
	if before.After(g.forgot[speakerID]) {
		g.forgot[speakerID] = before
	}
	var res ForgetResult
	var err error
	if res.Spooled, err = purge(g.spool, g.forgot); err != nil {
		return ForgetResult{}, fmt.Errorf("taking speaker %s out of the outage spool: %w", speakerID, err)
	}
	if res.Spooled > 0 {
		g.log.Info("a forgotten speaker's lines were taken out of the outage spool", "speaker", speakerID, "lines", res.Spooled)
	}
	if erase == nil {
		return res, nil
	}
	// While degraded the database is probably down: the attempt is bounded
	// like a write, since every write waits for it.
	limit := ForgetTimeout
	if g.degraded.Load() {
		limit = g.cfg.WriteTimeout
	}
	ectx, cancel := context.WithTimeout(ctx, limit)
	err = erase(ectx)
	cancel()
	if err == nil || !g.cfg.IsOutage(err) || ctx.Err() != nil {
		return res, err
	}
	if g.cfg.Forget == nil {
		return res, fmt.Errorf("forgetting speaker %s: the database is unreachable and the guard cannot queue the erase: %w", speakerID, err)
	}
	g.degrade(err)
	if err := g.spoolRecord(record{Op: opForget, Speaker: speakerID, At: before}); err != nil {
		return res, err
	}
	res.Deferred = true
	return res, nil
}

// ForgetSpooled is Forget for the spool in dir when no guard has it open
// (no session is running): the speaker's entries said until before are
// taken out of it (an atomic rewrite), erase runs, and when the database
// is unreachable a forget record joins the spool, for the next guard on
// dir to replay through its Config.Forget. A missing dir holds nothing. It
// fails with an error wrapping spool.ErrLocked while a guard has dir open.
func ForgetSpooled(ctx context.Context, dir, speakerID string, before time.Time, erase func(ctx context.Context) error) (ForgetResult, error) {
	if strings.TrimSpace(speakerID) == "" {
		return ForgetResult{}, fmt.Errorf("%w: forgetting an empty speaker id", memory.ErrInvalid)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if erase == nil {
			return ForgetResult{}, nil
		}
		return ForgetResult{}, erase(ctx)
	}
	sp, err := spool.Open(dir, spool.Options{})
	if err != nil {
		return ForgetResult{}, fmt.Errorf("opening the outage spool to forget speaker %s: %w", speakerID, err)
	}
	defer sp.Close()
	var res ForgetResult
	if res.Spooled, err = purge(sp, map[string]time.Time{speakerID: before}); err != nil {
		return ForgetResult{}, fmt.Errorf("taking speaker %s out of the outage spool %s: %w", speakerID, dir, err)
	}
	if erase == nil {
		return res, nil
	}
	err = erase(ctx)
	if err == nil || !IsOutage(err) || ctx.Err() != nil {
		return res, err
	}
	b, merr := json.Marshal(record{Op: opForget, Speaker: speakerID, At: before})
	if merr != nil {
		return res, merr
	}
	if aerr := sp.Append(b); aerr != nil {
		return res, fmt.Errorf("queueing the erase of speaker %s in the outage spool: %w (the database: %w)", speakerID, aerr, err)
	}
	res.Deferred = true
	return res, nil
}

// purge rewrites sp without the entries of the speakers in forgot said
// until they were forgotten; it returns how many entries it took out.
func purge(sp *spool.Spool, forgot map[string]time.Time) (int, error) {
	removed := 0
	_, err := sp.Rewrite(func(b []byte) ([]byte, error) {
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("decoding a spooled write: %w", err)
		}
		if r.Op == opCard {
			if cardForgotten(forgot, r) {
				return nil, nil
			}
			return b, nil
		}
		if r.Op == opPresence {
			// A forgotten player leaves the presence spooled before they
			// were forgotten (it is not counted as a line).
			players := dropForgottenPlayers(forgot, r.At, r.Players)
			if len(players) == len(r.Players) {
				return b, nil
			}
			r.Players = players
			return json.Marshal(r)
		}
		kept, n := dropForgotten(forgot, r.Entries)
		if n == 0 {
			return b, nil
		}
		removed += n
		if len(kept) == 0 {
			return nil, nil
		}
		r.Entries = kept
		return json.Marshal(r)
	})
	return removed, err
}

// dropForgotten returns es without the entries of forgotten speakers said
// until they were forgotten; g.writeMu or g.replayMu is held.
func (g *Guard) dropForgotten(es []memory.TranscriptEntry) ([]memory.TranscriptEntry, int) {
	return dropForgotten(g.forgot, es)
}

// dropForgotten returns es without the entries of the speakers in forgot
// said until they were forgotten, and how many it dropped.
func dropForgotten(forgot map[string]time.Time, es []memory.TranscriptEntry) ([]memory.TranscriptEntry, int) {
	if len(forgot) == 0 {
		return es, 0
	}
	var kept []memory.TranscriptEntry
	n := 0
	for i, e := range es {
		if at, ok := forgot[e.SpeakerID]; ok && e.SpeakerID != "" && !e.At.After(at) {
			if kept == nil {
				kept = append(make([]memory.TranscriptEntry, 0, len(es)), es[:i]...)
			}
			n++
			continue
		}
		if kept != nil {
			kept = append(kept, e)
		}
	}
	if n == 0 {
		return es, 0
	}
	return kept, n
}

// cardForgotten reports whether card record r quotes a speaker in forgot
// and was raised until they were forgotten.
func cardForgotten(forgot map[string]time.Time, r record) bool {
	if r.Card == nil || r.Card.SpeakerID == "" {
		return false
	}
	f, ok := forgot[r.Card.SpeakerID]
	return ok && !r.At.After(f)
}

// dropForgottenPlayers returns players without those forgotten at or
// after at.
func dropForgottenPlayers(forgot map[string]time.Time, at time.Time, players []string) []string {
	var kept []string
	for _, p := range players {
		if f, ok := forgot[p]; ok && !at.After(f) {
			continue
		}
		kept = append(kept, p)
	}
	return kept
}

// IsOutage is the default outage test: the store's own classification
// (memory/access.IsOutage, beside the PostgreSQL code): errors that say the
// database cannot be reached count; refusals of the request itself
// (constraint violations, invalid input, not found) do not.
func IsOutage(err error) bool { return access.IsOutage(err) }

// record is one spooled write.
type record struct {
	Op      string                   `json:"op"`
	Session string                   `json:"session,omitempty"`
	At      time.Time                `json:"at,omitzero"`
	Entries []memory.TranscriptEntry `json:"entries,omitempty"`
	// Speaker is the speaker a forget record erases.
	Speaker string `json:"speaker,omitempty"`
	// Players are the players present from At on (a presence record).
	Players []string `json:"players,omitempty"`
	// Split reports that the DM had split the party from At on (a
	// presence record). A record spooled by an older glyphoxa has no
	// field and replays as not split, as it was recorded.
	Split bool `json:"split,omitempty"`
	// Card is the continuity card of a card record (raised at At, quoting
	// a line of Speaker).
	Card *access.ContinuityCard `json:"card,omitempty"`
}

const (
	opEntries = "entries"
	opStart   = "start"
	opEnd     = "end"
	opForget  = "forget"
	// opPresence records who is present from At on (PresenceStore).
	opPresence = "presence"
	// opCard stores a continuity card (Config.PutCard).
	opCard = "card"
)

// PresenceStore is the optional capability of a Config.Store that records
// which players are present in a session from a time on, and whether the
// DM had split the party then (a *postgres.SessionLog). Presence records
// travel the same way as lines: spooled during an outage and replayed in
// order.
type PresenceStore interface {
	RecordPresence(ctx context.Context, sessionID string, at time.Time, players []string, split bool) error
}

// apply performs r against the store within WriteTimeout; for entries it
// reports how many were new.
func (g *Guard) apply(ctx context.Context, r record) (int, error) {
	limit := g.cfg.WriteTimeout
	if r.Op == opForget {
		limit = max(limit, ForgetTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	switch r.Op {
	case opEntries:
		return g.cfg.Store.WriteEntries(ctx, r.Entries)
	case opStart:
		return 0, g.cfg.Store.StartSession(ctx, r.Session, r.At)
	case opEnd:
		return 0, g.cfg.Store.EndSession(ctx, r.Session, r.At)
	case opForget:
		if g.cfg.Forget == nil {
			return 0, fmt.Errorf("%w: a spooled forget of speaker %s, and no Config.Forget to run it", memory.ErrInvalid, r.Speaker)
		}
		return 0, g.cfg.Forget(ctx, r.Speaker)
	case opPresence:
		ps, ok := g.cfg.Store.(PresenceStore)
		if !ok {
			return 0, fmt.Errorf("%w: a presence record, and a store that records no presence", memory.ErrInvalid)
		}
		return 0, ps.RecordPresence(ctx, r.Session, r.At, r.Players, r.Split)
	case opCard:
		if g.cfg.PutCard == nil || r.Card == nil {
			return 0, fmt.Errorf("%w: a continuity card record, and no Config.PutCard to store it", memory.ErrInvalid)
		}
		return 0, g.cfg.PutCard(ctx, *r.Card)
	}
	return 0, fmt.Errorf("unknown spool operation %q", r.Op)
}

// write sends r to the database, or to the spool while the database is
// unreachable or the spool not yet replayed. For entries it reports how
// many are new; spooled entries count as new.
func (g *Guard) write(ctx context.Context, r record) (int, error) {
	g.writeMu.Lock()
	defer g.writeMu.Unlock()
	if r.Op == opPresence {
		r.Players = dropForgottenPlayers(g.forgot, r.At, r.Players)
	}
	if r.Op == opCard && cardForgotten(g.forgot, r) {
		g.log.Info("a continuity card quoting a forgotten speaker was dropped", "card", r.Card.ID)
		return 0, nil
	}
	if r.Op == opEntries {
		var dropped int
		if r.Entries, dropped = g.dropForgotten(r.Entries); dropped > 0 {
			g.log.Info("lines of a forgotten speaker were dropped", "lines", dropped)
			if len(r.Entries) == 0 {
				return 0, nil
			}
		}
	}
	if !g.degraded.Load() && g.spool.Len() == 0 {
		// A caller giving up must not lose the write: it is spooled instead.
		n, err := g.apply(context.WithoutCancel(ctx), r)
		if err == nil || !g.cfg.IsOutage(err) {
			return n, err
		}
		g.degrade(err)
	}
	if err := g.spoolRecord(r); err != nil {
		return 0, err
	}
	return len(r.Entries), nil
}

func (g *Guard) spoolRecord(r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding a %s write for the spool: %w", r.Op, err)
	}
	if err := g.spool.Append(b); err != nil {
		g.log.Error("memory write LOST: the outage spool refused it", "op", r.Op, "session", r.Session,
			"entries", len(r.Entries), "err", err)
		return fmt.Errorf("spooling a %s write during a database outage: %w", r.Op, err)
	}
	g.statsMu.Lock()
	g.stats.Spooled++
	g.statsMu.Unlock()
	return nil
}

// degrade enters the degraded state (once) and wakes the probe.
func (g *Guard) degrade(cause error) {
	if g.degraded.CompareAndSwap(false, true) {
		g.statsMu.Lock()
		g.stats.Degradations++
		g.statsMu.Unlock()
		g.log.Warn("memory degraded: database unreachable; writes go to the spool, reads return nothing", "err", cause)
	}
	g.probe.NotifyDisconnect()
}

// check is the health probe's dial.
func (g *Guard) check(ctx context.Context) (probeConn, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.ProbeTimeout)
	defer cancel()
	if err := g.cfg.Ping(ctx); err != nil {
		return probeConn{}, fmt.Errorf("database health check: %w", err)
	}
	return probeConn{}, nil
}

// replay drains the spool into the database, in order; it runs on the
// probe's loop after a successful health check, and in Drain. Each batch
// runs under replayMu, so two replays, or a replay and Forget, take turns.
func (g *Guard) replay() {
	for g.ctx.Err() == nil {
		if !g.replayBatch() {
			return
		}
	}
}

// replayBatch replays the oldest records; it reports whether replay should
// go on.
func (g *Guard) replayBatch() bool {
	g.replayMu.Lock()
	defer g.replayMu.Unlock()
	recs, err := g.spool.Peek(DefaultReplayBatch)
	if err != nil {
		g.log.Error("reading the outage spool", "err", err)
		return false
	}
	if len(recs) == 0 {
		g.writeMu.Lock()
		defer g.writeMu.Unlock()
		if g.spool.Len() != 0 {
			return true
		}
		if g.degraded.Swap(false) {
			g.log.Info("memory recovered: spool replayed")
		}
		close(g.drained)
		g.drained = make(chan struct{})
		return false
	}
	for i, b := range recs {
		if g.ctx.Err() != nil {
			g.advance(i)
			return false
		}
		var r record
		if err := json.Unmarshal(b, &r); err != nil {
			// Records are checksummed; this is a bug, not a torn write.
			g.log.Error("undecodable spool record; stopping replay", "err", err)
			g.advance(i)
			return false
		}
		if r.Op == opEntries {
			// Forget took the speaker's records out of the spool; this
			// keeps any that reached it another way out of the database.
			var dropped int
			if r.Entries, dropped = g.dropForgotten(r.Entries); dropped > 0 && len(r.Entries) == 0 {
				continue
			}
		}
		if r.Op == opCard && cardForgotten(g.forgot, r) {
			continue
		}
		_, err := g.apply(g.ctx, r)
		if err != nil && r.Op == opEntries && len(r.Entries) > 1 && !g.cfg.IsOutage(err) {
			// One entry spoils the batch: store the others one by one.
			err = g.applyEach(r)
			if err == nil {
				g.statsMu.Lock()
				g.stats.Replayed++
				g.statsMu.Unlock()
				continue
			}
		}
		if err != nil {
			if g.ctx.Err() != nil || g.cfg.IsOutage(err) {
				g.advance(i)
				if g.ctx.Err() == nil {
					g.log.Warn("database failed again during replay", "err", err)
					g.probe.NotifyDisconnect()
				}
				return false
			}
			if qerr := g.quarantine(b, err); qerr != nil {
				g.log.Error("cannot set aside a spooled write the database refused; stopping replay", "err", qerr)
				g.advance(i)
				return false
			}
			g.log.Error("the database refused a spooled write; it is kept in the rejected file",
				"op", r.Op, "session", r.Session, "entries", len(r.Entries),
				"file", filepath.Join(g.cfg.SpoolDir, rejectedFile), "err", err)
		}
		g.statsMu.Lock()
		g.stats.Replayed++
		g.statsMu.Unlock()
	}
	if err := g.spool.Advance(len(recs)); err != nil {
		g.log.Error("advancing the outage spool", "err", err)
		return false
	}
	return true
}

// advance consumes the n records of a batch that were replayed.
func (g *Guard) advance(n int) {
	if err := g.spool.Advance(n); err != nil {
		g.log.Error("advancing the outage spool", "err", err)
	}
}

// applyEach replays the entries of a refused batch one by one and sets
// aside those the database refuses; it returns the first outage error.
func (g *Guard) applyEach(r record) error {
	for _, e := range r.Entries {
		one := record{Op: opEntries, Session: r.Session, Entries: []memory.TranscriptEntry{e}}
		_, err := g.apply(g.ctx, one)
		if err == nil {
			continue
		}
		if g.ctx.Err() != nil || g.cfg.IsOutage(err) {
			return err
		}
		b, _ := json.Marshal(one)
		if qerr := g.quarantine(b, err); qerr != nil {
			return fmt.Errorf("setting aside a refused entry: %w", qerr)
		}
		g.log.Error("the database refused a spooled entry; it is kept in the rejected file", "session", e.SessionID,
			"key", e.IdempotencyKey, "file", filepath.Join(g.cfg.SpoolDir, rejectedFile), "err", err)
	}
	return nil
}

// rejectedFile holds, one JSON object a line, the spooled writes the
// database refused on replay.
const rejectedFile = "rejected.jsonl"

func (g *Guard) quarantine(rec []byte, cause error) error {
	return spool.AppendJSONLine(filepath.Join(g.cfg.SpoolDir, rejectedFile), struct {
		Record json.RawMessage `json:"record"`
		Error  string          `json:"error"`
	}{rec, cause.Error()})
}

// newKey returns a fresh idempotency key.
func newKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "g-" + hex.EncodeToString(b[:])
}

func validEntry(e memory.TranscriptEntry) error {
	switch {
	case strings.TrimSpace(e.SessionID) == "":
		return fmt.Errorf("%w: transcript entry without a session id", memory.ErrInvalid)
	case e.At.IsZero():
		return fmt.Errorf("%w: transcript entry in session %q without a time", memory.ErrInvalid, e.SessionID)
	case e.Duration < 0:
		return fmt.Errorf("%w: transcript entry in session %q has a negative duration %v", memory.ErrInvalid, e.SessionID, e.Duration)
	}
	return nil
}

// WriteEntry stores e, or spools it during an outage. It reports false only
// when the database said the entry's key was already written, or when e is
// a forgotten speaker's line said before Forget (it is dropped).
func (g *Guard) WriteEntry(ctx context.Context, e memory.TranscriptEntry) (bool, error) {
	n, err := g.WriteEntries(ctx, []memory.TranscriptEntry{e})
	return n == 1, err
}

// WriteEntries stores es atomically, or spools them during an outage. It
// reports how many were new; spooled entries count as new, the lines of
// forgotten speakers said before Forget are dropped and do not count.
func (g *Guard) WriteEntries(ctx context.Context, es []memory.TranscriptEntry) (int, error) {
	if len(es) == 0 {
		return 0, nil
	}
	es = append([]memory.TranscriptEntry(nil), es...)
	for i := range es {
		if err := validEntry(es[i]); err != nil {
			return 0, fmt.Errorf("entry %d: %w", i, err)
		}
		if es[i].IdempotencyKey == "" {
			es[i].IdempotencyKey = newKey()
		}
	}
	return g.write(ctx, record{Op: opEntries, Session: es[0].SessionID, Entries: es})
}

// RecordPresence records that the players present in session id are
// players from at on, and whether the DM had split the party (split), or
// spools the record during an outage (see PresenceStore). A store without
// the capability is an error wrapping memory.ErrInvalid.
func (g *Guard) RecordPresence(ctx context.Context, id string, at time.Time, players []string, split bool) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("%w: empty session id", memory.ErrInvalid)
	}
	if at.IsZero() {
		return fmt.Errorf("%w: presence in session %q without a time", memory.ErrInvalid, id)
	}
	if _, ok := g.cfg.Store.(PresenceStore); !ok {
		return fmt.Errorf("%w: the session log records no presence", memory.ErrInvalid)
	}
	_, err := g.write(ctx, record{Op: opPresence, Session: id, At: at, Players: append([]string{}, players...), Split: split})
	return err
}

// PutCard stores a continuity card through Config.PutCard, or spools it
// during an outage (replayed in order, after the lines written before
// it; the store ignores a card stored already, so a replay repeated after
// a crash stores it once). A card quoting a speaker forgotten after it was
// raised is dropped. Without Config.PutCard it is an error wrapping
// memory.ErrInvalid.
func (g *Guard) PutCard(ctx context.Context, card access.ContinuityCard) error {
	switch {
	case g.cfg.PutCard == nil:
		return fmt.Errorf("%w: the guard stores no continuity cards (Config.PutCard)", memory.ErrInvalid)
	case strings.TrimSpace(card.ID) == "":
		return fmt.Errorf("%w: a continuity card without an id", memory.ErrInvalid)
	case card.CreatedAt.IsZero():
		return fmt.Errorf("%w: continuity card %s without a time", memory.ErrInvalid, card.ID)
	}
	_, err := g.write(ctx, record{Op: opCard, Session: card.SessionID, At: card.CreatedAt, Card: &card})
	return err
}

// StartSession records a session, or spools the start during an outage.
func (g *Guard) StartSession(ctx context.Context, id string, at time.Time) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("%w: empty session id", memory.ErrInvalid)
	}
	if at.IsZero() {
		at = time.Now()
	}
	_, err := g.write(ctx, record{Op: opStart, Session: id, At: at})
	return err
}

// EndSession marks a session as ended, or spools the end during an outage.
func (g *Guard) EndSession(ctx context.Context, id string, at time.Time) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("%w: empty session id", memory.ErrInvalid)
	}
	if at.IsZero() {
		at = time.Now()
	}
	_, err := g.write(ctx, record{Op: opEnd, Session: id, At: at})
	return err
}

// read runs a read unless degraded; an outage during it degrades the guard
// and yields the zero result. A read whose caller's context ended (its own
// deadline, a cancel) returns the caller's error and degrades nothing: a
// hung database is what outlives WriteTimeout while the caller still waits.
func read[T any](g *Guard, caller context.Context, what string, f func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if g.degraded.Load() {
		return zero, nil
	}
	ctx, cancel := context.WithTimeout(caller, g.cfg.WriteTimeout)
	defer cancel()
	v, err := f(ctx)
	if err != nil {
		if caller.Err() == nil && g.cfg.IsOutage(err) && !errors.Is(err, context.Canceled) {
			g.degrade(err)
			return zero, nil
		}
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// GetRecent returns recent entries, or nothing while degraded.
func (g *Guard) GetRecent(ctx context.Context, sessionID string, window time.Duration) ([]memory.TranscriptEntry, error) {
	return read(g, ctx, "reading recent entries", func(ctx context.Context) ([]memory.TranscriptEntry, error) {
		return g.cfg.Store.GetRecent(ctx, sessionID, window)
	})
}

// Entries returns a session's entries, or nothing while degraded.
func (g *Guard) Entries(ctx context.Context, sessionID string) ([]memory.TranscriptEntry, error) {
	return read(g, ctx, "reading entries", func(ctx context.Context) ([]memory.TranscriptEntry, error) {
		return g.cfg.Store.Entries(ctx, sessionID)
	})
}

// Search searches the session log, or finds nothing while degraded.
func (g *Guard) Search(ctx context.Context, query string, o memory.SearchOpts) ([]memory.EntryHit, error) {
	return read(g, ctx, "searching the session log", func(ctx context.Context) ([]memory.EntryHit, error) {
		return g.cfg.Store.Search(ctx, query, o)
	})
}

// Sessions lists sessions, or none while degraded.
func (g *Guard) Sessions(ctx context.Context) ([]memory.Session, error) {
	return read(g, ctx, "listing sessions", func(ctx context.Context) ([]memory.Session, error) {
		return g.cfg.Store.Sessions(ctx)
	})
}

// AmendEntry corrects the text of a recorded entry (memory.EntryAmender)
// when the guarded store can. While degraded, or when the entry still
// waits in the outage spool, it fails (memory.ErrUnavailable,
// memory.ErrNotFound): an amendment is not spooled, and the line keeps the
// text it was recorded with.
func (g *Guard) AmendEntry(ctx context.Context, sessionID, key, text string) (bool, error) {
	a, ok := g.cfg.Store.(memory.EntryAmender)
	if !ok {
		return false, fmt.Errorf("amending entry %q: the session log cannot amend entries: %w", key, errors.ErrUnsupported)
	}
	if g.degraded.Load() {
		return false, fmt.Errorf("amending entry %q: %w", key, memory.ErrUnavailable)
	}
	actx, cancel := context.WithTimeout(ctx, g.cfg.WriteTimeout)
	defer cancel()
	changed, err := a.AmendEntry(actx, sessionID, key, text)
	if err != nil {
		if ctx.Err() == nil && g.cfg.IsOutage(err) && !errors.Is(err, context.Canceled) {
			g.degrade(err)
		}
		return false, err
	}
	return changed, nil
}
