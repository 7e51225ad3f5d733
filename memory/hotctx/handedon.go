package hotctx

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// AttrNowWith is the attribute the hot context adds to a handover by the
// NPC of an item passed on since: who holds it now (the ledger's "now
// with", lifecycle/ledger).
const AttrNowWith = "now_with"

// handedOn marks the NPC's own handovers of an item passed on since with
// who holds it now, so that an NPC who gave Thorin the lantern knows that
// Lyra has it now. It reads the ledger as the NPC sees it (as, the NPC's
// handle): canon only, so a handover still waiting for the DM's review
// moves nothing. Without a handover by the NPC it reads nothing.
func handedOn(ctx context.Context, as *access.Campaign, npcID string, rels []memory.Relationship) ([]memory.Relationship, error) {
	if !slices.ContainsFunc(rels, func(r memory.Relationship) bool { return r.SourceID == npcID && r.Type == ledger.RelGave }) {
		return rels, nil
	}
	items, err := ledger.List(ctx, as.Graph(), memory.StatusActive)
	if err != nil {
		return nil, fmt.Errorf("hot context of %q: the items it handed on: %w", npcID, err)
	}
	now := map[int64]string{}
	for _, it := range items {
		if it.NowWith != "" {
			now[it.FactID] = it.NowWith
		}
	}
	out := slices.Clone(rels)
	for i, r := range out {
		if w, ok := now[r.ID]; ok && r.SourceID == npcID && r.Type == ledger.RelGave {
			out[i].Attributes = maps.Clone(r.Attributes)
			if out[i].Attributes == nil {
				out[i].Attributes = map[string]any{}
			}
			out[i].Attributes[AttrNowWith] = w
		}
	}
	return out, nil
}
