// Package contextmgr keeps a long conversation within an LLM's context
// window.
//
// A [Manager] holds the conversation of a session as chat messages and counts
// their tokens (one token per four characters). When the count passes a
// threshold (by default 75 % of MaxTokens) it summarises the oldest half of
// the messages with a [Summarizer] and replaces them by the summary, which
// is kept as a "[Previous conversation summary]" system message ahead of the
// remaining messages. Summaries accumulate in order; once they take more than
// a third of the threshold, the next summary folds them in, so that a
// session of any length stays within the budget.
//
// Summarising runs in the background so that adding a message never waits
// for the LLM. Before messages are removed, Config.BeforeEvict receives them
// (the session flushes them to the session log there). If the summariser or
// BeforeEvict fails, nothing is removed and summarising is tried again after
// Config.RetryAfter.
package contextmgr

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/memory"
)

// SummaryPrefix starts the content of every summary message.
const SummaryPrefix = "[Previous conversation summary]"

// Defaults of a Config.
const (
	DefaultThreshold      = 0.75
	DefaultRetryAfter     = 30 * time.Second
	DefaultSummaryTimeout = 60 * time.Second
)

// Message is one chat message of the conversation.
type Message struct {
	// Role is an OpenAI chat role: user (a player), assistant (an NPC) or
	// system.
	Role string
	// Name is the speaker's display name.
	Name string
	// Content is the text.
	Content string
	// Summary marks a synthetic summary message; it was never said and is
	// never written to the session log.
	Summary bool
	// Entry is the utterance the message records; it is zero for synthetic
	// messages.
	Entry memory.TranscriptEntry
}

// Tokens estimates the tokens of s: one per four characters, rounded up.
func Tokens(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

// Summarizer condenses messages into a summary.
type Summarizer interface {
	Summarize(ctx context.Context, msgs []Message) (string, error)
}

// SummarizerFunc adapts a function to Summarizer.
type SummarizerFunc func(ctx context.Context, msgs []Message) (string, error)

// Summarize calls f.
func (f SummarizerFunc) Summarize(ctx context.Context, msgs []Message) (string, error) {
	return f(ctx, msgs)
}

// Config configures a Manager. MaxTokens and Summarizer are required.
type Config struct {
	// MaxTokens is the context budget of the conversation.
	MaxTokens int
	// Threshold is the fraction of MaxTokens at which summarising starts
	// (default 0.75).
	Threshold float64
	// Summarizer condenses the oldest messages.
	Summarizer Summarizer
	// BeforeEvict, if set, receives the messages a summary is about to
	// replace. If it fails they are kept.
	BeforeEvict func(ctx context.Context, msgs []Message) error
	// RetryAfter is the pause after a failed summary (default 30 s).
	RetryAfter time.Duration
	// SummaryTimeout bounds one summary (default 60 s).
	SummaryTimeout time.Duration
	// Clock is the time source (default the system clock).
	Clock clock.Clock
	// Logger receives failures (default slog.Default()).
	Logger *slog.Logger
}

// summary is a summary and the messages it replaced (kept so that a
// speaker's words can be taken out of it again, see Forget).
type summary struct {
	text    string
	covered []Message
}

// Manager holds a session's conversation. It is safe for concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger

	compactMu sync.Mutex // one summary at a time

	mu        sync.Mutex
	summaries []summary
	msgs      []Message
	tokens    int
	running   bool
	retryAt   time.Time
	failures  int
	closed    bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a Manager for cfg.
func New(cfg Config) (*Manager, error) {
	if cfg.MaxTokens <= 0 {
		return nil, fmt.Errorf("contextmgr: MaxTokens must be positive, got %d", cfg.MaxTokens)
	}
	if cfg.Summarizer == nil {
		return nil, errors.New("contextmgr: Config.Summarizer is required")
	}
	if cfg.Threshold == 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Threshold <= 0 || cfg.Threshold > 1 {
		return nil, fmt.Errorf("contextmgr: Threshold must be within (0, 1], got %v", cfg.Threshold)
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.SummaryTimeout <= 0 {
		cfg.SummaryTimeout = DefaultSummaryTimeout
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, log: cfg.Logger.With("component", "context-manager")}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Add appends a message. When the conversation passes the threshold it
// starts a summary in the background, unless one is running or the last one
// failed less than RetryAfter ago.
func (m *Manager) Add(msg Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs = append(m.msgs, msg)
	m.tokens += Tokens(msg.Content)
	if m.closed || m.running || !m.overLocked() || m.cfg.Clock.Now().Before(m.retryAt) {
		return
	}
	m.running = true
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		err := m.compact(m.ctx)
		m.mu.Lock()
		m.running = false
		m.mu.Unlock()
		if err != nil && m.ctx.Err() == nil {
			m.log.Warn("summarising the conversation failed; keeping every message and retrying later",
				"retry_after", m.cfg.RetryAfter, "err", err)
		}
	}()
}

func (m *Manager) overLocked() bool {
	return float64(m.tokens) >= m.cfg.Threshold*float64(m.cfg.MaxTokens) && len(m.msgs) >= 2
}

// Amend replaces the text of the message recorded from the entry with
// idempotency key key, if it is not yet summarised, and reports whether it
// did: a name corrected in the background after the line was heard.
func (m *Manager) Amend(key, text string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.msgs {
		msg := &m.msgs[i]
		if key == "" || msg.Entry.IdempotencyKey != key || msg.Content == text {
			continue
		}
		m.tokens += Tokens(text) - Tokens(msg.Content)
		msg.Content, msg.Entry.Text = text, text
		return true
	}
	return false
}

// Messages returns the conversation as it goes to the LLM: one system
// message per summary, oldest first, then the messages not yet summarised.
func (m *Manager) Messages() []Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Message, 0, len(m.summaries)+len(m.msgs))
	for _, s := range m.summaries {
		out = append(out, summaryMessage(s.text))
	}
	return append(out, m.msgs...)
}

