package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
)

// newEmbedder returns the configured embedder, of the store's dimension.
func newEmbedder(cfg config.Config) (embed.Embedder, error) {
	p := cfg.Providers.Embeddings
	dims := cfg.Memory.EmbeddingDimensions
	switch p.Provider {
	case "", "offline":
		return embed.NewOffline(dims)
	case "openai":
		return embed.NewOpenAI(embed.OpenAIConfig{BaseURL: p.BaseURL, APIKey: p.APIKey, Model: p.Model, Dimensions: dims,
			// text-embedding-3 models shorten their vectors on request; other
			// models have one fixed size, which must be the configured one.
			RequestDimensions: strings.HasPrefix(p.Model, "text-embedding-3")})
	}
	return nil, errors.New("providers.embeddings.provider: want offline or openai")
}

// embedPending embeds every chunk that has no embedding yet, in every
// campaign.
func embedPending(ctx context.Context, e *env, sf *storeFlags) error {
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	emb, err := newEmbedder(cfg)
	if err != nil {
		return err
	}
	ids, err := store.Campaigns(ctx)
	if err != nil {
		return err
	}
	for _, id := range ids {
		camp, err := store.Campaign(ctx, id)
		if err != nil {
			return err
		}
		n, err := chunk.EmbedPending(ctx, camp, emb)
		if err != nil {
			return fmt.Errorf("embedding the chunks of campaign %q: %w", id, err)
		}
		printf(e.stdout, "campaign %q: embedded %d chunks\n", id, n)
	}
	return nil
}

// processSessions chunks and embeds sessions of a campaign (all when none
// are named), and clears the marks of those whose chunks were owed a
// rebuild (postgres.RechunkStage): serve would otherwise rebuild them once
// more.
func processSessions(ctx context.Context, store *postgres.Store, cfg config.Config, campaign string, sessions ...string) (chunk.Report, error) {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return chunk.Report{}, err
	}
	camp, err := store.Campaign(ctx, campaign)
	if err != nil {
		return chunk.Report{}, err
	}
	var rep chunk.Report
	err = camp.Processing().RechunkedSessions(ctx, sessions, func(ctx context.Context) error {
		rep, err = chunk.Process(ctx, camp, emb, chunk.Options{}, sessions...)
		return err
	})
	return rep, err
}

// newAsker returns the retrieval the MCP ask tool and the DM console use:
// hybrid retrieval as the caller's role (retrieve.Asker).
func newAsker(door *access.Door, cfg config.Config) (*retrieve.Asker, error) {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	return retrieve.NewAsker(door, emb, retrieve.Config{}), nil
}

func newRetriever(camp retrieve.Campaign, cfg config.Config) (*retrieve.Retriever, error) {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	return retrieve.New(camp, emb, retrieve.Config{})
}

// newHotContext returns the NPC hot-context assembler.
func newHotContext(camp *access.Campaign, cfg config.Config) *hotctx.Assembler {
	return hotctx.New(camp, hotctx.Config{Recent: cfg.Memory.RecentWindow.Std(), NowWith: ledger.NowWithOf})
}

// newRecaller returns the NPC-scoped retrieval of the recall tool; nil
// (the tool says it is unavailable) when retrieval cannot be set up.
func newRecaller(camp retrieve.Campaign, cfg config.Config) (npc.Recaller, error) {
	r, err := newRetriever(camp, cfg)
	if err != nil {
		return nil, err
	}
	return table.Recaller{R: r}, nil
}
