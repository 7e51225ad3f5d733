// Package embed turns text into embedding vectors for the semantic index.
//
// Two providers implement [Embedder]:
//
//   - [Offline], the built-in default: deterministic hashed word and
//     character n-gram features, L2-normalised, of any dimension. It needs no
//     model download and no network, and it is good at names and lexical
//     overlap, which is most of what players ask about. Its words follow
//     the campaign's language ([ForLanguage]: English, or German with its
//     own stop words and endings).
//   - [OpenAI], any OpenAI-compatible /v1/embeddings endpoint (OpenAI
//     text-embedding-3-small at 1536 dimensions, Ollama nomic-embed-text at
//     768, …).
//
// The embedder's dimension must match the store's; [CheckDimensions] says so
// clearly when it does not. [All] embeds any number of texts in batches.
package embed

import (
	"context"
	"errors"
	"fmt"
)

// Embedder turns texts into vectors of a fixed dimension. Implementations
// are safe for concurrent use.
type Embedder interface {
	// Embed returns one vector per text, in order. Each vector has
	// Dimensions() elements.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimensions is the length of every vector.
	Dimensions() int
}

// Batcher is implemented by embedders whose backend takes at most a given
// number of texts per request.
type Batcher interface {
	MaxBatch() int
}

// DefaultBatch is the batch size [All] uses for embedders that do not say.
const DefaultBatch = 64

// ErrDimensionMismatch is wrapped by errors about an embedder whose vectors do
// not have the expected dimension.
var ErrDimensionMismatch = errors.New("embedding dimension mismatch")

// CheckDimensions reports whether e produces vectors of the store's
// dimension.
func CheckDimensions(e Embedder, storeDims int) error {
	if e.Dimensions() != storeDims {
		return fmt.Errorf("%w: the embedder produces %d-dimensional vectors but the memory store holds %d; "+
			"set memory.embedding_dimensions to %d (then run `glyphoxa migrate --reembed`) or configure an embedding model of %d dimensions",
			ErrDimensionMismatch, e.Dimensions(), storeDims, e.Dimensions(), storeDims)
	}
	return nil
}

// All embeds texts in batches of the embedder's size (DefaultBatch when it
// does not say) and checks every vector's dimension.
func All(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	size := DefaultBatch
	if b, ok := e.(Batcher); ok && b.MaxBatch() > 0 {
		size = b.MaxBatch()
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += size {
		end := min(start+size, len(texts))
		vs, err := e.Embed(ctx, texts[start:end])
		if err != nil {
			return nil, fmt.Errorf("embedding texts %d..%d: %w", start, end-1, err)
		}
		if len(vs) != end-start {
			return nil, fmt.Errorf("embedding texts %d..%d: got %d vectors for %d texts", start, end-1, len(vs), end-start)
		}
		for i, v := range vs {
			if len(v) != e.Dimensions() {
				return nil, fmt.Errorf("%w: vector %d has %d dimensions, expected %d", ErrDimensionMismatch, start+i, len(v), e.Dimensions())
			}
		}
		out = append(out, vs...)
	}
	return out, nil
}

// One embeds a single text.
func One(ctx context.Context, e Embedder, text string) ([]float32, error) {
	vs, err := All(ctx, e, []string{text})
	if err != nil {
		return nil, err
	}
	return vs[0], nil
}

// Languager is implemented by embedders whose vectors depend on the
// text's language ([Offline]: its stop words and stemming).
type Languager interface {
	ForLanguage(lang string) Embedder
}

// ForLanguage returns e for a campaign in language lang (a code such as
// "de" or a text-search configuration such as "german"): e's own variant
// for that language when it has one ([Languager]), else e itself (a
// model's embeddings need no help with languages).
func ForLanguage(e Embedder, lang string) Embedder {
	if l, ok := e.(Languager); ok {
		return l.ForLanguage(lang)
	}
	return e
}
