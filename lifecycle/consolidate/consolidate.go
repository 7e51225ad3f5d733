// Package consolidate writes a session's conversation to the session log
// (L1) exactly once.
//
// A [Consolidator] takes each conversation message as it is said and
// appends its utterance to a local journal (a [spool.Spool], fsynced)
// before Add returns; synthetic summary messages are skipped. Periodically
// (by default every 30 minutes), on ConsolidateNow (before summarising, at
// the end of a session, on graceful shutdown) it flushes the journal to the
// session log in batches. The journal's head is the write cursor: it moves
// past a batch only once the batch is stored.
//
// Every entry gets an idempotency key when it is journaled. After a crash,
// a new Consolidator on the same journal flushes what was not yet stored;
// a batch that was stored but whose cursor move was lost is written again
// and ignored by the session log, so no entry is written twice and none is
// lost.
package consolidate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/glyphoxa/glyphoxa/lifecycle/clock"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
)

// Defaults of a Config.
const (
	DefaultInterval  = 30 * time.Minute
	DefaultBatchSize = 100
)

// Store is what a Consolidator needs from the session log.
type Store interface {
	// WriteEntries stores entries atomically; entries whose idempotency key
	// is already stored are skipped.
	WriteEntries(ctx context.Context, es []memory.TranscriptEntry) (int, error)
}

// Config configures a Consolidator. Store and JournalDir are required.
type Config struct {
	Store Store
	// JournalDir holds the journal. Entries a crashed run left there are
	// flushed by the next ConsolidateNow.
	JournalDir string
	// MaxJournalBytes bounds the journal (default spool.DefaultMaxBytes).
	MaxJournalBytes int64
	// Interval between periodic flushes (default 30 minutes; negative for
	// none).
	Interval time.Duration
	// BatchSize is the number of entries per write (default 100).
	BatchSize int
	// IsRefusal reports whether a write error means the session log refuses
	// the entry itself (bad data) rather than being unavailable (default
	// IsRefusal). A refused entry is moved to the file "rejected.jsonl" in
	// JournalDir and logged, so that it does not block the entries after it.
	IsRefusal func(error) bool
	// Clock drives the periodic flush (default the system clock).
	Clock clock.Clock
	// Logger receives flush failures (default slog.Default()).
	Logger *slog.Logger
}

// Consolidator flushes conversation messages to the session log. Its
// methods are safe for concurrent use.
type Consolidator struct {
	cfg     Config
	log     *slog.Logger
	journal *spool.Spool

	flushMu  sync.Mutex // one flush at a time
	mu       sync.Mutex
	written  int // entries stored (new or already present) by this Consolidator
	skipped  int // summary messages skipped
	rejected int // entries the session log refused
	cancel   context.CancelFunc
	done     chan struct{}
	closed   bool
}

// New opens the journal in cfg.JournalDir and returns a Consolidator.
func New(cfg Config) (*Consolidator, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("consolidate: Config.Store is required")
	case strings.TrimSpace(cfg.JournalDir) == "":
		return nil, errors.New("consolidate: Config.JournalDir is required")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.IsRefusal == nil {
		cfg.IsRefusal = IsRefusal
	}
	j, err := spool.Open(cfg.JournalDir, spool.Options{MaxBytes: cfg.MaxJournalBytes})
	if err != nil {
		return nil, fmt.Errorf("consolidate: opening the journal: %w", err)
	}
	c := &Consolidator{cfg: cfg, log: cfg.Logger.With("component", "consolidator"), journal: j}
	if n := j.Len(); n > 0 {
		c.log.Info("journal holds entries not yet in the session log", "entries", n, "journal", cfg.JournalDir)
	}
	return c, nil
}

// Add journals the utterance of msg; it is durable when Add returns. A
// summary message is skipped. An entry without an idempotency key gets one.
func (c *Consolidator) Add(ctx context.Context, msg contextmgr.Message) error {
	if msg.Summary {
		c.mu.Lock()
		c.skipped++
		c.mu.Unlock()
		return nil
	}
	e := msg.Entry
	switch {
	case strings.TrimSpace(e.SessionID) == "":
		return fmt.Errorf("%w: message %q has no session id", memory.ErrInvalid, abbreviate(msg.Content))
	case e.At.IsZero():
		return fmt.Errorf("%w: message %q in session %q has no time", memory.ErrInvalid, abbreviate(msg.Content), e.SessionID)
	}
	if e.IdempotencyKey == "" {
		e.IdempotencyKey = NewKey(e.SessionID)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding entry of session %q for the journal: %w", e.SessionID, err)
	}
	if err := c.journal.Append(b); err != nil {
		c.log.Error("cannot journal an utterance", "session", e.SessionID, "err", err)
		return fmt.Errorf("journaling an utterance of session %q: %w", e.SessionID, err)
	}
	return nil
}

