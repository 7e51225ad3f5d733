// Package session runs the lifecycle of one game session: it keeps the
// conversation within the LLM's context, stores every utterance in the
// session log as it is said, exactly once, survives database outages and
// crashes, keeps long-term memory up to date while the session runs, and
// finishes processing the session when it ends.
//
//	s, err := session.Start(ctx, session.Config{...})
//	...
//	s.Record(ctx, entry)        // every utterance, player or NPC
//	msgs := s.Messages()        // the conversation for the next NPC turn
//	...
//	err = s.End(ctx)            // final consolidation, then background processing
//	defer s.Close(ctx)
//
// # Live memory
//
// Record writes the utterance to the session log (L1) at once, through the
// memory guard ([guard]): while the database is unreachable it goes to the
// guard's fsynced outage spool and is replayed, exactly once, when the
// database is back. So a line is durable and searchable when Record returns,
// and the NPCs' hot context, their tools and /memory search see it. The
// consolidator ([consolidate]) keeps the rest up to date in the background:
// the session's chunks in the semantic index (Config.IndexChunks,
// every Config.IndexEvery), the running summary (Config.SaveSummary) and, when an
// LLM is configured, incremental fact extraction (Config.Extract, every
// Config.ConsolidateEvery).
//
// # Order
//
// Start brings up, in order: the memory guard and its health probe (a
// [reconnect.Reconnector]), the context manager ([contextmgr]) and the
// consolidator. Utterances an earlier version left in a consolidation
// journal are written first.
//
// End consolidates a last time, stops the context manager, records the end
// of the session, waits (within Config.DrainTimeout) for the guard to replay
// an outage spool ([guard.Guard.Drain]), stops the guard and starts
// post-session processing in the background. When the database stays
// unreachable, the spool stays on disk for the next run and End returns an
// error wrapping a [*guard.PendingError] that says how many lines wait and
// where. Close stops everything, the background processing included,
// and returns within the deadline of its context; Run does the same when its
// context ends, such as on SIGTERM.
//
// # Hand-over
//
// A session another process goes on with (it took the guild's claim over,
// see lifecycle/lease) is released, not ended: Fence refuses every later
// write at once (Record and Amend return [ErrReleased]), and Release stops
// the consolidator with no last pass, waits (within Config.DrainTimeout)
// for the outage spool to be replayed, so that every line Record
// acknowledged is in the session log, and stops the guard. It does not
// record the end of the session and runs no post-session processing: the
// session is still running, in the other process, under the same id.
package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/consolidate"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Defaults of a Config.
const (
	DefaultShutdownTimeout = 10 * time.Second
	DefaultDrainTimeout    = 5 * time.Second
	DefaultMaxTokens       = 8000
)

// PostProcessor processes an ended session into long-term memory
// (postsession.Processor).
type PostProcessor interface {
	Run(ctx context.Context, sessionID string) (postsession.Report, error)
}

// Owed is the optional capability of a PostProcessor that records, when a
// session starts, that the session's processing is owed
// (postsession.Processor.Owe): a run that resumes interrupted processing
// (postsession.RunInterrupted, at serve's start) then finishes a session
// whose End came while the database was down, once its end is stored.
type Owed interface {
	Owe(ctx context.Context, sessionID string) error
}

// guardWriteTimeout bounds one write as the guard does.
func (s *Session) guardWriteTimeout() time.Duration {
	if s.cfg.WriteTimeout > 0 {
		return s.cfg.WriteTimeout
	}
	return guard.DefaultWriteTimeout
}

