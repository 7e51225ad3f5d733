// Package session runs the lifecycle of one game session: it keeps the
// conversation within the LLM's context, stores every utterance in the
// session log exactly once, survives database outages and crashes, and
// processes the session into long-term memory when it ends.
//
//	s, err := session.Start(ctx, session.Config{...})
//	...
//	s.Record(ctx, entry)        // every utterance, player or NPC
//	msgs := s.Messages()        // the conversation for the next NPC turn
//	...
//	err = s.End(ctx)            // final flush, then background processing
//	defer s.Close(ctx)
//
// # Order
//
// Start brings up, in order: the context manager ([contextmgr]), the
// consolidator ([consolidate], whose journal makes every recorded utterance
// durable at once), the memory guard ([guard]) and its health probe (a
// [reconnect.Reconnector]). Utterances a crashed run left in the journal or
// the outage spool are flushed first.
//
// End flushes the journal to the session log, stops the periodic flush and
// the context manager, records the end of the session, waits (within
// Config.DrainTimeout) for the guard to replay an outage spool, stops the
// guard and starts post-session processing in the background. Close stops
// everything, the background processing included, and returns within the
// deadline of its context; Run does the same when its context ends, such as
// on SIGTERM.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/lifecycle/clock"
	"github.com/glyphoxa/glyphoxa/lifecycle/consolidate"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
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

// Config configures a Session. SessionID, Log, Ping, StateDir and
// Summarizer are required.
type Config struct {
	// SessionID names the session.
	SessionID string
	// Log is the campaign's session log (L1); the session guards it.
	Log memory.SessionStore
	// Graph and Index, if set, are the campaign's knowledge graph (L3) and
	// semantic index (L2); Session.Graph and Session.Index return them
	// guarded.
	Graph memory.KnowledgeGraph
	Index memory.SemanticIndex
	// Ping checks that the database answers (the guard's health probe).
	Ping func(ctx context.Context) error
	// StateDir holds local state: the consolidation journal and the outage
	// spool, whose records name their session. Keep it on persistent
	// storage and use the same directory for every session of a campaign:
	// a later start flushes and replays what a crashed or disconnected run
	// left there. One session at a time may use it (Start fails with an
	// error wrapping spool.ErrLocked otherwise).
	StateDir string
	// Summarizer condenses old conversation (contextmgr.OpenAISummarizer).
	Summarizer contextmgr.Summarizer
	// MaxTokens is the conversation's context budget (default 8000).
	MaxTokens int
	// ConsolidateEvery is the periodic flush interval (default 30 min).
	ConsolidateEvery time.Duration
	// Probe shapes the database health probe's backoff (default 1 s
	// doubling to 30 s).
	Probe reconnect.Backoff
	// MaxSpoolBytes bounds the outage spool and the journal (default 64
	// MiB each).
	MaxSpoolBytes int64
	// WriteTimeout bounds one database write (default 5 s).
	WriteTimeout time.Duration
	// PostSession, if set, processes the session after End.
	PostSession PostProcessor
	// DrainTimeout bounds End's wait for an outage spool to be replayed
	// (default 5 s); what is left is replayed by the next run.
	DrainTimeout time.Duration
	// ShutdownTimeout bounds Run's shutdown (default 10 s).
	ShutdownTimeout time.Duration
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

	endMu  sync.Mutex // serialises End
	mu     sync.Mutex
	ended  bool
	closed bool
	endErr error
}

// ErrEnded is returned by Record after End.
var ErrEnded = errors.New("session has ended")

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
		MaxSpoolBytes: cfg.MaxSpoolBytes, Probe: cfg.Probe, WriteTimeout: cfg.WriteTimeout, Clock: cfg.Clock, Logger: s.log})
	if err != nil {
		return nil, err
	}
	s.cons, err = consolidate.New(consolidate.Config{Store: s.guard, JournalDir: filepath.Join(cfg.StateDir, "journal"),
		MaxJournalBytes: cfg.MaxSpoolBytes, Interval: cfg.ConsolidateEvery, Clock: cfg.Clock, Logger: s.log})
	if err != nil {
		s.guard.Close()
		return nil, err
	}
	s.cm, err = contextmgr.New(contextmgr.Config{MaxTokens: cfg.MaxTokens, Summarizer: cfg.Summarizer,
		BeforeEvict: s.cons.Flush, Clock: cfg.Clock, Logger: s.log})
	if err != nil {
		s.cons.Close(ctx)
		s.guard.Close()
		return nil, err
	}
	s.cons.Start(context.WithoutCancel(ctx))
	s.guard.Start(context.WithoutCancel(ctx))
	if err := s.guard.StartSession(ctx, cfg.SessionID, cfg.Clock.Now()); err != nil {
		s.abort(ctx)
		return nil, fmt.Errorf("starting session %q: %w", cfg.SessionID, err)
	}
	if n := s.cons.Pending(); n > 0 {
		s.log.Info("flushing utterances an earlier run journaled", "entries", n)
		if err := s.cons.ConsolidateNow(ctx); err != nil {
			s.abort(ctx)
			return nil, fmt.Errorf("recovering the journal of session %q: %w", cfg.SessionID, err)
		}
	}
	s.bgCtx, s.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.bgDone = make(chan struct{})
	return s, nil
}

