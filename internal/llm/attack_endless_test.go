package llm_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

// TestAttackEndlessReply: a server that ignores max_tokens and streams a
// reply without end is cut off once the reply runs past what max_tokens
// allows (llm.MaxReplyBytes): the call fails with ErrReplyTooLong, naming
// the limit, having handed over no more than that, without waiting for the
// request's time-out and without a retry (the words were said).
func TestAttackEndlessReply(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "Aye, the forge burns hot tonight. "}))
	defer srv.Close()
	srv.SetHandler(llmtest.Script(llmtest.Reply{Text: "Aye, the forge burns hot tonight. ", Endless: true}))
	// The time-out only guards against a hang: the bound must end the
	// reply long before it.
	c := client(t, srv, func(cfg *llm.Config) { cfg.Timeout = 20 * time.Second; cfg.MaxTokens = 100 })
	handed := 0
	resp, err := c.Stream(context.Background(), llm.Request{Messages: user("tell me a story")}, func(s string) { handed += len(s) })
	if !errors.Is(err, llm.ErrReplyTooLong) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a %d-byte reply (%d handed over), error %v; want ErrReplyTooLong", len(resp.Text), handed, err)
	}
	t.Log(err)
	if limit := llm.MaxReplyBytes(100); handed > limit || len(resp.Text) > limit {
		t.Errorf("%d bytes handed over, %d kept, more than the %d max_tokens 100 allows", handed, len(resp.Text), limit)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (no retry after words were said)", n)
	}
}