// Config configures a Session. SessionID, Log, Ping, StateDir and
// Summarizer are required.
type Config struct {
	// SessionID names the session.
	SessionID string
	// Log is the campaign's session log (L1); the session guards it.
	Log memory.SessionStore
	// Ping checks that the database answers (the guard's health probe).
	Ping func(ctx context.Context) error
	// StateDir holds local state: the outage spool, whose records name
	// their session (and a consolidation journal earlier versions kept,
	// flushed at start). Keep it on persistent
	// storage and use the same directory for every session of a campaign:
	// a later start flushes and replays what a crashed or disconnected run
	// left there. One session at a time may use it (Start fails with an
	// error wrapping spool.ErrLocked otherwise).
	StateDir string
	// Summarizer condenses old conversation (contextmgr.OpenAISummarizer).
	Summarizer contextmgr.Summarizer
	// MaxTokens is the conversation's context budget (default 8000).
	MaxTokens int
	// SummarizeAt is the fraction of MaxTokens at which the oldest half is
	// summarised (contextmgr's default, 0.75, when zero).
	SummarizeAt float64
	// ConsolidateEvery is the beat of incremental fact extraction
	// (default 30 min).
	ConsolidateEvery time.Duration
	// IndexChunks, if set, brings the session's chunks in the semantic
	// index up to date with its log; it runs every IndexEvery (default
	// 10 s) while lines are being recorded, and at End.
	IndexChunks func(ctx context.Context, sessionID string) error
	IndexEvery  time.Duration
	// SaveSummary, if set, persists the running summary when it changes.
	SaveSummary func(ctx context.Context, sessionID, summary string) error
	// Extract, if set, extracts facts from the lines recorded so far; it
	// runs every ConsolidateEvery and on ConsolidateNow (post-session
	// processing extracts the tail after End), and must be safe to run
	// again on the same lines.
	Extract func(ctx context.Context, sessionID string) error
	// Probe shapes the database health probe's backoff (default 1 s
	// doubling to 30 s).
	Probe reconnect.Backoff
	// OnSpoolCorrupt, if set, is told of each damaged record of the outage
	// spool (skipped and quarantined, never taking later ones with it).
	OnSpoolCorrupt func(spool.Corruption)
	// MaxSpoolBytes bounds the outage spool (default 64 MiB).
	MaxSpoolBytes int64
	// WriteTimeout bounds one database write (default 5 s).
	WriteTimeout time.Duration
	// PostSession, if set, processes the session after End.
	PostSession PostProcessor
	// ForgetSpeaker, if set, erases a speaker's words from long-term
	// memory (access.Campaign.ForgetSpeaker); the memory guard runs it
	// when it replays a forget that came during an outage (see Forget).
	ForgetSpeaker func(ctx context.Context, speakerID string) error
	// PutCard, if set, stores a continuity card
	// (access.Campaign.PutContinuityCard): the memory guard sends cards
	// through it and spools them during an outage, like lines
	// (guard.Guard.PutCard).
	PutCard func(ctx context.Context, card access.ContinuityCard) error
	// DrainTimeout bounds End's wait for an outage spool to be replayed
	// (default 5 s); what is left stays in StateDir, End returns an error
	// wrapping a *guard.PendingError, and the next run replays it.
	DrainTimeout time.Duration
	// ShutdownTimeout bounds Run's shutdown (default 10 s).
	ShutdownTimeout time.Duration
	// Held, if set, says whether this process still holds the claim under
	// which it runs the session (lifecycle/lease Keeper.Held: the claim
	// was not lost and its lease has not expired on the clock). It is
	// asked before every write; once it says no, the session is fenced
	// (see Fence) and Record, RecordPresence and Amend return ErrReleased.
	// It must return at once. nil: always held.
	Held func() bool
	// Clock drives periodic work (default the system clock).
	Clock clock.Clock
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// Session is a running game session. Its methods are safe for concurrent
// use.
type Session struct {
	cfg   Config
	log   *slog.Logger
	cm    *contextmgr.Manager
	cons  *consolidate.Consolidator
	guard *guard.Guard

	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgDone   chan struct{}
	report   postsession.Report
	bgErr    error

	endMu  sync.Mutex  // serialises End and Release
	fenced atomic.Bool // no more writes: the session was handed over
	mu     sync.Mutex
	forgot map[string]time.Time // speaker id → when Forget ran
	ended  bool                 // End or Release ran
	// released says the session was handed over (Release), not ended.
	released bool
	closed   bool
	endErr   error
}

// ErrEnded is returned by Record after End.
var ErrEnded = errors.New("session has ended")

// ErrReleased is returned by Record and Amend after Fence or Release: the
// session was handed over to another process, which writes it now.
var ErrReleased = errors.New("session was handed over to another process")

func (c *Config) validate() error {
	var missing []string
	if strings.TrimSpace(c.SessionID) == "" {
		missing = append(missing, "SessionID")
	}
	if c.Log == nil {
		missing = append(missing, "Log")
	}
	if c.Ping == nil {
		missing = append(missing, "Ping")
	}
	if strings.TrimSpace(c.StateDir) == "" {
		missing = append(missing, "StateDir")
	}
	if c.Summarizer == nil {
		missing = append(missing, "Summarizer")
	}
	if len(missing) > 0 {
		return fmt.Errorf("session: Config.%s required", strings.Join(missing, ", Config."))
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	c.Clock = clock.OrReal(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Start starts a session (or resumes one a crash interrupted, given the
// same StateDir).
func Start(ctx context.Context, cfg Config) (*Session, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, log: cfg.Logger.With("session", cfg.SessionID)}
	var err error
	// The guard is built first because the consolidator writes through it;
	// its probe starts after the consolidator.
	s.guard, err = guard.New(guard.Config{Store: cfg.Log, Ping: cfg.Ping, SpoolDir: filepath.Join(cfg.StateDir, "spool"),
		OnSpoolCorrupt: cfg.OnSpoolCorrupt, Forget: cfg.ForgetSpeaker, PutCard: cfg.PutCard,
		MaxSpoolBytes: cfg.MaxSpoolBytes, Probe: cfg.Probe, WriteTimeout: cfg.WriteTimeout, Clock: cfg.Clock, Logger: s.log})
	if err != nil {
		return nil, err
	}
	ccfg := consolidate.Config{Interval: cfg.ConsolidateEvery, IndexEvery: cfg.IndexEvery, Clock: cfg.Clock, Logger: s.log}
	if cfg.IndexChunks != nil {
		ccfg.Index = func(ctx context.Context) error { return cfg.IndexChunks(ctx, cfg.SessionID) }
	}
	if cfg.Extract != nil {
		ccfg.Extract = func(ctx context.Context) error { return cfg.Extract(ctx, cfg.SessionID) }
	}
	if cfg.SaveSummary != nil {
		ccfg.Summary = s.summary
		ccfg.SaveSummary = func(ctx context.Context, text string) error { return cfg.SaveSummary(ctx, cfg.SessionID, text) }
	}
	s.cons, err = consolidate.New(ccfg)
	if err != nil {
		s.guard.Close()
		return nil, err
	}
	s.cm, err = contextmgr.New(contextmgr.Config{MaxTokens: cfg.MaxTokens, Threshold: cfg.SummarizeAt, Summarizer: cfg.Summarizer,
		Clock: cfg.Clock, Logger: s.log})
	if err != nil {
		s.guard.Close()
		return nil, err
	}
	s.guard.Start(context.WithoutCancel(ctx))
	if err := s.guard.StartSession(ctx, cfg.SessionID, cfg.Clock.Now()); err != nil {
		s.abort(ctx)
		return nil, fmt.Errorf("starting session %q: %w", cfg.SessionID, err)
	}
	if o, ok := cfg.PostSession.(Owed); ok {
		// Owed now, so that an End the database does not see (it is
		// down: the end waits in the outage spool) still leaves the
		// session to be processed by the next run's resumption.
		octx, cancel := context.WithTimeout(ctx, s.guardWriteTimeout())
		if err := o.Owe(octx, cfg.SessionID); err != nil {
			s.log.Warn("recording that the session's processing is owed failed; an End during an outage leaves it unprocessed", "err", err)
		}
		cancel()
	}
	if err := recoverJournal(ctx, filepath.Join(cfg.StateDir, "journal"), s.guard, s.log); err != nil {
		s.abort(ctx)
		return nil, fmt.Errorf("recovering the journal of session %q: %w", cfg.SessionID, err)
	}
	s.cons.Start(context.WithoutCancel(ctx))
	s.bgCtx, s.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.bgDone = make(chan struct{})
	return s, nil
}

func (s *Session) abort(context.Context) {
	s.cm.Close()
	s.guard.Close()
}

// Record stores an utterance: it is in the session log (or, during a
// database outage, in the fsynced outage spool, replayed when the database
// is back) when Record returns, and joins the conversation. An entry
// without a session id gets the session's; one without a time gets the
// current time; one without an idempotency key gets one. Record fails on
// bad input, after End, when the session log refuses the entry, or when an
// outage spool cannot take it (a full or broken disk). A line of a speaker
// forgotten (Forget) after it was said is dropped without error.
func (s *Session) Record(ctx context.Context, e memory.TranscriptEntry) error {
	if s.isFenced() {
		return fmt.Errorf("recording in session %q: %w", s.cfg.SessionID, ErrReleased)
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return fmt.Errorf("recording in session %q: %w", s.cfg.SessionID, ErrEnded)
	}
	if e.SessionID == "" {
		e.SessionID = s.cfg.SessionID
	}
	if e.SessionID != s.cfg.SessionID {
		return fmt.Errorf("%w: entry of session %q recorded in session %q", memory.ErrInvalid, e.SessionID, s.cfg.SessionID)
	}
	if strings.TrimSpace(e.Text) == "" {
		return fmt.Errorf("%w: empty utterance from %q in session %q", memory.ErrInvalid, e.SpeakerName, e.SessionID)
	}
	if e.At.IsZero() {
		e.At = s.cfg.Clock.Now()
	}
	if e.IdempotencyKey == "" {
		e.IdempotencyKey = NewKey(e.SessionID)
	}
	if s.forgotten(e) {
		s.log.Info("a line of a forgotten speaker was dropped", "speaker", e.SpeakerID)
		return nil
	}
	if _, err := s.guard.WriteEntry(ctx, e); err != nil {
		return fmt.Errorf("recording an utterance of session %q: %w", e.SessionID, err)
	}
	role := llm.RoleUser
	if e.NPCID != "" {
		role = llm.RoleAssistant
	}
	s.cm.Add(contextmgr.Message{Role: role, Name: e.SpeakerName, Content: e.Text, Entry: e})
	s.cons.Noted()
	return nil
}

// RecordPresence records which players are present from at on, and
// whether the DM had split the party (a presence span, see
// guard.RecordPresence): through the same guard as the lines, so it is
// spooled during an outage and replayed in order with them. It fails after
// End and on bad input.
func (s *Session) RecordPresence(ctx context.Context, at time.Time, players []string, split bool) error {
	if s.isFenced() {
		return fmt.Errorf("recording presence in session %q: %w", s.cfg.SessionID, ErrReleased)
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return fmt.Errorf("recording presence in session %q: %w", s.cfg.SessionID, ErrEnded)
	}
	if err := s.guard.RecordPresence(ctx, s.cfg.SessionID, at, players, split); err != nil {
		return fmt.Errorf("recording presence in session %q: %w", s.cfg.SessionID, err)
	}
	return nil
}

// Amend corrects the text of a line recorded in this session, found by
// its idempotency key, keeping its raw text: in the conversation (unless
// already summarised) and in the session log (memory.EntryAmender). It is
// idempotent. The session's chunks follow at the next consolidation beat.
// It reports whether the session log changed.
func (s *Session) Amend(ctx context.Context, key, text string) (bool, error) {
	if strings.TrimSpace(key) == "" || strings.TrimSpace(text) == "" {
		return false, fmt.Errorf("%w: amending a line needs its key and a text", memory.ErrInvalid)
	}
	if s.isFenced() {
		return false, fmt.Errorf("amending a line of session %q: %w", s.cfg.SessionID, ErrReleased)
	}
	s.cm.Amend(key, text)
	changed, err := s.guard.AmendEntry(ctx, s.cfg.SessionID, key, text)
	if err != nil {
		return false, fmt.Errorf("amending a line of session %q: %w", s.cfg.SessionID, err)
	}
	if changed {
		s.cons.Noted()
	}
	return changed, nil
}

// forgotten reports whether e was said by a speaker forgotten after e was
// said (it was on its way while Forget ran).
func (s *Session) forgotten(e memory.TranscriptEntry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.forgot[e.SpeakerID]
	return ok && !e.At.After(at)
}

// NewKey returns a fresh idempotency key for an entry of session.
func NewKey(session string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return session + "/" + hex.EncodeToString(b[:])
}

// Forget removes a speaker's words from the live session. In order: lines
// of the speaker still on their way are dropped from now on; the memory
// guard drops them from its outage spool and from every later write and
// replay, and runs erase (the caller's deletion of the speaker's lines and
// chunks from long-term memory, such as access.Campaign.ForgetSpeaker;
// nil for none), or, while the database is unreachable, queues the erase
// in the spool (Config.ForgetSpeaker runs it on replay); the conversation
// and its summaries lose the speaker's lines (summaries are written again
// without them); and the session's chunks and saved summary are brought up
// to date at once. When erase fails otherwise, the conversation is left as
// it was and the error is returned.
func (s *Session) Forget(ctx context.Context, speakerID string, erase func(ctx context.Context) error) (memory.ForgetReport, error) {
	if speakerID == "" {
		return memory.ForgetReport{}, fmt.Errorf("%w: forgetting an empty speaker id", memory.ErrInvalid)
	}
	s.mu.Lock()
	if s.forgot == nil {
		s.forgot = map[string]time.Time{}
	}
	now := s.cfg.Clock.Now()
	s.forgot[speakerID] = now
	s.mu.Unlock()
	gr, err := s.guard.Forget(ctx, speakerID, now, erase)
	if err != nil {
		return memory.ForgetReport{Spooled: gr.Spooled}, err
	}
	r, err := s.cm.Forget(ctx, speakerID)
	if err != nil {
		return memory.ForgetReport{Spooled: gr.Spooled, Deferred: gr.Deferred}, err
	}
	s.cons.Noted()
	if err := s.cons.ConsolidateNow(ctx); err != nil {
		s.log.Warn("re-indexing after a forgotten speaker failed; the next beat retries", "err", err)
	}
	r.Spooled, r.Deferred = gr.Spooled, gr.Deferred
	return r, nil
}

// summary is the running summary: the context manager's summaries, oldest
// first.
func (s *Session) summary() string { return strings.Join(s.cm.Summaries(), "\n\n") }

// Withdraw takes the line recorded with an idempotency key out of the live
// conversation (the DM withdrew an NPC's reply); see
// contextmgr.Manager.Withdraw. The session log keeps the line: the caller
// marks it non-canon there.
func (s *Session) Withdraw(key string) bool { return s.cm.Withdraw(key) }

// Messages returns the conversation for the LLM: summaries first.
func (s *Session) Messages() []contextmgr.Message { return s.cm.Messages() }

// Context is the session's context manager.
func (s *Session) Context() *contextmgr.Manager { return s.cm }

// Memory is the guarded session log: reads return nothing while the
// database is unreachable.
func (s *Session) Memory() *guard.Guard { return s.guard }

// SpoolDir is the directory of the session's outage spool.
func (s *Session) SpoolDir() string { return filepath.Join(s.cfg.StateDir, "spool") }

// IsDegraded reports whether the database is unreachable.
func (s *Session) IsDegraded() bool { return s.guard.IsDegraded() }

// Pending is the number of writes waiting in the outage spool.
func (s *Session) Pending() int { return s.guard.Stats().Pending }

// Summary is the running summary of the session so far (empty before the
// first one).
func (s *Session) Summary() string { return s.summary() }

// Consolidation reports the consolidator's work.
func (s *Session) Consolidation() consolidate.Stats { return s.cons.Stats() }

// ConsolidateNow brings the session's chunks, saved summary and extracted
// facts up to date now.
func (s *Session) ConsolidateNow(ctx context.Context) error { return s.cons.ConsolidateNow(ctx) }

// isFenced reports whether the session no longer writes: it was fenced
// (Fence, Release), or Config.Held says the claim is lost, which fences it
// for good.
func (s *Session) isFenced() bool {
	if s.fenced.Load() {
		return true
	}
	if s.claimLost() {
		if !s.fenced.Swap(true) {
			s.log.Warn("this process no longer holds the session's claim: it records nothing more (another process goes on with it)")
		}
		return true
	}
	return false
}

// claimLost reports whether Config.Held says this process lost the
// session's claim.
func (s *Session) claimLost() bool { return s.cfg.Held != nil && !s.cfg.Held() }

// Fence refuses every later write of the session (Record and Amend return
// ErrReleased): another process took it over. It does no I/O and returns at
// once, so it may run on the claim's heartbeat as soon as the loss is
// noticed; Release does the rest. A write already under way finishes.
func (s *Session) Fence() { s.fenced.Store(true) }

// Release hands the session over to another process without ending it:
// it fences it (see Fence), stops the consolidator and the context manager
// (no last pass: the new owner consolidates from now on), waits within
// Config.DrainTimeout for the outage spool to be replayed into the session
// log, and stops the guard. It does not mark the session ended and starts
// no post-session processing. When the database stays unreachable, the
// spool stays on disk (the next run on the same state directory replays
// it) and Release returns an error wrapping a *guard.PendingError. After
// End it returns an error wrapping ErrEnded; calling it again returns the
// first result.
func (s *Session) Release(ctx context.Context) error {
	s.Fence()
	s.endMu.Lock()
	defer s.endMu.Unlock()
	s.mu.Lock()
	if s.ended {
		err, released := s.endErr, s.released
		s.mu.Unlock()
		if !released {
			return fmt.Errorf("releasing session %q: %w", s.cfg.SessionID, ErrEnded)
		}
		return err
	}
	s.ended, s.released = true, true
	s.mu.Unlock()

	s.cons.Stop()
	s.cm.Close()
	_, err := s.drainAndClose(ctx, "releasing", "the database is still unreachable; the outage spool stays for the next run")
	s.mu.Lock()
	s.endErr = err
	s.mu.Unlock()
	close(s.bgDone)
	s.log.Info("session handed over to another process", "err", err)
	return err
}

// drainAndClose replays the outage spool into the database, within
// DrainTimeout, and closes the guard. drained is the replay's error (the
// spool stays for the next run, and warn is logged); err joins it, wrapped
// with verb ("ending", "releasing"), and the guard's closing error.
func (s *Session) drainAndClose(ctx context.Context, verb, warn string) (drained, err error) {
	var errs []error
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	drained = s.guard.Drain(dctx)
	cancel()
	if drained != nil {
		s.log.Warn(warn, "spool", s.SpoolDir(), "pending", s.guard.Stats().Pending, "err", drained)
		errs = append(errs, fmt.Errorf("%s session %q: %w", verb, s.cfg.SessionID, drained))
	}
	if cerr := s.guard.Close(); cerr != nil {
		errs = append(errs, cerr)
	}
	return drained, errors.Join(errs...)
}

// End ends the session: final flush, stop, then post-session processing in
// the background (see Wait). Calling it again returns the first result;
// after Release it returns an error wrapping ErrReleased and does nothing.
// A session whose claim this process lost (Config.Held says so) is not
// ended but handed over (Release): another process goes on with it, and
// End returns an error wrapping ErrReleased.
func (s *Session) End(ctx context.Context) error {
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if !ended && s.claimLost() {
		// Another process goes on with the session: ending it here would
		// mark it ended under that process's feet.
		s.log.Warn("ending a session whose claim this process lost: handing it over instead")
		err := s.Release(ctx)
		return fmt.Errorf("ending session %q: %w", s.cfg.SessionID, errors.Join(ErrReleased, err))
	}
	s.endMu.Lock()
	defer s.endMu.Unlock()
	s.mu.Lock()
	if s.ended {
		err := s.endErr
		if s.released {
			err = fmt.Errorf("ending session %q: %w", s.cfg.SessionID, ErrReleased)
		}
		s.mu.Unlock()
		return err
	}
	s.ended = true
	s.mu.Unlock()

	var errs []error
	if err := s.cons.Close(ctx); err != nil {
		// The lines are in the session log (or the spool); post-session
		// processing redoes what the last pass could not.
		s.log.Warn("the last consolidation pass failed; post-session processing finishes it", "err", err)
	}
	s.cm.Close()
	if err := s.guard.EndSession(ctx, s.cfg.SessionID, s.cfg.Clock.Now()); err != nil {
		errs = append(errs, err)
	}
	drained, derr := s.drainAndClose(ctx, "ending",
		"the database is still unreachable; the outage spool stays for the next run and processing waits")
	err := errors.Join(append(errs, derr)...)
	s.mu.Lock()
	s.endErr = err
	s.mu.Unlock()

	if s.cfg.PostSession == nil || drained != nil || err != nil {
		close(s.bgDone)
		return err
	}
	go func() {
		defer close(s.bgDone)
		s.report, s.bgErr = s.cfg.PostSession.Run(s.bgCtx, s.cfg.SessionID)
		if s.bgErr != nil {
			s.log.Warn("post-session processing stopped; it resumes at the next run", "err", s.bgErr)
		}
	}()
	return nil
}

// Wait waits for post-session processing (started by End) and returns its
// report, or ctx's error; after Release it returns an error wrapping
// ErrReleased (there is none).
func (s *Session) Wait(ctx context.Context) (postsession.Report, error) {
	s.mu.Lock()
	ended, released := s.ended, s.released
	s.mu.Unlock()
	if !ended {
		return postsession.Report{}, errors.New("session: Wait before End")
	}
	if released {
		return postsession.Report{}, fmt.Errorf("session %q has no post-session processing here: %w", s.cfg.SessionID, ErrReleased)
	}
	select {
	case <-s.bgDone:
		return s.report, s.bgErr
	case <-ctx.Done():
		return postsession.Report{}, ctx.Err()
	}
}

// Close ends the session if neither End nor Release was called, stops
// post-session processing (it resumes at the next run) and waits for every
// goroutine, at most until ctx ends. It is idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	released, relErr := s.released, s.endErr
	s.mu.Unlock()
	var err error
	if released {
		err = relErr
	} else {
		err = s.End(ctx)
	}
	s.bgCancel()
	select {
	case <-s.bgDone:
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("closing session %q: post-session processing did not stop in time: %w", s.cfg.SessionID, ctx.Err()))
	}
	return err
}

// Run waits until ctx ends (for instance on SIGTERM, through
// signal.NotifyContext) and then closes the session within
// Config.ShutdownTimeout.
func (s *Session) Run(ctx context.Context) error {
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	return s.Close(sctx)
}

// recoverJournal writes to the session log, through the guard, the
// utterances an earlier version of glyphoxa left in its consolidation
// journal (it journaled every line before writing it), then removes them
// from the journal. A missing journal is no error.
func recoverJournal(ctx context.Context, dir string, g *guard.Guard, log *slog.Logger) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	j, err := spool.Open(dir, spool.Options{})
	if err != nil {
		return fmt.Errorf("opening the journal %s: %w", dir, err)
	}
	defer j.Close()
	if n := j.Len(); n > 0 {
		log.Info("writing utterances an earlier run journaled", "entries", n, "journal", dir)
	}
	for {
		recs, err := j.Peek(100)
		if err != nil {
			return fmt.Errorf("reading the journal %s: %w", dir, err)
		}
		if len(recs) == 0 {
			return nil
		}
		es := make([]memory.TranscriptEntry, len(recs))
		for i, b := range recs {
			if err := json.Unmarshal(b, &es[i]); err != nil {
				return fmt.Errorf("decoding journal record %d of %s: %w", i, dir, err)
			}
		}
		if _, err := g.WriteEntries(ctx, es); err != nil {
			return err
		}
		if err := j.Advance(len(recs)); err != nil {
			return fmt.Errorf("moving the journal's cursor: %w", err)
		}
	}
}
