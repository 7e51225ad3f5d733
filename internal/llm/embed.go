package llm

import (
	"context"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// Embedding is one vector of an embeddings answer; Index is the position
// of its text in the request.
type Embedding = openai.Embedding

// Embed asks the /embeddings endpoint for the vectors of texts with the
// client's model (an embedding model), with the same timeout per request,
// retries and token accounting as Stream. dimensions, when positive, asks
// the endpoint to shorten its vectors (text-embedding-3 models support it).
// The answer is returned as the server sent it: callers check its count,
// indices and dimensions.
func (c *Client) Embed(ctx context.Context, texts []string, dimensions int) ([]Embedding, error) {
	req := openai.EmbeddingRequestStrings{Input: texts, Model: openai.EmbeddingModel(c.cfg.Model),
		EncodingFormat: openai.EmbeddingEncodingFormatFloat, Dimensions: max(dimensions, 0)}
	var out []Embedding
	var usage Usage
	_, err := c.retry(ctx, "embedding request", func(ctx context.Context) (bool, error) {
		ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
		res, err := c.api.CreateEmbeddings(ctx, req)
		if err != nil {
			return false, fmt.Errorf("embedding request to %s: %w", c.cfg.Model, err)
		}
		out, usage = res.Data, Usage{PromptTokens: res.Usage.PromptTokens}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	c.account(usage)
	return out, nil
}
