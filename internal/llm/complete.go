package llm

import (
	"context"
	"errors"
	"fmt"
)

// Completer is what asks an LLM for a whole answer: a *Client, or a test's
// stand-in. Summaries, fact extraction, name correction and question
// decomposition take one.
type Completer interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

var _ Completer = (*Client)(nil)

// errNoChoices reports a reply without an answer.
var errNoChoices = errors.New("the reply has no choices")

// Complete sends req and returns the whole answer (not streamed), with the
// same timeout per request, retries and token accounting as Stream. Set
// req.JSON to ask for a JSON object.
func (c *Client) Complete(ctx context.Context, req Request) (Response, error) {
	creq := c.request(req)
	timeout := c.cfg.Timeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	var resp Response
	n, err := c.retry(ctx, "LLM request", func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		r, err := c.api.CreateChatCompletion(ctx, creq)
		if err != nil {
			return false, fmt.Errorf("LLM request to %s: %w", creq.Model, err)
		}
		if len(r.Choices) == 0 {
			return false, fmt.Errorf("LLM request to %s: %w", creq.Model, errNoChoices)
		}
		ch := r.Choices[0]
		resp = Response{Text: ch.Message.Content, ToolCalls: ch.Message.ToolCalls, FinishReason: string(ch.FinishReason),
			Usage: Usage{PromptTokens: r.Usage.PromptTokens, CompletionTokens: r.Usage.CompletionTokens}}
		return false, nil
	})
	resp.Attempts = n
	if err != nil {
		return resp, err
	}
	if resp.Usage == (Usage{}) {
		resp.Usage = estimateUsage(req.Messages, resp)
	}
	c.account(resp.Usage)
	return resp, nil
}
