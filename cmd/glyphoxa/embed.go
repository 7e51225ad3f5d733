package main

import (
	"context"
	"errors"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/npc"
)

// embedPending embeds every chunk that has no embedding yet. It needs an
// embedder, which the retrieval layer provides.
func embedPending(ctx context.Context, e *env, sf *storeFlags) error {
	return errors.New("re-embedding needs the retrieval layer's embedder; run `glyphoxa process` for each campaign")
}

// newAsker returns the retrieval the MCP ask tool uses, or nil until one is
// configured.
func newAsker(_ any, _ any) mcpserver.Asker { return nil }

// newHotContext returns the NPC hot-context assembler of the retrieval
// layer.
func newHotContext(_ *postgres.Store, _ *postgres.Campaign, _ config.Config) npc.ContextSource {
	return nil
}

// newRecaller returns the NPC-scoped retrieval of the recall tool.
func newRecaller(_ *postgres.Store, _ *postgres.Campaign, _ config.Config) npc.Recaller { return nil }