// NewKey returns a fresh idempotency key for an entry of session.
func NewKey(session string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return session + "/" + hex.EncodeToString(b[:])
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// ConsolidateNow flushes every journaled entry to the session log, in
// order. On error the entries not stored stay journaled.
func (c *Consolidator) ConsolidateNow(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	for {
		recs, err := c.journal.Peek(c.cfg.BatchSize)
		if err != nil {
			return fmt.Errorf("reading the journal: %w", err)
		}
		if len(recs) == 0 {
			return nil
		}
		es := make([]memory.TranscriptEntry, len(recs))
		for i, b := range recs {
			if err := json.Unmarshal(b, &es[i]); err != nil {
				return fmt.Errorf("decoding journal record %d of the batch: %w", i, err)
			}
		}
		if _, err := c.cfg.Store.WriteEntries(ctx, es); err != nil {
			if !c.cfg.IsRefusal(err) {
				return fmt.Errorf("writing %d entries of session %q to the session log: %w", len(es), es[0].SessionID, err)
			}
			if err := c.writeOneByOne(ctx, es); err != nil {
				return err
			}
		}
		if err := c.journal.Advance(len(recs)); err != nil {
			return fmt.Errorf("moving the write cursor: %w", err)
		}
		c.mu.Lock()
		c.written += len(es)
		c.mu.Unlock()
	}
}

// writeOneByOne writes a batch the session log refused entry by entry,
// setting aside the entries it refuses.
func (c *Consolidator) writeOneByOne(ctx context.Context, es []memory.TranscriptEntry) error {
	for _, e := range es {
		_, err := c.cfg.Store.WriteEntries(ctx, []memory.TranscriptEntry{e})
		if err == nil {
			continue
		}
		if !c.cfg.IsRefusal(err) {
			return fmt.Errorf("writing an entry of session %q to the session log: %w", e.SessionID, err)
		}
		if qerr := c.quarantine(e, err); qerr != nil {
			return fmt.Errorf("setting aside an entry the session log refused (%v): %w", err, qerr)
		}
		c.mu.Lock()
		c.rejected++
		c.mu.Unlock()
		c.log.Error("the session log refused an utterance; it is kept in the rejected file", "session", e.SessionID,
			"key", e.IdempotencyKey, "file", filepath.Join(c.cfg.JournalDir, rejectedFile), "err", err)
	}
	return nil
}

// rejectedFile holds, one JSON object a line, the entries the session log
// refused.
const rejectedFile = "rejected.jsonl"

func (c *Consolidator) quarantine(e memory.TranscriptEntry, cause error) error {
	return spool.AppendJSONLine(filepath.Join(c.cfg.JournalDir, rejectedFile), struct {
		Entry memory.TranscriptEntry `json:"entry"`
		Error string                 `json:"error"`
	}{e, cause.Error()})
}

// IsRefusal is the default refusal test: invalid input, and PostgreSQL's
// data exceptions (class 22) and integrity violations (class 23).
func IsRefusal(err error) bool {
	if errors.Is(err, memory.ErrInvalid) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")
	}
	return false
}

// Rejected is the number of entries the session log refused.
func (c *Consolidator) Rejected() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rejected
}

// Flush flushes the journal; it matches contextmgr.Config.BeforeEvict so that
// messages reach the session log before a summary replaces them.
func (c *Consolidator) Flush(ctx context.Context, _ []contextmgr.Message) error {
	return c.ConsolidateNow(ctx)
}

// Pending is the number of journaled entries not yet stored.
func (c *Consolidator) Pending() int { return c.journal.Len() }

// Written is the write cursor: the entries this Consolidator has stored.
func (c *Consolidator) Written() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written
}

// Skipped is the number of summary messages skipped.
func (c *Consolidator) Skipped() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skipped
}

// Start runs the periodic flush until Close or until ctx ends. Calling it
// again, or with a negative Interval, does nothing.
func (c *Consolidator) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil || c.closed || c.cfg.Interval < 0 {
		return
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go c.loop(ctx, c.done)
}

func (c *Consolidator) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		t := c.cfg.Clock.NewTimer(c.cfg.Interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if err := c.ConsolidateNow(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("periodic consolidation failed; entries stay journaled", "pending", c.Pending(), "err", err)
		}
	}
}

// Close stops the periodic flush, flushes what is journaled and closes the
// journal. Entries it could not store stay journaled for the next run; the
// error says so. It is idempotent.
func (c *Consolidator) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	err := c.ConsolidateNow(ctx)
	if err != nil {
		err = fmt.Errorf("final consolidation (%d entries stay journaled in %s): %w", c.journal.Len(), c.cfg.JournalDir, err)
	}
	return errors.Join(err, c.journal.Close())
}
