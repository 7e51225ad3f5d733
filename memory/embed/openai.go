package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/glyphoxa/glyphoxa/internal/llm"
)

// OpenAIConfig configures an [OpenAI] embedder.
type OpenAIConfig struct {
	// BaseURL is the API root including /v1 (default OpenAI's).
	BaseURL string
	// APIKey is sent as a bearer token; local servers may not need one.
	APIKey string
	// Model names the embedding model (required), e.g.
	// "text-embedding-3-small" or "nomic-embed-text".
	Model string
	// Dimensions is the vector length the model produces (required).
	Dimensions int
	// RequestDimensions asks the endpoint to shorten its vectors to
	// Dimensions (text-embedding-3 models support it; many local servers do
	// not).
	RequestDimensions bool
	// MaxBatch caps the texts per request (default 64).
	MaxBatch int
	// HTTPClient is the client to use (default http.DefaultClient).
	HTTPClient *http.Client
}

// defaultOpenAIBaseURL is the API root when OpenAIConfig.BaseURL is empty.
const defaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAI embeds through an OpenAI-compatible /v1/embeddings endpoint, with
// the timeouts and retries of package internal/llm.
type OpenAI struct {
	cfg    OpenAIConfig
	client *llm.Client
}

// NewOpenAI returns an embedder for cfg.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai embedder: a model is required (e.g. text-embedding-3-small)")
	}
	if cfg.Dimensions <= 0 {
		return nil, fmt.Errorf("openai embedder: dimensions must be positive, got %d", cfg.Dimensions)
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultBatch
	}
	base := cfg.BaseURL
	if strings.TrimSpace(base) == "" {
		base = defaultOpenAIBaseURL
	}
	client, err := llm.New(llm.Config{BaseURL: base, APIKey: cfg.APIKey, Model: cfg.Model, HTTPClient: cfg.HTTPClient})
	if err != nil {
		return nil, fmt.Errorf("openai embedder: %w", err)
	}
	return &OpenAI{cfg: cfg, client: client}, nil
}

// Dimensions is the configured vector length.
func (o *OpenAI) Dimensions() int { return o.cfg.Dimensions }

// MaxBatch is the most texts sent in one request.
func (o *OpenAI) MaxBatch() int { return o.cfg.MaxBatch }

// Embed sends texts in one request (use [All] for more than MaxBatch) and
// checks that every vector has the configured dimension.
func (o *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if len(texts) > o.cfg.MaxBatch {
		return nil, fmt.Errorf("openai embedder: %d texts exceed the batch size %d", len(texts), o.cfg.MaxBatch)
	}
	in := make([]string, len(texts))
	for i, t := range texts {
		// Endpoints reject empty input; a single space embeds as "nothing".
		if strings.TrimSpace(t) == "" {
			t = " "
		}
		in[i] = t
	}
	dims := 0
	if o.cfg.RequestDimensions {
		dims = o.cfg.Dimensions
	}
	data, err := o.client.Embed(ctx, in, dims)
	if err != nil {
		return nil, fmt.Errorf("embedding with model %q: %w", o.cfg.Model, err)
	}
	if len(data) != len(texts) {
		return nil, fmt.Errorf("embedding with model %q: got %d vectors for %d texts", o.cfg.Model, len(data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, fmt.Errorf("embedding with model %q: bad or repeated index %d in the response", o.cfg.Model, d.Index)
		}
		if len(d.Embedding) != o.cfg.Dimensions {
			return nil, fmt.Errorf("%w: model %q returned %d-dimensional vectors, %d are configured (memory.embedding_dimensions)",
				ErrDimensionMismatch, o.cfg.Model, len(d.Embedding), o.cfg.Dimensions)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}
