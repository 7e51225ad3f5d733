package contextmgr_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func summarizer(srv *llmtest.Server) *contextmgr.OpenAISummarizer {
	// No retries: the tests count the requests their failures send.
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "test-key", Model: "summary-model", Retries: -1})
	if err != nil {
		panic(err)
	}
	return contextmgr.NewOpenAISummarizer(c, "summary-model")
}

// line is a 40-character message: 10 tokens.
func line(i int) contextmgr.Message {
	return contextmgr.Message{Role: llm.RoleUser, Name: "Ayla",
		Content: fmt.Sprintf("message %03d %s", i, strings.Repeat("x", 28))}
}

// evictions records what BeforeEvict received.
type evictions struct {
	mu   sync.Mutex
	got  [][]string
	fail error
}

func (e *evictions) hook(_ context.Context, msgs []contextmgr.Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail != nil {
		return e.fail
	}
	var c []string
	for _, m := range msgs {
		c = append(c, m.Content[:11])
	}
	e.got = append(e.got, c)
	return nil
}

func (e *evictions) batches() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.got...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute) // a hang guard: a loaded machine may take long
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func contents(ms []contextmgr.Message) []string {
	var out []string
	for _, m := range ms {
		if m.Summary {
			out = append(out, m.Content)
		} else {
			out = append(out, m.Content[:11])
		}
	}
	return out
}

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {strings.Repeat("é", 8), 2}} {
		if got := contextmgr.Tokens(tc.s); got != tc.want {
			t.Errorf("Tokens(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestSummarisesOldestHalfAtThreshold(t *testing.T) {
	leakcheck.Check(t)
	srv := llmtest.New(llmtest.Script(
		llmtest.Reply{Text: "Ayla promised the smith 20 gold."},
		llmtest.Reply{Text: "The smith revealed the cave entrance."}))
	defer srv.Close()
	ev := &evictions{}
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: 100, Summarizer: summarizer(srv), BeforeEvict: ev.hook, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	for i := range 7 { // 70 tokens: below 75
		m.Add(line(i))
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d summary requests below the threshold", n)
	}
	m.Add(line(7)) // 80 tokens: summarise messages 0-3
	waitFor(t, "the first summary is in", func() bool { return len(m.Summaries()) == 1 })

	got := contents(m.Messages())
	want := []string{contextmgr.SummaryPrefix + "\nAyla promised the smith 20 gold.",
		"message 004", "message 005", "message 006", "message 007"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("messages after the summary:\n got %q\nwant %q", got, want)
	}
	if b := ev.batches(); len(b) != 1 || fmt.Sprint(b[0]) != "[message 000 message 001 message 002 message 003]" {
		t.Fatalf("BeforeEvict got %q, want the four summarised messages", b)
	}
	if m.Messages()[0].Role != llm.RoleSystem {
		t.Error("the summary is not a system message")
	}

	// The request carried the instructions and the transcript.
	req := srv.Requests()[0]
	if req.Model != "summary-model" || len(req.Messages) != 2 || !strings.Contains(req.Messages[0].Content, "promises") ||
		!strings.Contains(req.Messages[0].Content, "game-mechanical outcomes") || !strings.Contains(req.Messages[1].Content, "Ayla: message 000") ||
		strings.Contains(req.Messages[1].Content, "message 004") {
		t.Errorf("unexpected summary request: %+v", req)
	}

	// Summaries accumulate in order.
	for i := 8; len(m.Summaries()) < 2; i++ {
		m.Add(line(i))
		if i > 40 {
			t.Fatal("no second summary")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if s := m.Summaries(); s[0] != "Ayla promised the smith 20 gold." || s[1] != "The smith revealed the cave entrance." {
		t.Errorf("summaries %q, want both in order", s)
	}
	msgs := m.Messages()
	if !msgs[0].Summary || !msgs[1].Summary || msgs[2].Summary {
		t.Errorf("summaries are not the leading messages: %q", contents(msgs))
	}
	if cm := m.ChatMessages(); cm[2].Name != "Ayla" || cm[0].Role != "system" {
		t.Errorf("chat messages %+v", cm[:3])
	}
}

func TestFailingSummariserDropsNothingAndRetries(t *testing.T) {
	leakcheck.Check(t)
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Status: http.StatusInternalServerError}))
	defer srv.Close()
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC))
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: 100, Summarizer: summarizer(srv), Clock: clk,
		RetryAfter: time.Minute, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 8 {
		m.Add(line(i))
	}
	waitFor(t, "the summary failed", func() bool { return m.Failures() == 1 })
	m.Add(line(8)) // within RetryAfter: no new attempt
	time.Sleep(50 * time.Millisecond)
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("%d requests before RetryAfter passed, want 1", n)
	}
	if got := len(m.Messages()); got != 9 || len(m.Summaries()) != 0 {
		t.Fatalf("%d messages and %d summaries after a failure; want all 9 kept", got, len(m.Summaries()))
	}

	srv.SetHandler(llmtest.Script(llmtest.Reply{Text: "They agreed to meet at dawn."}))
	clk.Advance(time.Minute)
	m.Add(line(9))
	waitFor(t, "the retry succeeded", func() bool { return len(m.Summaries()) == 1 })
	if got := contents(m.Messages()); len(got) != 6 || got[1] != "message 005" {
		t.Errorf("after the retry: %q", got)
	}
}

