// Package llm is glyphoxa's one client of OpenAI-compatible endpoints
// (OpenAI, Groq, Ollama, vLLM, llama.cpp server…). Every LLM call goes
// through a [Client]: NPC turns ([Client.Stream]: streamed replies,
// function calling), summaries, fact extraction, name correction, recaps
// and question decomposition ([Client.Complete]), and embeddings
// ([Client.Embed]). They share one behaviour: a timeout per request,
// retries of requests that failed before any output (jittered backoff,
// the server's Retry-After honoured, a bounded number of attempts), and
// token accounting.
//
// The message and tool types are go-openai's, re-exported ([Message],
// [Tool], [ToolCall]…), so that no other package imports go-openai.
// Package llmtest is a local fake endpoint speaking the same wire format.
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

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
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
	// output is retried (default 2; negative for none), with Backoff
	// (default 250 ms) doubling, jittered by ±50 %, up to MaxBackoff
	// (default 10 s).
	Retries    int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After of a server the client
	// waits for (default 30 s); a server asking for more gets no retry.
	MaxRetryAfter time.Duration
	// HTTPClient overrides the HTTP client (tests, proxies).
	HTTPClient *http.Client
	// OnUsage, if set, receives the tokens of every request (Stream,
	// Complete, Embed).
	OnUsage func(Usage)
	// Clock times the waits between retries (default the system clock);
	// Rand returns a uniform number in [0, 1) that picks their jitter
	// (default math/rand/v2; a constant 0.5 means none).
	Clock clock.Clock
	Rand  func() float64
}

// ErrNotConfigured is returned when no endpoint or model is configured.
var ErrNotConfigured = errors.New("no LLM endpoint configured: set GLYPHOXA_LLM_BASE_URL (and GLYPHOXA_LLM_API_KEY, GLYPHOXA_LLM_MODEL) or providers.llm in the configuration")

// Client is an LLM endpoint. It is safe for concurrent use.
type Client struct {
	api     *openai.Client
	cfg     Config
	backoff reconnect.Backoff
	clock   clock.Clock
	rand    func() float64

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
	if cfg.Backoff <= 0 {
		cfg.Backoff = 250 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = 30 * time.Second
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	clk := clock.OrReal(cfg.Clock)
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	hc.Transport = retryAfterTransport{base: rt, clock: clk}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	oc.HTTPClient = hc
	return &Client{api: openai.NewClientWithConfig(oc), cfg: cfg, clock: clk, rand: cfg.Rand,
		backoff: reconnect.Backoff{Initial: cfg.Backoff, Max: cfg.MaxBackoff, Multiplier: 2, Jitter: 0.5}}, nil
}

// Streamer is what talks to an LLM: a *Client, or a test's stand-in. The
// NPC agent and the recap writer take one.
type Streamer interface {
	Stream(ctx context.Context, req Request, onText func(string)) (Response, error)
}

var _ Streamer = (*Client)(nil)

// Model is the configured model name.
func (c *Client) Model() string { return c.cfg.Model }

// Request is one chat completion.
type Request struct {
	Messages []Message
	Tools    []Tool
	// Model overrides the client's, when not empty.
	Model string
	// Temperature overrides the client's, when non-nil.
	Temperature *float32
	// MaxTokens overrides the client's, when non-zero.
	MaxTokens int
	// JSON asks for a JSON object (response_format json_object; Complete
	// only).
	JSON bool
	// Timeout overrides the client's per-request timeout, when positive
	// (long work such as fact extraction; Complete only).
	Timeout time.Duration
}

// Response is a finished completion.
type Response struct {
	Text      string
	ToolCalls []ToolCall
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
	var resp Response
	n, err := c.retry(ctx, "LLM request", func(ctx context.Context) (bool, error) {
		var produced bool
		var err error
		resp, produced, err = c.streamOnce(ctx, req, onText)
		return produced, err
	})
	resp.Attempts = n
	if err != nil {
		if errors.Is(err, ErrReplyTooLong) {
			c.account(resp.Usage)
		}
		return resp, err
	}
	c.account(resp.Usage)
	return resp, nil
}

func (c *Client) account(u Usage) {
	if c.cfg.OnUsage != nil {
		c.cfg.OnUsage(u)
	}
	c.requests.Add(1)
	c.promptTokens.Add(int64(u.PromptTokens))
	c.completionTokens.Add(int64(u.CompletionTokens))
}

func (c *Client) streamOnce(ctx context.Context, req Request, onText func(string)) (Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	creq := c.request(req)
	creq.Stream, creq.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
	start := time.Now()

	// The first-token watchdog cancels a request that stays silent.
	firstCtx, firstCancel := context.WithCancelCause(ctx)
	defer firstCancel(nil)
	timer := time.AfterFunc(c.cfg.FirstTokenTimeout, func() { firstCancel(errNoFirstToken) })
	defer timer.Stop()

	stream, err := c.api.CreateChatCompletionStream(firstCtx, creq)
	if err != nil {
		if cause := context.Cause(firstCtx); errors.Is(cause, errNoFirstToken) {
			return Response{}, false, fmt.Errorf("LLM request to %s: %w (%s)", creq.Model, errNoFirstToken, c.cfg.FirstTokenTimeout)
		}
		return Response{}, false, fmt.Errorf("LLM request to %s: %w", creq.Model, err)
	}
	defer stream.Close()

	var resp Response
	var text strings.Builder
	calls := map[int]*openai.ToolCall{}
	var order []int
	produced := false
	// read counts the reply's text and tool-call arguments against what
	// max_tokens allows.
	read, most := 0, MaxReplyBytes(creq.MaxTokens)
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if cause := context.Cause(firstCtx); errors.Is(cause, errNoFirstToken) && !produced {
				return resp, false, fmt.Errorf("LLM stream from %s: %w (%s)", creq.Model, errNoFirstToken, c.cfg.FirstTokenTimeout)
			}
			return resp, produced, fmt.Errorf("LLM stream from %s: %w", creq.Model, err)
		}
		if chunk.Usage != nil {
			resp.Usage = Usage{PromptTokens: chunk.Usage.PromptTokens, CompletionTokens: chunk.Usage.CompletionTokens}
		}
		for _, ch := range chunk.Choices {
			if ch.FinishReason != "" {
				resp.FinishReason = string(ch.FinishReason)
			}
			d := ch.Delta
			read += len(d.Content)
			for _, tc := range d.ToolCalls {
				read += len(tc.Function.Name) + len(tc.Function.Arguments)
			}
			if read > most {
				resp.Text, resp.FinishReason = text.String(), string(openai.FinishReasonLength)
				resp.Usage = estimateUsage(req.Messages, resp) // the tokens were spent
				return resp, produced, fmt.Errorf("LLM stream from %s: %w: more than %d bytes for max_tokens %d",
					creq.Model, ErrReplyTooLong, most, creq.MaxTokens)
			}
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

// request is the go-openai request for req, with the client's defaults.
func (c *Client) request(req Request) openai.ChatCompletionRequest {
	model := c.cfg.Model
	if req.Model != "" {
		model = req.Model
	}
	temp := c.cfg.Temperature
	if req.Temperature != nil {
		temp = *req.Temperature
	}
	maxTokens := c.cfg.MaxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	creq := openai.ChatCompletionRequest{Model: model, Messages: req.Messages, Tools: req.Tools, Temperature: temp, MaxTokens: maxTokens}
	if req.JSON {
		creq.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return creq
}

// estimateUsage counts four characters per token when the server reports
// no usage.
func estimateUsage(msgs []Message, r Response) Usage {
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