func (s *Session) abort(ctx context.Context) {
	s.cm.Close()
	s.cons.Close(ctx)
	s.guard.Close()
}

// Record stores an utterance: it is durable when Record returns, joins the
// conversation and reaches the session log at the next consolidation. An
// entry without a session id gets the session's; one without a time gets
// the current time. Record fails only on bad input, after End, or when the
// local journal cannot take the entry (a full or broken disk); a database
// outage is no error.
func (s *Session) Record(ctx context.Context, e memory.TranscriptEntry) error {
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
		e.IdempotencyKey = consolidate.NewKey(e.SessionID)
	}
	role := openai.ChatMessageRoleUser
	if e.NPCID != "" {
		role = openai.ChatMessageRoleAssistant
	}
	msg := contextmgr.Message{Role: role, Name: e.SpeakerName, Content: e.Text, Entry: e}
	if err := s.cons.Add(ctx, msg); err != nil {
		return err
	}
	s.cm.Add(msg)
	return nil
}

// Messages returns the conversation for the LLM: summaries first.
func (s *Session) Messages() []contextmgr.Message { return s.cm.Messages() }

// Context is the session's context manager.
func (s *Session) Context() *contextmgr.Manager { return s.cm }

// Memory is the guarded session log: reads return nothing while the
// database is unreachable.
func (s *Session) Memory() *guard.Guard { return s.guard }

// Graph is Config.Graph guarded: empty reads and failing writes while the
// database is unreachable. It is nil without Config.Graph.
func (s *Session) Graph() *guard.Graph {
	if s.cfg.Graph == nil {
		return nil
	}
	return s.guard.Graph(s.cfg.Graph)
}

// Index is Config.Index guarded, like Graph. It is nil without
// Config.Index.
func (s *Session) Index() *guard.Index {
	if s.cfg.Index == nil {
		return nil
	}
	return s.guard.Index(s.cfg.Index)
}

// IsDegraded reports whether the database is unreachable.
func (s *Session) IsDegraded() bool { return s.guard.IsDegraded() }

// Pending is the number of recorded utterances not yet consolidated.
func (s *Session) Pending() int { return s.cons.Pending() }

// ConsolidateNow flushes recorded utterances to the session log now.
func (s *Session) ConsolidateNow(ctx context.Context) error { return s.cons.ConsolidateNow(ctx) }

// End ends the session: final flush, stop, then post-session processing in
// the background (see Wait). Calling it again returns the first result.
func (s *Session) End(ctx context.Context) error {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	s.mu.Lock()
	if s.ended {
		err := s.endErr
		s.mu.Unlock()
		return err
	}
	s.ended = true
	s.mu.Unlock()

	var errs []error
	s.cm.Close()
	if err := s.cons.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := s.guard.EndSession(ctx, s.cfg.SessionID, s.cfg.Clock.Now()); err != nil {
		errs = append(errs, err)
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	drained := s.guard.WaitHealthy(dctx)
	cancel()
	if drained != nil {
		s.log.Warn("the database is still unreachable; the outage spool stays for the next run and processing waits",
			"spool", filepath.Join(s.cfg.StateDir, "spool"), "pending", s.guard.Stats().Pending)
	}
	if err := s.guard.Close(); err != nil {
		errs = append(errs, err)
	}
	err := errors.Join(errs...)
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
// report, or ctx's error.
func (s *Session) Wait(ctx context.Context) (postsession.Report, error) {
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if !ended {
		return postsession.Report{}, errors.New("session: Wait before End")
	}
	select {
	case <-s.bgDone:
		return s.report, s.bgErr
	case <-ctx.Done():
		return postsession.Report{}, ctx.Err()
	}
}

// Close ends the session if End was not called, stops post-session
// processing (it resumes at the next run) and waits for every goroutine,
// at most until ctx ends. It is idempotent.
func (s *Session) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	err := s.End(ctx)
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
