package llm_test

import (
	"context"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

// TestOnUsageCountsEveryCall: streamed turns and the plain calls
// (summaries, extraction) all reach the token counter, once.
func TestOnUsageCountsEveryCall(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "Aye, the shipment."}, llmtest.Reply{Text: "A summary."}))
	defer srv.Close()
	var mu sync.Mutex
	var calls, prompt, completion int
	c := client(t, srv, func(cfg *llm.Config) {
		cfg.OnUsage = func(u llm.Usage) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			prompt += u.PromptTokens
			completion += u.CompletionTokens
		}
	})
	ctx := context.Background()
	res, err := c.Stream(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Grimjaw?"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := c.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Summarise."}}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n, in, out := c.Totals(); n != 2 || int(in) != prompt || int(out) != completion {
		t.Errorf("totals %d requests, %d+%d tokens; the callback saw 2, %d+%d", n, in, out, prompt, completion)
	}
	if calls != 2 {
		t.Fatalf("%d usages reported for 2 calls", calls)
	}
	wantPrompt := res.Usage.PromptTokens + plain.Usage.PromptTokens
	wantCompletion := res.Usage.CompletionTokens + plain.Usage.CompletionTokens
	if prompt != wantPrompt || completion != wantCompletion || prompt == 0 || completion == 0 {
		t.Fatalf("counted %d+%d tokens, the calls report %d+%d", prompt, completion, wantPrompt, wantCompletion)
	}
}
