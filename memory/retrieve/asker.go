package retrieve

import (
	"context"
	"sync"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/embed"
)

// Asker answers questions about the campaigns of a store for readers of
// any role: the MCP ask tool (as the calling agent's role), the DM
// console's "ask as this NPC". It keeps one Retriever per campaign and
// reader, built on first use over the campaign bound to that reader
// (memory/access), so what it returns is what the reader may see, by
// construction. It is safe for concurrent use.
type Asker struct {
	door *access.Door
	emb  embed.Embedder
	cfg  Config

	mu  sync.Mutex
	per map[askerKey]*Retriever
}

type askerKey struct {
	campaign string
	viewer   memory.Viewer
}

// NewAsker returns an Asker over the campaigns behind door.
func NewAsker(door *access.Door, e embed.Embedder, cfg Config) *Asker {
	return &Asker{door: door, emb: e, cfg: cfg, per: map[askerKey]*Retriever{}}
}

func (a *Asker) retriever(ctx context.Context, campaign string, v memory.Viewer) (*Retriever, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := askerKey{campaign, v}
	if r, ok := a.per[key]; ok {
		return r, nil
	}
	camp, err := a.door.Open(ctx, campaign, v)
	if err != nil {
		return nil, err
	}
	r, err := New(camp, a.emb, a.cfg)
	if err != nil {
		return nil, err
	}
	a.per[key] = r
	return r, nil
}

// Ask runs hybrid retrieval over the campaign as v sees it.
func (a *Asker) Ask(ctx context.Context, campaign string, v memory.Viewer, question string, k int) ([]Result, error) {
	r, err := a.retriever(ctx, campaign, v)
	if err != nil {
		return nil, err
	}
	return r.Search(ctx, Query{Text: question, K: k})
}

// AskAs runs hybrid retrieval as an NPC: what it heard, and what it may
// know of the graph.
func (a *Asker) AskAs(ctx context.Context, campaign, npcID, question string, k int) ([]Result, error) {
	r, err := a.retriever(ctx, campaign, memory.NPCViewer(npcID))
	if err != nil {
		return nil, err
	}
	return r.Search(ctx, Query{Text: question, K: k, NPCID: npcID})
}
