// Package llm talks to any OpenAI-compatible chat-completions endpoint
// (OpenAI, Groq, Ollama, vLLM, llama.cpp server…) for NPC turns: streaming
// replies, function calling, timeouts, retries before the first token, and
// token accounting.
package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Config configures a Client. Zero values take the defaults noted.
type Config struct {
	// BaseURL of the API, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 (Ollama).
	BaseURL string
	APIKey  string
	Model   string
	// Temperature of NPC replies (default 0.8).
	Temperature float32
	// MaxTokens caps a reply (default 300: NPCs speak, they do not lecture).
	MaxTokens int
	// FirstTokenTimeout bounds the wait for the first streamed token
	// (default 10 s); Timeout bounds a whole request (default 60 s).
	FirstTokenTimeout time.Duration
	Timeout           time.Duration
	// Retries is how often a request that failed before producing any
	// output is retried (default 2), with Backoff doubling from 250 ms.
	Retries int
	Backoff time.Duration
	// HTTPClient overrides the HTTP client (tests, proxies).
	HTTPClient *http.Client
	// OnUsage, if set, receives the tokens of every request: those of
	// Stream, and those of the other calls made through API (summaries,
	// extraction), read from their responses.
	OnUsage func(Usage)
}

// ErrNotConfigured is returned when no endpoint or model is configured.
var ErrNotConfigured = errors.New("no LLM endpoint configured: set GLYPHOXA_LLM_BASE_URL (and GLYPHOXA_LLM_API_KEY, GLYPHOXA_LLM_MODEL) or providers.llm in the configuration")

// Client is an LLM endpoint. It is safe for concurrent use.
type Client struct {
	api *openai.Client
	cfg Config

	promptTokens     atomic.Int64
	completionTokens atomic.Int64
	requests         atomic.Int64
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if strings.TrimSpace(cfg.BaseURL) == "" || strings.TrimSpace(cfg.Model) == "" {
		return nil, ErrNotConfigured
	}
	if cfg.Temperature == 0 {
		cfg.Temperature = 0.8
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = 300
	}
	if cfg.FirstTokenTimeout == 0 {
		cfg.FirstTokenTimeout = 10 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 2
	}
	if cfg.Retries < 0 {
		cfg.Retries = 0
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = 250 * time.Millisecond
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.HTTPClient != nil {
		oc.HTTPClient = cfg.HTTPClient
	}
	if cfg.OnUsage != nil {
		base, _ := oc.HTTPClient.(*http.Client)
		oc.HTTPClient = CountingHTTPClient(base, cfg.OnUsage)
	}
	return &Client{api: openai.NewClientWithConfig(oc), cfg: cfg}, nil
}

// Streamer is what talks to an LLM: a *Client, or a test's stand-in. The
// NPC agent and the recap writer take one.
type Streamer interface {
	Stream(ctx context.Context, req Request, onText func(string)) (Response, error)
}

var _ Streamer = (*Client)(nil)

// Model is the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// API is the go-openai client underneath, for the other LLM calls of
// glyphoxa (summaries, fact extraction), so that one configuration and one
// HTTP client serve them all.
func (c *Client) API() *openai.Client { return c.api }

// Request is one chat completion.
type Request struct {
	Messages []openai.ChatCompletionMessage
	Tools    []openai.Tool
	// Temperature overrides the client's, when non-nil.
	Temperature *float32
	// MaxTokens overrides the client's, when non-zero.
	MaxTokens int
}

// Response is a finished completion.
type Response struct {
	Text      string
	ToolCalls []openai.ToolCall
	// FinishReason is the server's (stop, length, tool_calls…).
	FinishReason string
	Usage        Usage
	// FirstToken is the time from sending to the first streamed output.
	FirstToken time.Duration
	// Attempts is how many requests were sent (retries included).
	Attempts int
}

// Usage counts tokens. Estimated is true when the server did not report
// usage and the counts were estimated at four characters per token.
type Usage struct {
	PromptTokens, CompletionTokens int
	Estimated                      bool
}

// Totals reports the tokens used by every request of this client.
func (c *Client) Totals() (requests, promptTokens, completionTokens int64) {
	return c.requests.Load(), c.promptTokens.Load(), c.completionTokens.Load()
}

// Stream sends req and calls onText with each piece of reply text as it
// arrives. A request that fails before any output (connection refused, a
// 429 or 5xx, no first token in time) is retried; once output has reached
// onText it is not, so nothing is ever said twice.
func (c *Client) Stream(ctx context.Context, req Request, onText func(string)) (Response, error) {
	var lastErr error
	for attempt := 0; attempt <= c.cfg.Retries; attempt++ {
		if attempt > 0 {
			wait := c.cfg.Backoff << (attempt - 1)
			wait += time.Duration(rand.Int64N(int64(wait)/2 + 1))
			select {
			case <-ctx.Done():
				return Response{Attempts: attempt}, fmt.Errorf("LLM request: %w (after: %v)", ctx.Err(), lastErr)
			case <-time.After(wait):
			}
		}
		resp, produced, err := c.streamOnce(ctx, req, onText)
		resp.Attempts = attempt + 1
		if err == nil {
			c.account(resp.Usage)
			return resp, nil
		}
		lastErr = err
		if produced || !retryable(ctx, err) {
			return resp, err
		}
	}
	return Response{Attempts: c.cfg.Retries + 1}, fmt.Errorf("LLM request failed after %d attempts: %w", c.cfg.Retries+1, lastErr)
}

func (c *Client) account(u Usage) {
	if c.cfg.OnUsage != nil {
		c.cfg.OnUsage(u)
	}
	c.requests.Add(1)
	c.promptTokens.Add(int64(u.PromptTokens))
	c.completionTokens.Add(int64(u.CompletionTokens))
}

// errNoFirstToken reports a server that accepted a request but stayed silent.
var errNoFirstToken = errors.New("no first token in time")

func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, errNoFirstToken) {
		return true
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode == http.StatusTooManyRequests || apiErr.HTTPStatusCode >= 500
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode == http.StatusTooManyRequests || reqErr.HTTPStatusCode >= 500
	}
	// Transport errors (refused, reset) are worth another try.
	return !errors.Is(err, context.Canceled)
}

