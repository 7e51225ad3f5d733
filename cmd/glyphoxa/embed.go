package main

import (
	"context"
	"errors"
)

// embedPending embeds every chunk that has no embedding yet. It needs an
// embedder, which the retrieval layer provides.
func embedPending(ctx context.Context, e *env, sf *storeFlags) error {
	return errors.New("re-embedding needs the retrieval layer's embedder; run `glyphoxa process` for each campaign")
}