func TestBeforeEvictFailureKeepsMessages(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "summary"}))
	defer srv.Close()
	ev := &evictions{fail: errors.New("session log unavailable")}
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: 1000, Summarizer: summarizer(srv), BeforeEvict: ev.hook, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := range 4 {
		m.Add(line(i))
	}
	if err := m.Compact(context.Background()); err == nil || !strings.Contains(err.Error(), "session log unavailable") {
		t.Fatalf("Compact = %v, want the BeforeEvict error", err)
	}
	if len(m.Messages()) != 4 || len(m.Summaries()) != 0 {
		t.Fatalf("messages were dropped although they could not be saved")
	}
}

func TestSlowSummariser(t *testing.T) {
	leakcheck.Check(t)
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "late summary", Delay: 3 * time.Second}))
	defer srv.Close()
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: 100, Summarizer: summarizer(srv),
		SummaryTimeout: 300 * time.Millisecond, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		m.Add(line(i))
	}
	// Adding goes on while the summary is outstanding.
	waitFor(t, "the summary request arrived", func() bool { return len(srv.Requests()) == 1 })
	m.Add(line(8))
	if got := len(m.Messages()); got != 9 {
		t.Fatalf("%d messages while the summary is outstanding, want 9", got)
	}
	waitFor(t, "the slow summary timed out", func() bool { return m.Failures() == 1 })
	if len(m.Messages()) != 9 || len(m.Summaries()) != 0 {
		t.Fatal("a timed-out summary dropped messages")
	}

	// Close interrupts a summary in flight.
	srv.SetHandler(llmtest.Script(llmtest.Reply{Text: "never", Delay: time.Minute}))
	m2, err := contextmgr.New(contextmgr.Config{MaxTokens: 100, Summarizer: summarizer(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		m2.Add(line(i))
	}
	waitFor(t, "the second summary request arrived", func() bool { return len(srv.Requests()) == 2 })
	done := make(chan struct{})
	go func() { m2.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal("Close did not interrupt the summary")
	}
	m.Close()
}

func TestConfigErrors(t *testing.T) {
	s := contextmgr.SummarizerFunc(func(context.Context, []contextmgr.Message) (string, error) { return "s", nil })
	for _, cfg := range []contextmgr.Config{
		{Summarizer: s},
		{MaxTokens: 10},
		{MaxTokens: 10, Summarizer: s, Threshold: 1.5},
	} {
		if _, err := contextmgr.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestEmptySummaryIsAFailure(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "   "}))
	defer srv.Close()
	m, _ := contextmgr.New(contextmgr.Config{MaxTokens: 1000, Summarizer: summarizer(srv), Logger: quiet()})
	defer m.Close()
	m.Add(line(0))
	m.Add(line(1))
	if err := m.Compact(context.Background()); err == nil {
		t.Fatal("an empty summary was accepted")
	}
	if len(m.Messages()) != 2 {
		t.Fatal("messages dropped")
	}
}

func TestSummariesFoldWhenTheyGrow(t *testing.T) {
	leakcheck.Check(t)
	srv := llmtest.New(func(n int, _ llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: fmt.Sprintf("Summary number %d of the evening's events.", n)}
	})
	defer srv.Close()
	ev := &evictions{}
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: 100, Summarizer: summarizer(srv), BeforeEvict: ev.hook, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	maxSummaries := 0
	for i := range 200 {
		m.Add(line(i))
		if err := m.Compact(context.Background()); err != nil {
			t.Fatal(err)
		}
		maxSummaries = max(maxSummaries, len(m.Summaries()))
		if m.Tokens() > 100 {
			t.Fatalf("after %d messages the conversation has %d tokens, over the 100-token budget", i+1, m.Tokens())
		}
	}
	if maxSummaries > 3 {
		t.Errorf("up to %d summaries were kept; they should fold", maxSummaries)
	}
	folded := false
	for _, r := range srv.Requests() {
		if strings.Contains(r.Messages[1].Content, "(earlier summary) Summary number") {
			folded = true
		}
	}
	if !folded {
		t.Error("no summary request folded earlier summaries")
	}
	// Every message went to BeforeEvict exactly once, summaries never.
	seen := map[string]int{}
	for _, b := range ev.batches() {
		for _, c := range b {
			seen[c]++
		}
	}
	for c, n := range seen {
		if n != 1 || !strings.HasPrefix(c, "message ") {
			t.Errorf("BeforeEvict got %q %d times", c, n)
		}
	}
}