func (c *Client) streamOnce(ctx context.Context, req Request, onText func(string)) (Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	temp := c.cfg.Temperature
	if req.Temperature != nil {
		temp = *req.Temperature
	}
	maxTokens := c.cfg.MaxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	creq := openai.ChatCompletionRequest{
		Model: c.cfg.Model, Messages: req.Messages, Tools: req.Tools, Temperature: temp, MaxTokens: maxTokens,
		Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
	start := time.Now()

	// The first-token watchdog cancels a request that stays silent.
	firstCtx, firstCancel := context.WithCancelCause(ctx)
	defer firstCancel(nil)
	timer := time.AfterFunc(c.cfg.FirstTokenTimeout, func() { firstCancel(errNoFirstToken) })
	defer timer.Stop()

	stream, err := c.api.CreateChatCompletionStream(firstCtx, creq)
	if err != nil {
		if cause := context.Cause(firstCtx); errors.Is(cause, errNoFirstToken) {
			return Response{}, false, fmt.Errorf("LLM request to %s: %w (%s)", c.cfg.Model, errNoFirstToken, c.cfg.FirstTokenTimeout)
		}
		return Response{}, false, fmt.Errorf("LLM request to %s: %w", c.cfg.Model, err)
	}
	defer stream.Close()

	var resp Response
	var text strings.Builder
	calls := map[int]*openai.ToolCall{}
	var order []int
	produced := false
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if cause := context.Cause(firstCtx); errors.Is(cause, errNoFirstToken) && !produced {
				return resp, false, fmt.Errorf("LLM stream from %s: %w (%s)", c.cfg.Model, errNoFirstToken, c.cfg.FirstTokenTimeout)
			}
			return resp, produced, fmt.Errorf("LLM stream from %s: %w", c.cfg.Model, err)
		}
		if chunk.Usage != nil {
			resp.Usage = Usage{PromptTokens: chunk.Usage.PromptTokens, CompletionTokens: chunk.Usage.CompletionTokens}
		}
		for _, ch := range chunk.Choices {
			if ch.FinishReason != "" {
				resp.FinishReason = string(ch.FinishReason)
			}
			d := ch.Delta
			if d.Content != "" || len(d.ToolCalls) > 0 {
				if !produced {
					produced = true
					timer.Stop()
					resp.FirstToken = time.Since(start)
				}
			}
			if d.Content != "" {
				text.WriteString(d.Content)
				if onText != nil {
					onText(d.Content)
				}
			}
			for _, tc := range d.ToolCalls {
				idx := 0
				if tc.Index != nil {
					idx = *tc.Index
				}
				cur, ok := calls[idx]
				if !ok {
					cur = &openai.ToolCall{Type: openai.ToolTypeFunction}
					calls[idx] = cur
					order = append(order, idx)
				}
				if tc.ID != "" {
					cur.ID = tc.ID
				}
				if tc.Function.Name != "" {
					cur.Function.Name += tc.Function.Name
				}
				cur.Function.Arguments += tc.Function.Arguments
			}
		}
	}
	resp.Text = text.String()
	for _, idx := range order {
		resp.ToolCalls = append(resp.ToolCalls, *calls[idx])
	}
	if resp.Usage == (Usage{}) {
		resp.Usage = estimateUsage(req.Messages, resp)
	}
	return resp, produced, nil
}

// estimateUsage counts four characters per token when the server reports
// no usage.
func estimateUsage(msgs []openai.ChatCompletionMessage, r Response) Usage {
	in := 0
	for _, m := range msgs {
		in += len(m.Content)
	}
	out := len(r.Text)
	for _, tc := range r.ToolCalls {
		out += len(tc.Function.Name) + len(tc.Function.Arguments)
	}
	return Usage{PromptTokens: (in + 3) / 4, CompletionTokens: (out + 3) / 4, Estimated: true}
}
