package access

import (
	"context"
	"encoding/json"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// ContinuityCard is a stored continuity card (see lifecycle/continuity).
// Cards are the DM's: every call here is DM only, bounded by the door's
// statement timeout, and an outage is returned wrapping
// memory.ErrUnavailable.
type ContinuityCard = postgres.ContinuityCard

// PutContinuityCard stores a card as raised (again: no change).
func (c *Campaign) PutContinuityCard(ctx context.Context, card ContinuityCard) error {
	if err := c.dmOnly("storing a continuity card"); err != nil {
		return err
	}
	return c.door.guard(ctx, "storing a continuity card", func(ctx context.Context) error {
		return c.pc.PutContinuityCard(ctx, card)
	})
}

// ContinuityCards returns the newest limit cards, newest first.
func (c *Campaign) ContinuityCards(ctx context.Context, limit int) ([]ContinuityCard, error) {
	if err := c.dmOnly("reading the continuity cards"); err != nil {
		return nil, err
	}
	var out []ContinuityCard
	err := c.door.guard(ctx, "reading the continuity cards", func(ctx context.Context) error {
		var err error
		out, err = c.pc.ContinuityCards(ctx, limit)
		return err
	})
	return out, err
}

// ClaimContinuityCard starts settling card id (see
// postgres.Campaign.ClaimContinuityCard); call it in InTx.
func (c *Campaign) ClaimContinuityCard(ctx context.Context, id, by string) (ContinuityCard, bool, error) {
	if err := c.dmOnly("settling a continuity card"); err != nil {
		return ContinuityCard{}, false, err
	}
	var card ContinuityCard
	var claimed bool
	err := c.door.guard(ctx, "settling a continuity card", func(ctx context.Context) error {
		var err error
		card, claimed, err = c.pc.ClaimContinuityCard(ctx, id, by)
		return err
	})
	return card, claimed, err
}

// FinishContinuityCard records the outcome of a claimed card.
func (c *Campaign) FinishContinuityCard(ctx context.Context, id, outcome string, card json.RawMessage) error {
	if err := c.dmOnly("settling a continuity card"); err != nil {
		return err
	}
	return c.door.guard(ctx, "settling a continuity card", func(ctx context.Context) error {
		return c.pc.FinishContinuityCard(ctx, id, outcome, card)
	})
}