// ChatMessages returns Messages as LLM chat messages.
func (m *Manager) ChatMessages() []llm.Message {
	msgs := m.Messages()
	out := make([]llm.Message, len(msgs))
	for i, x := range msgs {
		out[i] = llm.Message{Role: x.Role, Content: x.Content, Name: chatName(x.Name)}
	}
	return out
}

// chatName makes a display name acceptable as an OpenAI message name
// (letters, digits, underscores and hyphens).
func chatName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('_')
		}
	}
	return b.String()
}

func summaryMessage(s string) Message {
	return Message{Role: llm.RoleSystem, Content: SummaryPrefix + "\n" + s, Summary: true}
}

// Summaries returns the summaries so far, oldest first.
func (m *Manager) Summaries() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, len(m.summaries))
	for i, s := range m.summaries {
		out[i] = s.text
	}
	return out
}

// Tokens is the estimated size of the conversation, summaries included.
func (m *Manager) Tokens() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tokens
}

// Failures is the number of summaries that failed.
func (m *Manager) Failures() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failures
}

// Compact summarises the oldest half of the messages now, whatever the
// token count. It waits for a summary already running to end first.
func (m *Manager) Compact(ctx context.Context) error { return m.compact(ctx) }

func (m *Manager) compact(ctx context.Context) error {
	m.compactMu.Lock()
	defer m.compactMu.Unlock()

	m.mu.Lock()
	n := len(m.msgs) / 2
	if n == 0 {
		m.mu.Unlock()
		return nil
	}
	evicted := append([]Message(nil), m.msgs[:n]...)
	// When the summaries themselves take more than a third of the budget,
	// they are folded into the new summary, so that a session of any length
	// fits.
	folded := 0
	if len(m.summaries) > 1 && float64(m.summaryTokensLocked()) > m.cfg.Threshold*float64(m.cfg.MaxTokens)/3 {
		folded = len(m.summaries)
	}
	batch := make([]Message, 0, folded+n)
	var covered []Message
	for _, s := range m.summaries[:folded] {
		batch = append(batch, summaryMessage(s.text))
		covered = append(covered, s.covered...)
	}
	batch = append(batch, evicted...)
	covered = append(covered, evicted...)
	m.mu.Unlock()

	fail := func(err error) error {
		m.mu.Lock()
		m.failures++
		m.retryAt = m.cfg.Clock.Now().Add(m.cfg.RetryAfter)
		m.mu.Unlock()
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, m.cfg.SummaryTimeout)
	summaryText, err := m.cfg.Summarizer.Summarize(sctx, batch)
	cancel()
	if err != nil {
		return fail(fmt.Errorf("summarising %d messages: %w", n, err))
	}
	summaryText = strings.TrimSpace(summaryText)
	if summaryText == "" {
		return fail(fmt.Errorf("summarising %d messages: the summariser returned an empty summary", n))
	}
	if m.cfg.BeforeEvict != nil {
		if err := m.cfg.BeforeEvict(ctx, evicted); err != nil {
			return fail(fmt.Errorf("saving %d messages before summarising them: %w", n, err))
		}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	// Only compaction removes messages and it is serialised, so the first n
	// messages are still those summarised.
	m.msgs = append(m.msgs[:0:0], m.msgs[n:]...)
	m.summaries = append(m.summaries[folded:len(m.summaries):len(m.summaries)], summary{text: summaryText, covered: covered})
	m.tokens = m.summaryTokensLocked()
	for _, x := range m.msgs {
		m.tokens += Tokens(x.Content)
	}
	m.retryAt = time.Time{}
	return nil
}

func (m *Manager) summaryTokensLocked() int {
	n := 0
	for _, s := range m.summaries {
		n += Tokens(summaryMessage(s.text).Content)
	}
	return n
}

// Close stops a summary in progress and waits for it. The conversation
// stays readable. It is idempotent.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.wg.Wait()
}

