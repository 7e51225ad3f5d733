package correction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
)

// Defaults of the LLM corrector.
const (
	// DefaultTemperature keeps the model close to the text it is given.
	DefaultTemperature = 0.1
	// DefaultLLMTimeout bounds one correction request; a later reply is
	// ignored and the stage-1 text stands.
	DefaultLLMTimeout = 5 * time.Second
	// DefaultMaxEntities caps the names sent in one request.
	DefaultMaxEntities = 200
)

// LLMCorrector asks a language model behind any OpenAI-compatible
// chat-completions endpoint to restore names stage 1 missed (stage 2). It
// only proposes: [Pipeline.Refine] checks every change against the
// substitutions the model declares and reverts the rest. It is safe for
// concurrent use.
type LLMCorrector struct {
	api         *llm.Client
	model       string
	temperature float32
	timeout     time.Duration
	maxEntities int
	log         *slog.Logger
}

// LLMOption configures an LLMCorrector.
type LLMOption func(*llmConfig)

type llmConfig struct {
	temperature float32
	timeout     time.Duration
	maxEntities int
	httpClient  *http.Client
	log         *slog.Logger
}

// WithTemperature sets the sampling temperature (default 0.1).
func WithTemperature(t float32) LLMOption { return func(c *llmConfig) { c.temperature = t } }

// WithLLMTimeout bounds one request (default 5 s).
func WithLLMTimeout(d time.Duration) LLMOption { return func(c *llmConfig) { c.timeout = d } }

// WithMaxEntities caps the names listed in one request (default 200).
func WithMaxEntities(n int) LLMOption { return func(c *llmConfig) { c.maxEntities = n } }

// WithHTTPClient sets the HTTP client (proxies, tests).
func WithHTTPClient(h *http.Client) LLMOption { return func(c *llmConfig) { c.httpClient = h } }

// WithLLMLogger sets the logger reporting rejected changes.
func WithLLMLogger(l *slog.Logger) LLMOption { return func(c *llmConfig) { c.log = l } }

// ErrLLMConfig is wrapped by the errors of NewLLMCorrector.
var ErrLLMConfig = errors.New("invalid LLM corrector configuration")

// NewLLMCorrector returns a corrector for the endpoint at baseURL (for
// example https://api.openai.com/v1 or http://localhost:11434/v1).
func NewLLMCorrector(baseURL, apiKey, model string, opts ...LLMOption) (*LLMCorrector, error) {
	cfg := llmConfig{temperature: DefaultTemperature, timeout: DefaultLLMTimeout, maxEntities: DefaultMaxEntities}
	for _, o := range opts {
		o(&cfg)
	}
	switch {
	case strings.TrimSpace(baseURL) == "":
		return nil, fmt.Errorf("%w: no base URL", ErrLLMConfig)
	case strings.TrimSpace(model) == "":
		return nil, fmt.Errorf("%w: no model", ErrLLMConfig)
	case cfg.temperature < 0 || cfg.temperature > 2:
		return nil, fmt.Errorf("%w: temperature %v is outside 0..2", ErrLLMConfig, cfg.temperature)
	case cfg.timeout <= 0:
		return nil, fmt.Errorf("%w: timeout %v is not positive", ErrLLMConfig, cfg.timeout)
	case cfg.maxEntities <= 0:
		return nil, fmt.Errorf("%w: max entities %d is not positive", ErrLLMConfig, cfg.maxEntities)
	}
	// The timeout bounds the whole correction (see propose), retries
	// included; one attempt may take all of it.
	api, err := llm.New(llm.Config{BaseURL: baseURL, APIKey: apiKey, Model: model, Temperature: cfg.temperature, MaxTokens: maxCorrectionTokens,
		Timeout: cfg.timeout, FirstTokenTimeout: cfg.timeout, HTTPClient: cfg.httpClient})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLLMConfig, err)
	}
	log := cfg.log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &LLMCorrector{api: api, model: model, temperature: cfg.temperature,
		timeout: cfg.timeout, maxEntities: cfg.maxEntities, log: log}, nil
}

// llmRequest is the user message sent to the model.
type llmRequest struct {
	Text       string      `json:"text"`
	Candidates []string    `json:"candidates"`
	Entities   []llmEntity `json:"entities"`
}

type llmEntity struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
}

// llmReply is the JSON object the model must answer with.
type llmReply struct {
	Text          string            `json:"text"`
	Substitutions []llmSubstitution `json:"substitutions"`
}

type llmSubstitution struct {
	Original    string `json:"original"`
	Replacement string `json:"replacement"`
	EntityID    string `json:"entity_id"`
}

const llmSystemPrompt = `You fix names in speech-to-text transcripts of a tabletop role-playing game.
The user sends JSON: "text" (the transcript), "candidates" (the only words you may change: the recogniser was unsure of them) and "entities" (the campaign's names, with ids and aliases).
If some candidate words are a misheard entity name, replace those words with the name or alias, spelled exactly as listed. Change nothing else: no other words, no punctuation, no casing, no grammar.
Answer with one JSON object and nothing else:
{"text": "<the corrected transcript>", "substitutions": [{"original": "<words replaced>", "replacement": "<name written>", "entity_id": "<id>"}]}
If nothing needs fixing, return the text unchanged and an empty substitutions list.`

// maxCorrectionTokens caps a reply: the transcript line again and its
// substitutions.
const maxCorrectionTokens = 1024

// errBadReply marks a reply that is not the JSON object asked for.
var errBadReply = errors.New("LLM reply is not the correction JSON")

// propose sends one request and decodes the model's answer.
func (c *LLMCorrector) propose(ctx context.Context, text string, candidates []string, es []Entity) (llmReply, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req := llmRequest{Text: text, Candidates: candidates}
	for i, e := range es {
		if i == c.maxEntities {
			break
		}
		req.Entities = append(req.Entities, llmEntity{ID: e.ID, Name: e.Name, Aliases: e.Aliases})
	}
	body, err := json.Marshal(req)
	if err != nil {
		return llmReply{}, fmt.Errorf("encoding the correction request: %w", err)
	}
	temp := c.temperature
	resp, err := c.api.Complete(ctx, llm.Request{
		Temperature: &temp,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: llmSystemPrompt},
			{Role: llm.RoleUser, Content: string(body)},
		},
		JSON: true,
	})
	if err != nil {
		return llmReply{}, fmt.Errorf("LLM correction request to %s: %w", c.model, err)
	}
	content := strings.TrimSpace(resp.Text)
	// Some servers wrap JSON in a Markdown fence despite the format.
	content = strings.TrimPrefix(content, "```json")
	content = strings.TrimPrefix(content, "```")
	content = strings.TrimSuffix(content, "```")
	var r llmReply
	if err := json.Unmarshal([]byte(content), &r); err != nil {
		return llmReply{}, fmt.Errorf("%w: %v (reply %.80q)", errBadReply, err, content)
	}
	if strings.TrimSpace(r.Text) == "" {
		return llmReply{}, fmt.Errorf("%w: empty text (reply %.80q)", errBadReply, content)
	}
	return r, nil
}
