package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// ContinuityCard is a stored continuity card (migration 0024): the columns
// a query needs, and the whole card as its package encodes it.
type ContinuityCard struct {
	ID          string
	SessionID   string
	SpeakerID   string
	LineKey     string
	LineText    string
	CanonFactID int64
	CanonText   string
	Kind        string
	// Card is the whole card, JSON.
	Card      json.RawMessage
	CreatedAt time.Time
	// SettledAt is zero while the card is open.
	SettledAt time.Time
	SettledBy string
	Outcome   string
}

const cardColumns = `id, session_id, speaker_id, line_key, line_text, canon_fact_id, canon_text, kind, card, created_at,
	settled_at, settled_by, outcome`

func scanCard(row pgx.Row) (ContinuityCard, error) {
	var c ContinuityCard
	var settled *time.Time
	var card []byte
	if err := row.Scan(&c.ID, &c.SessionID, &c.SpeakerID, &c.LineKey, &c.LineText, &c.CanonFactID, &c.CanonText, &c.Kind,
		&card, &c.CreatedAt, &settled, &c.SettledBy, &c.Outcome); err != nil {
		return c, err
	}
	c.Card = card
	if settled != nil {
		c.SettledAt = *settled
	}
	return c, nil
}

// PutContinuityCard stores a card as raised. Storing the same card again
// changes nothing (a card written after an outage may be written twice).
func (c *Campaign) PutContinuityCard(ctx context.Context, card ContinuityCard) error {
	switch {
	case strings.TrimSpace(card.ID) == "":
		return fmt.Errorf("%w: a continuity card needs an id", memory.ErrInvalid)
	case card.Kind == "":
		return fmt.Errorf("%w: continuity card %s has no kind", memory.ErrInvalid, card.ID)
	case !json.Valid(card.Card):
		return fmt.Errorf("%w: continuity card %s is not JSON", memory.ErrInvalid, card.ID)
	case card.CreatedAt.IsZero():
		return fmt.Errorf("%w: continuity card %s has no time", memory.ErrInvalid, card.ID)
	}
	_, err := c.l1.db.Exec(ctx, `INSERT INTO continuity_cards (campaign_id, id, session_id, speaker_id, line_key, line_text,
			canon_fact_id, canon_text, kind, card, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (campaign_id, id) DO NOTHING`,
		c.id, card.ID, card.SessionID, card.SpeakerID, card.LineKey, card.LineText, card.CanonFactID, card.CanonText,
		card.Kind, []byte(card.Card), card.CreatedAt)
	if err != nil {
		return fmt.Errorf("storing continuity card %s: %w", card.ID, err)
	}
	return nil
}

// ContinuityCards returns the campaign's newest limit cards, newest first.
func (c *Campaign) ContinuityCards(ctx context.Context, limit int) ([]ContinuityCard, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: the number of continuity cards must be positive, got %d", memory.ErrInvalid, limit)
	}
	rows, err := c.l1.db.Query(ctx, `SELECT `+cardColumns+` FROM continuity_cards
		WHERE campaign_id = $1 ORDER BY created_at DESC, id LIMIT $2`, c.id, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the continuity cards: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ContinuityCard, error) { return scanCard(r) })
	if err != nil {
		return nil, fmt.Errorf("reading the continuity cards: %w", err)
	}
	return out, nil
}

// ClaimContinuityCard starts the settlement of card id by by: it marks the
// card settled if it is open, and returns it with claimed true. A card
// settled already is returned with claimed false; a card the campaign
// does not hold is an error wrapping memory.ErrNotFound. Called in a
// transaction (Campaign.InTx), the claim holds the card's row until the
// transaction ends, so a concurrent claim waits and then finds it settled;
// a rollback leaves the card open.
func (c *Campaign) ClaimContinuityCard(ctx context.Context, id, by string) (ContinuityCard, bool, error) {
	card, err := scanCard(c.l1.db.QueryRow(ctx, `UPDATE continuity_cards SET settled_at = now(), settled_by = $3
		WHERE campaign_id = $1 AND id = $2 AND settled_at IS NULL
		RETURNING `+cardColumns, c.id, id, by))
	if err == nil {
		return card, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return card, false, fmt.Errorf("claiming continuity card %s: %w", id, err)
	}
	card, err = scanCard(c.l1.db.QueryRow(ctx, `SELECT `+cardColumns+` FROM continuity_cards
		WHERE campaign_id = $1 AND id = $2`, c.id, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return card, false, fmt.Errorf("%w: continuity card %s", memory.ErrNotFound, id)
	}
	if err != nil {
		return card, false, fmt.Errorf("reading continuity card %s: %w", id, err)
	}
	return card, false, nil
}

// KeepSettledCards is how many settled continuity cards a campaign keeps:
// settling a card deletes the settled ones beyond the newest
// KeepSettledCards (by when they were settled). Open cards, and cards
// claimed whose settlement is not recorded, are never pruned.
const KeepSettledCards = 200

// FinishContinuityCard records how card id, claimed, was settled: its
// outcome and the card as it now stands; the campaign's settled cards
// beyond KeepSettledCards are deleted with it.
func (c *Campaign) FinishContinuityCard(ctx context.Context, id, outcome string, card json.RawMessage) error {
	if strings.TrimSpace(outcome) == "" {
		return fmt.Errorf("%w: continuity card %s settled without an outcome", memory.ErrInvalid, id)
	}
	if !json.Valid(card) {
		return fmt.Errorf("%w: continuity card %s is not JSON", memory.ErrInvalid, id)
	}
	tag, err := c.l1.db.Exec(ctx, `UPDATE continuity_cards SET outcome = $3, card = $4
		WHERE campaign_id = $1 AND id = $2 AND settled_at IS NOT NULL`, c.id, id, outcome, []byte(card))
	if err != nil {
		return fmt.Errorf("recording the settlement of continuity card %s: %w", id, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("%w: continuity card %s is not claimed", memory.ErrNotFound, id)
	}
	if _, err := c.PruneContinuityCards(ctx, KeepSettledCards); err != nil {
		return err
	}
	return nil
}

// PruneContinuityCards deletes the campaign's settled continuity cards
// beyond the newest keep (by when they were settled) and reports how many
// went. Open cards, and claimed cards whose settlement is not recorded
// yet, stay.
func (c *Campaign) PruneContinuityCards(ctx context.Context, keep int) (int64, error) {
	if keep < 0 {
		return 0, fmt.Errorf("%w: keeping %d settled continuity cards", memory.ErrInvalid, keep)
	}
	tag, err := c.l1.db.Exec(ctx, `DELETE FROM continuity_cards d
		WHERE d.campaign_id = $1 AND d.settled_at IS NOT NULL AND d.outcome <> ''
		  AND d.id NOT IN (SELECT k.id FROM continuity_cards k
		                   WHERE k.campaign_id = $1 AND k.settled_at IS NOT NULL AND k.outcome <> ''
		                   ORDER BY k.settled_at DESC, k.id DESC LIMIT $2)`, c.id, keep)
	if err != nil {
		return 0, fmt.Errorf("pruning the settled continuity cards: %w", err)
	}
	return tag.RowsAffected(), nil
}
