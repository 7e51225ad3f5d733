package hotctx

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// AttrNowWith is the attribute the hot context adds to a handover by the
// NPC of an item passed on since: who holds it now (the ledger's "now
// with", lifecycle/ledger).
const AttrNowWith = "now_with"

// RelGave is the relation of a handover ("Lyra gave Kael the lantern"), as
// the ledger records it.
const RelGave = "GAVE"

// NowWith tells, for each handover (by fact id) of an item passed on since,
// who holds the item now, reading as g's viewer: the ledger's view of
// handovers (lifecycle/ledger's NowWithOf). [Config.NowWith] takes one.
type NowWith func(ctx context.Context, g *access.Graph) (map[int64]string, error)

// handedOn marks the NPC's own handovers of an item passed on since with
// who holds it now, so that an NPC who gave Thorin the lantern knows that
// Lyra has it now. It reads the ledger as the NPC sees it (as, the NPC's
// handle): canon only, so a handover still waiting for the DM's review
// moves nothing. Without a handover by the NPC, or without nowWith, it
// reads nothing.
func handedOn(ctx context.Context, nowWith NowWith, as *access.Campaign, npcID string, rels []memory.Relationship) ([]memory.Relationship, error) {
	if nowWith == nil || !slices.ContainsFunc(rels, func(r memory.Relationship) bool { return r.SourceID == npcID && r.Type == RelGave }) {
		return rels, nil
	}
	now, err := nowWith(ctx, as.Graph())
	if err != nil {
		return nil, fmt.Errorf("hot context of %q: the items it handed on: %w", npcID, err)
	}
	out := slices.Clone(rels)
	for i, r := range out {
		if w, ok := now[r.ID]; ok && r.SourceID == npcID && r.Type == RelGave {
			out[i].Attributes = maps.Clone(r.Attributes)
			if out[i].Attributes == nil {
				out[i].Attributes = map[string]any{}
			}
			out[i].Attributes[AttrNowWith] = w
		}
	}
	return out, nil
}
