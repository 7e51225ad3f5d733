package ledger

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Item is one entry of a campaign's ledger, as the knowledge graph holds it.
type Item struct {
	FactID int64  `json:"fact_id"`
	Kind   Kind   `json:"kind"`
	From   string `json:"from"`
	To     string `json:"to"`
	What   string `json:"what,omitempty"`
	Due    string `json:"due,omitempty"`
	// Quote is the line it rests on ("Lyra: I promise…"), SaidAt when.
	Quote  string    `json:"quote,omitempty"`
	SaidAt time.Time `json:"said_at,omitzero"`
	// Session is the session it was said in; Status its review state
	// (pending entries wait for the DM).
	Session string            `json:"session,omitempty"`
	Status  memory.FactStatus `json:"status"`
	// NowWith is, for a handover of an item passed on later (Lyra gave
	// Kael the lantern, then Kael gave it to Thorin), who holds it now;
	// empty while the one it was given to still does.
	NowWith string `json:"now_with,omitempty"`
	// Entry is the key that tells it apart from other entries of its kind
	// between the same two (see [AttrEntry]); empty for the first one.
	Entry string `json:"entry,omitempty"`
}

// Facts finds facts; an *access.Graph does, as its viewer may see them.
type Facts interface {
	FindFacts(ctx context.Context, q access.FactQuery) ([]access.FactWithNames, error)
}

// NowWithOf tells, for each canon handover (by fact id) of an item passed
// on since, who holds the item now, as g's viewer sees the ledger. It is
// the hot context's NowWith (memory/hotctx): an NPC who gave the lantern away
// knows who has it now.
func NowWithOf(ctx context.Context, g *access.Graph) (map[int64]string, error) {
	items, err := List(ctx, g, memory.StatusActive)
	if err != nil {
		return nil, err
	}
	now := map[int64]string{}
	for _, it := range items {
		if it.NowWith != "" && it.Kind == Handover {
			now[it.FactID] = it.NowWith
		}
	}
	return now, nil
}

// maxEntries is how many entries List reads: the newest of a campaign's
// promises, debts and handovers, far more than any table makes.
const maxEntries = 100_000

// List is the campaign's ledger as g's viewer may see it: its promises,
// debts and handovers in the statuses asked for (default: canon and
// waiting for review), in the order they were said (the newest
// maxEntries).
func List(ctx context.Context, g Facts, statuses ...memory.FactStatus) ([]Item, error) {
	if len(statuses) == 0 {
		statuses = []memory.FactStatus{memory.StatusActive, memory.StatusPending}
	}
	// Every entry of the three kinds, newest first (the ledger sorts them
	// as they were said below); a type is read from its own index.
	fs, err := g.FindFacts(ctx, access.FactQuery{Types: []string{RelPromised, RelOwes, RelGave}, Statuses: statuses, Limit: maxEntries})
	if err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	out := make([]Item, 0, len(fs))
	for _, f := range fs {
		it := Item{FactID: f.ID, Kind: KindOf(f.Type), From: f.SourceName, To: f.TargetName, Session: f.Provenance.SessionID,
			Status: f.Status, SaidAt: f.Provenance.Timestamp}
		it.What, _ = f.Attributes["what"].(string)
		it.Due, _ = f.Attributes["due"].(string)
		it.Quote, _ = f.Attributes["evidence"].(string)
		it.Entry, _ = f.Attributes[AttrEntry].(string)
		if s, ok := f.Attributes["said_at"].(string); ok {
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				it.SaidAt = t
			}
		}
		out = append(out, it)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].SaidAt.Equal(out[j].SaidAt) {
			return out[i].SaidAt.Before(out[j].SaidAt)
		}
		return out[i].FactID < out[j].FactID
	})
	passedOn(out)
	return out, nil
}

// passedOn sets NowWith of the handovers in items (in the order they were
// said) whose item its receiver handed on later: it follows the item from
// hand to hand, each handover of a similar what by its holder, to the last.
func passedOn(items []Item) {
	for i := range items {
		if items[i].Kind != Handover {
			continue
		}
		holder, what, seen := items[i].To, items[i].What, map[int]bool{i: true}
		for j := i + 1; j < len(items); j++ {
			it := items[j]
			if it.Kind == Handover && !seen[j] && it.From == holder && it.To != holder && Same(what, it.What) {
				seen[j] = true
				holder = it.To
			}
		}
		if holder != items[i].To {
			items[i].NowWith = holder
		}
	}
}