// Forget removes every message of a speaker (by TranscriptEntry.SpeakerID)
// from the conversation and from the summaries: a summary that covered one
// of them is written again from the messages it covered, less the
// speaker's (in requests within the conversation's budget, however long
// the session it folded: see summarizeWithin); when that fails, the summary is dropped and those messages
// return to the conversation, so that nothing the speaker said survives in
// a summary. It waits for a summary in progress.
func (m *Manager) Forget(ctx context.Context, speakerID string) (memory.ForgetReport, error) {
	var rep memory.ForgetReport
	if speakerID == "" {
		return rep, nil
	}
	m.compactMu.Lock()
	defer m.compactMu.Unlock()
	of := func(x Message) bool { return !x.Summary && x.Entry.SpeakerID == speakerID }

	m.mu.Lock()
	kept := m.msgs[:0:0]
	for _, x := range m.msgs {
		if of(x) {
			rep.Messages++
			continue
		}
		kept = append(kept, x)
	}
	m.msgs = kept
	type redo struct {
		i    int
		rest []Message
	}
	var todo []redo
	for i, s := range m.summaries {
		var rest []Message
		hit := false
		for _, x := range s.covered {
			if of(x) {
				hit = true
				rep.Messages++
				continue
			}
			rest = append(rest, x)
		}
		if hit {
			todo = append(todo, redo{i, rest})
		}
	}
	m.mu.Unlock()

	// Summaries are rewritten outside the lock: the conversation stays
	// readable meanwhile (compaction, the only other writer of summaries,
	// is held off by compactMu).
	rewritten := make(map[int]summary, len(todo))
	var back []Message
	var errs []error
	for _, t := range todo {
		rep.Summaries++
		if len(t.rest) == 0 {
			continue
		}
		text, err := m.summarizeWithin(ctx, t.rest)
		if err != nil || strings.TrimSpace(text) == "" {
			if err == nil {
				err = errors.New("the summariser returned an empty summary")
			}
			errs = append(errs, err)
			back = append(back, t.rest...)
			continue
		}
		rewritten[t.i] = summary{text: strings.TrimSpace(text), covered: t.rest}
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	var sums []summary
	redone := make(map[int]bool, len(todo))
	for _, t := range todo {
		redone[t.i] = true
	}
	for i, s := range m.summaries {
		if !redone[i] {
			sums = append(sums, s)
		} else if r, ok := rewritten[i]; ok {
			sums = append(sums, r)
		}
	}
	m.summaries = sums
	if len(back) > 0 {
		m.msgs = append(back, m.msgs...)
	}
	m.tokens = m.summaryTokensLocked()
	for _, x := range m.msgs {
		m.tokens += Tokens(x.Content)
	}
	if len(errs) > 0 {
		m.log.Warn("a summary could not be rewritten without a forgotten speaker; it was dropped and its other messages kept whole",
			"err", errors.Join(errs...))
	}
	return rep, nil
}

// summarizeWithin summarises msgs in requests of the conversation's own
// budget (Threshold of MaxTokens) at most: a summary that folded a long
// session covers all of it, and rewriting it in one request (Forget) would
// grow with the session past what a model takes. The messages go in
// order, each request holding the summary so far and the next messages
// that fit, as compaction folds its summaries; a message larger than the
// budget goes alone.
func (m *Manager) summarizeWithin(ctx context.Context, msgs []Message) (string, error) {
	budget := int(m.cfg.Threshold * float64(m.cfg.MaxTokens))
	var text string
	for len(msgs) > 0 {
		var batch []Message
		n := 0
		if text != "" {
			batch = append(batch, summaryMessage(text))
			n = Tokens(batch[0].Content)
		}
		k := 0
		for k < len(msgs) && (k == 0 || n+Tokens(msgs[k].Content) <= budget) {
			n += Tokens(msgs[k].Content)
			k++
		}
		batch = append(batch, msgs[:k]...)
		msgs = msgs[k:]
		sctx, cancel := context.WithTimeout(ctx, m.cfg.SummaryTimeout)
		s, err := m.cfg.Summarizer.Summarize(sctx, batch)
		cancel()
		if err != nil {
			return "", err
		}
		if s = strings.TrimSpace(s); s == "" {
			return "", errors.New("the summariser returned an empty summary")
		}
		text = s
	}
	return text, nil
}

// Withdraw removes the message recorded with an idempotency key (a reply
// the DM withdrew) from the conversation and reports whether it was there.
// A message already folded into a summary stays in it: Withdraw reports
// false then.
func (m *Manager) Withdraw(key string) bool {
	if key == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.msgs {
		if !x.Summary && x.Entry.IdempotencyKey == key {
			m.tokens -= Tokens(x.Content)
			m.msgs = append(m.msgs[:i:i], m.msgs[i+1:]...)
			return true
		}
	}
	return false
}
