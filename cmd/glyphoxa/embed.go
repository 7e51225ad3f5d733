package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
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
	return nil, fmt.Errorf("unknown embeddings provider %q (want offline or openai)", p.Provider)
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
// are named).
func processSessions(ctx context.Context, store *postgres.Store, cfg config.Config, campaign string, sessions ...string) (chunk.Report, error) {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return chunk.Report{}, err
	}
	camp, err := store.Campaign(ctx, campaign)
	if err != nil {
		return chunk.Report{}, err
	}
	return chunk.Process(ctx, camp, emb, chunk.Options{}, sessions...)
}

// asker answers the MCP ask tool with hybrid retrieval, one retriever per
// campaign and viewer, built on first use over the campaign bound to that
// viewer: what it returns is what the viewer may see, by construction.
type asker struct {
	store *postgres.Store
	cfg   config.Config

	mu  sync.Mutex
	per map[askerKey]*retrieve.Retriever
}

type askerKey struct {
	campaign string
	viewer   memory.Viewer
}

// newAsker returns the retrieval the MCP ask tool uses.
func newAsker(store *postgres.Store, cfg config.Config) mcpserver.Asker {
	return &asker{store: store, cfg: cfg, per: map[askerKey]*retrieve.Retriever{}}
}

func (a *asker) retriever(ctx context.Context, campaign string, v memory.Viewer) (*retrieve.Retriever, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := askerKey{campaign, v}
	if r, ok := a.per[key]; ok {
		return r, nil
	}
	camp, err := a.store.Campaign(ctx, campaign)
	if err != nil {
		return nil, err
	}
	if camp, err = camp.As(v); err != nil {
		return nil, err
	}
	r, err := newRetriever(camp, a.cfg)
	if err != nil {
		return nil, err
	}
	a.per[key] = r
	return r, nil
}

// Ask runs hybrid retrieval over the campaign as v sees it.
func (a *asker) Ask(ctx context.Context, campaign string, v memory.Viewer, question string, k int) ([]mcpserver.AskResult, error) {
	r, err := a.retriever(ctx, campaign, v)
	if err != nil {
		return nil, err
	}
	rs, err := r.Search(ctx, retrieve.Query{Text: question, K: k})
	if err != nil {
		return nil, err
	}
	out := make([]mcpserver.AskResult, len(rs))
	for i, x := range rs {
		out[i] = mcpserver.AskResult{Kind: x.Kind, ID: x.ID, Content: x.Content, Score: x.Score, SessionID: x.SessionID,
			EntityIDs: x.EntityIDs}
	}
	return out, nil
}

func newRetriever(camp *postgres.Campaign, cfg config.Config) (*retrieve.Retriever, error) {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	return retrieve.New(camp, emb, retrieve.Config{})
}

// newHotContext returns the NPC hot-context assembler.
func newHotContext(camp *postgres.Campaign, cfg config.Config) *hotctx.Assembler {
	return hotctx.New(camp, hotctx.Config{Recent: cfg.Memory.RecentWindow.Std()})
}

// newRecaller returns the NPC-scoped retrieval of the recall tool; nil
// (the tool says it is unavailable) when retrieval cannot be set up.
func newRecaller(camp *postgres.Campaign, cfg config.Config) (npc.Recaller, error) {
	r, err := newRetriever(camp, cfg)
	if err != nil {
		return nil, err
	}
	return table.Recaller{R: r}, nil
}
