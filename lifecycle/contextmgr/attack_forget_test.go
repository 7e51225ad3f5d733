package contextmgr_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestAttackForgetLateInALongSessionAsksABoundedSummary: a player asks to
// be forgotten four hours into a session. The summary that folded the
// whole evening covered every message of it, and forgetting rewrote it
// from all of them at once: one request to the model that grew with the
// session (at five hours of talk, tens of thousands of tokens, past a
// model's context window: the rewrite failed and every message came back
// into the conversation). Each request must stay within the budget the
// conversation itself is summarised at, and the rewritten summary must
// still start from the evening's first events, without the forgotten
// player's words.
func TestAttackForgetLateInALongSessionAsksABoundedSummary(t *testing.T) {
	const maxTokens = 100
	var mu sync.Mutex
	largest := 0
	sum := contextmgr.SummarizerFunc(func(_ context.Context, msgs []contextmgr.Message) (string, error) {
		n := 0
		var first string
		for _, m := range msgs {
			n += contextmgr.Tokens(m.Content)
			if first == "" {
				first = strings.TrimPrefix(m.Content, contextmgr.SummaryPrefix+"\n")
			}
		}
		mu.Lock()
		largest = max(largest, n)
		mu.Unlock()
		// A model's summary: short, and it keeps what came first.
		if msgs[0].Summary {
			return first, nil
		}
		return "Summary from " + first[:min(len(first), 24)], nil
	})
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: maxTokens, Summarizer: sum, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	who := []string{"thorin", "bram"}
	for i := range 1000 {
		sp := who[i%2]
		m.Add(contextmgr.Message{Role: llm.RoleUser, Name: sp, Content: fmt.Sprintf("%s says %04d %s", sp, i, strings.Repeat("x", 20)),
			Entry: memory.TranscriptEntry{SpeakerID: sp, IdempotencyKey: fmt.Sprint(i)}})
		if err := m.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	largest = 0
	mu.Unlock()
	rep, err := m.Forget(ctx, "bram")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summaries == 0 {
		t.Fatal("no summary held bram's words: the test did not reach its case")
	}
	budget := int(contextmgr.DefaultThreshold * maxTokens)
	if largest > budget {
		t.Errorf("forgetting asked the model to summarise %d tokens at once; the conversation's budget is %d", largest, budget)
	}
	for _, s := range m.Summaries() {
		if strings.Contains(s, "bram") {
			t.Errorf("a summary still holds bram's words: %q", s)
		}
	}
	if sums := m.Summaries(); len(sums) == 0 || !strings.Contains(sums[0], "thorin says 0000") {
		t.Errorf("the rewritten summaries lost the evening's first events: %q", sums)
	}
	for _, x := range m.Messages() {
		if !x.Summary && x.Entry.SpeakerID == "bram" {
			t.Errorf("bram's message %q is still in the conversation", x.Content)
		}
	}
}
