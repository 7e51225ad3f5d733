package main

import (
	"context"
	"errors"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
)

// embedPending embeds every chunk that has no embedding yet. It needs an
// embedder, which the retrieval layer provides.
func embedPending(ctx context.Context, e *env, sf *storeFlags) error {
	return errors.New("re-embedding needs the retrieval layer's embedder; run `glyphoxa process` for each campaign")
}

// newAsker returns the retrieval the MCP ask tool uses, or nil until one is
// configured.
func newAsker(_ any, _ any) mcpserver.Asker { return nil }
