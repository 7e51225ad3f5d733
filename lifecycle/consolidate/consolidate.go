// Package consolidate moves a live session into long-term memory while it
// is being played.
//
// Lines reach the session log (L1) as they are said, through the memory
// guard; a [Consolidator] is the one background worker that does the rest:
//
//   - Every IndexEvery (default 10 s), when lines were recorded since the
//     last pass, it brings the session's chunks in the semantic index (L2)
//     up to date, so that a line is findable by retrieval (recall,
//     /memory search, the NPCs' tools) within seconds, not after the session.
//   - On the same beat it persists the running summary when it changed, so a
//     crash loses no summary and recaps and later sessions can read it.
//   - Every Interval (default 30 min) it runs incremental fact extraction for
//     the lines so far, when an extractor is configured (an LLM).
//   - ConsolidateNow does all of it at once; Close stops the worker after a
//     last index and summary pass, so post-session processing only has the
//     tail left.
//
// Each step is a function of the Config, so that the worker knows nothing of
// PostgreSQL or of the LLM; a failing step is logged, counted and tried
// again on the next beat, and never stops the others.
package consolidate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// Defaults of a Config.
const (
	DefaultIndexEvery = 10 * time.Second
	DefaultInterval   = 30 * time.Minute
)

// Config configures a Consolidator. Every step is optional.
type Config struct {
	// Index brings the session's chunks up to date with its log.
	Index func(ctx context.Context) error
	// IndexEvery is the beat of indexing and summary saving (default 10 s;
	// negative for none: only ConsolidateNow runs them).
	IndexEvery time.Duration
	// Summary returns the running summary of the session, and SaveSummary
	// persists it; it is saved when it changed.
	Summary     func() string
	SaveSummary func(ctx context.Context, text string) error
	// Extract runs incremental fact extraction for the lines so far.
	Extract func(ctx context.Context) error
	// Interval is the beat of extraction (default 30 min; negative for
	// none: only ConsolidateNow runs it).
	Interval time.Duration
	// Clock drives the beats (default the system clock).
	Clock clock.Clock
	// Logger receives failures (default slog.Default()).
	Logger *slog.Logger
}

// Stats counts the Consolidator's work.
type Stats struct {
	// Indexed counts index passes that succeeded; IndexedAt is the clock's
	// time of the last one.
	Indexed   int
	IndexedAt time.Time
	// SummariesSaved counts summary saves.
	SummariesSaved int
	// Extractions counts extraction runs that succeeded.
	Extractions int
	// Failures counts failed steps of any kind.
	Failures int
}

// Consolidator runs the steps. Its methods are safe for concurrent use.
type Consolidator struct {
	cfg Config
	log *slog.Logger

	runMu sync.Mutex // one pass at a time

	mu          sync.Mutex
	lines       uint64 // lines noted so far
	indexedAt   uint64 // lines noted at the last successful index pass
	extractedAt uint64 // lines noted at the last successful extraction
	savedSum    string
	stats       Stats
	cancel      context.CancelFunc
	done        chan struct{}
	closed      bool
}

// New returns a Consolidator; Start runs its beats.
func New(cfg Config) (*Consolidator, error) {
	if cfg.Summary != nil && cfg.SaveSummary == nil || cfg.Summary == nil && cfg.SaveSummary != nil {
		return nil, errors.New("consolidate: Config.Summary and Config.SaveSummary go together")
	}
	if cfg.IndexEvery == 0 {
		cfg.IndexEvery = DefaultIndexEvery
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Consolidator{cfg: cfg, log: cfg.Logger.With("component", "consolidator")}, nil
}

// Noted tells the Consolidator that a line was recorded (or removed): the
// next index pass has work to do.
func (c *Consolidator) Noted() {
	c.mu.Lock()
	c.lines++
	c.mu.Unlock()
}

// Stats returns the counters.
func (c *Consolidator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Start runs the beats until Close or until ctx ends. Calling it again does
// nothing.
func (c *Consolidator) Start(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil || c.closed {
		return
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.done = make(chan struct{})
	go c.loop(ctx, c.done)
}

// never is a timer channel that does not fire.
var never <-chan time.Time

func (c *Consolidator) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	newTimer := func(d time.Duration) (clock.Timer, <-chan time.Time) {
		if d < 0 {
			return nil, never
		}
		t := c.cfg.Clock.NewTimer(d)
		return t, t.C()
	}
	idx, idxC := newTimer(c.cfg.IndexEvery)
	ext, extC := newTimer(c.cfg.Interval)
	defer func() {
		for _, t := range []clock.Timer{idx, ext} {
			if t != nil {
				t.Stop()
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-idxC:
			c.pass(ctx, false)
			idx, idxC = newTimer(c.cfg.IndexEvery)
		case <-extC:
			c.pass(ctx, true)
			ext, extC = newTimer(c.cfg.Interval)
		}
	}
}

// pass runs the index and summary steps, and extraction when extract is
// set; it returns the steps' errors joined.
func (c *Consolidator) pass(ctx context.Context, extract bool) error {
	c.runMu.Lock()
	defer c.runMu.Unlock()
	var errs []error
	c.mu.Lock()
	lines := c.lines
	needIndex := lines != c.indexedAt
	needExtract := extract && lines != c.extractedAt
	c.mu.Unlock()

	if c.cfg.Index != nil && needIndex {
		if err := c.cfg.Index(ctx); err != nil {
			errs = append(errs, c.failed("indexing the session's chunks", err))
		} else {
			c.mu.Lock()
			c.indexedAt = lines
			c.stats.Indexed++
			c.stats.IndexedAt = c.cfg.Clock.Now()
			c.mu.Unlock()
		}
	}
	if c.cfg.Summary != nil {
		if s := c.cfg.Summary(); s != "" {
			c.mu.Lock()
			changed := s != c.savedSum
			c.mu.Unlock()
			if changed {
				if err := c.cfg.SaveSummary(ctx, s); err != nil {
					errs = append(errs, c.failed("saving the running summary", err))
				} else {
					c.mu.Lock()
					c.savedSum = s
					c.stats.SummariesSaved++
					c.mu.Unlock()
				}
			}
		}
	}
	if c.cfg.Extract != nil && needExtract {
		if err := c.cfg.Extract(ctx); err != nil {
			errs = append(errs, c.failed("extracting facts from the session so far", err))
		} else {
			c.mu.Lock()
			c.extractedAt = lines
			c.stats.Extractions++
			c.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

func (c *Consolidator) failed(what string, err error) error {
	c.mu.Lock()
	c.stats.Failures++
	c.mu.Unlock()
	if !errors.Is(err, context.Canceled) {
		c.log.Warn(what+" failed; it is tried again on the next beat", "err", err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// ConsolidateNow runs every step now: indexing, the summary and extraction.
func (c *Consolidator) ConsolidateNow(ctx context.Context) error { return c.pass(ctx, true) }

// Stop stops the beats, with no last pass: the session goes on in another
// process (it was handed over), which consolidates it from then on. A pass
// under way is cancelled. It is idempotent, and Close after it does nothing.
func (c *Consolidator) Stop() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	cancel, done := c.cancel, c.done
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Close stops the beats and runs a last pass of indexing and summary
// saving; extraction of the tail is left to post-session processing, which
// runs it once for the whole session. It is idempotent.
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
	return c.pass(ctx, false)
}
