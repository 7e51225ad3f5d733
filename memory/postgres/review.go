package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// PendingFacts lists the facts waiting for the DM's review, oldest first.
func (g *Graph) PendingFacts(ctx context.Context, f memory.FactFilter) ([]memory.Relationship, error) {
	limit := any(nil)
	if f.Limit > 0 {
		limit = f.Limit
	}
	rows, err := g.db.Query(ctx, `
		SELECT `+g.view.relCols()+` FROM relationships r
		WHERE r.campaign_id = $1 AND r.status = 'pending' AND `+g.view.factVisible("r")+`
		  AND ($2 = '' OR r.session_id = $2)
		  AND ($3 = '' OR r.source_id = $3 OR r.target_id = $3)
		ORDER BY r.created_at, r.id
		LIMIT $4`, g.campaign, f.SessionID, f.EntityID, limit)
	if err != nil {
		return nil, fmt.Errorf("listing pending facts: %w", err)
	}
	return pgx.CollectRows(rows, scanRel)
}

// ConfirmFact makes a pending (or rejected) fact canon and marks it
// confirmed by the DM. Confirming a player's or NPC's proposal of a fact
// canon already holds confirms the canon fact and drops the proposal.
func (g *Graph) ConfirmFact(ctx context.Context, id int64) (memory.Relationship, error) {
	if err := g.dmOnly("confirming a fact"); err != nil {
		return memory.Relationship{}, err
	}
	var out memory.Relationship
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := &Graph{db: tx, campaign: g.campaign, threshold: g.threshold}
		var canonID int64
		err := tx.QueryRow(ctx, `SELECT c.id FROM relationships p
			JOIN relationships c ON c.campaign_id = p.campaign_id AND c.source_id = p.source_id
			     AND c.target_id = p.target_id AND c.rel_type = p.rel_type AND c.proposed_by = ''
			     AND c.status IN ('active', 'pending') AND c.id <> p.id
			WHERE p.campaign_id = $1 AND p.id = $2 AND p.proposed_by <> ''`, g.campaign, id).Scan(&canonID)
		switch {
		case isNoRows(err):
			out, err = tg.setStatus(ctx, id, "confirming", `status = 'active', dm_confirmed = true, valid_until_session = $3, proposed_by = ''`,
				`r.status IN ('pending', 'rejected', 'active')`, "")
			return err
		case err != nil:
			return fmt.Errorf("confirming fact %d: %w", id, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM relationships WHERE campaign_id = $1 AND id = $2`, g.campaign, id); err != nil {
			return fmt.Errorf("confirming fact %d: %w", id, err)
		}
		out, err = tg.setStatus(ctx, canonID, "confirming", `status = 'active', dm_confirmed = true, valid_until_session = $3`,
			`r.status IN ('pending', 'active')`, "")
		return err
	})
	return out, err
}

// RejectFact takes a fact out of canon. It stays in the database, rejected,
// so the audit trail keeps it and re-proposing it does not bring it back.
func (g *Graph) RejectFact(ctx context.Context, id int64) (memory.Relationship, error) {
	if err := g.dmOnly("rejecting a fact"); err != nil {
		return memory.Relationship{}, err
	}
	return g.setStatus(ctx, id, "rejecting", `status = 'rejected', dm_confirmed = false, valid_until_session = $3`,
		`r.status IN ('pending', 'active', 'rejected')`, "")
}

// RetireFact records that a fact stopped holding in the given session (empty
// for "now"): it leaves the canon but "as of" queries for earlier sessions
// still see it.
func (g *Graph) RetireFact(ctx context.Context, id int64, sessionID string) (memory.Relationship, error) {
	if err := g.dmOnly("retiring a fact"); err != nil {
		return memory.Relationship{}, err
	}
	return g.setStatus(ctx, id, "retiring", `status = 'retired', valid_until_session = $3`,
		`r.status IN ('active', 'pending', 'retired')`, sessionID)
}

// setStatus applies set (which may use $3, the session) to fact id if its
// current status is allowed.
func (g *Graph) setStatus(ctx context.Context, id int64, verb, set, allowed, sessionID string) (memory.Relationship, error) {
	rows, err := g.db.Query(ctx, `
		UPDATE relationships r SET `+set+`, updated_at = now()
		WHERE r.campaign_id = $1 AND r.id = $2 AND `+allowed+`
		RETURNING `+relColumns, g.campaign, id, sessionID)
	if err != nil {
		if pgErr := asPgError(err); pgErr != nil && pgErr.Code == "23505" {
			return memory.Relationship{}, fmt.Errorf("%s fact %d: the same fact is already live; %w", verb, id, memory.ErrInvalid)
		}
		return memory.Relationship{}, fmt.Errorf("%s fact %d: %w", verb, id, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRel)
	if isNoRows(err) {
		if _, ferr := g.Fact(ctx, id); ferr != nil {
			return memory.Relationship{}, ferr
		}
		return memory.Relationship{}, fmt.Errorf("%s fact %d: %w: its status does not allow it", verb, id, memory.ErrInvalid)
	}
	if err != nil {
		if pgErr := asPgError(err); pgErr != nil && pgErr.Code == "23505" {
			return memory.Relationship{}, fmt.Errorf("%s fact %d: the same fact is already live; %w", verb, id, memory.ErrInvalid)
		}
		return memory.Relationship{}, fmt.Errorf("%s fact %d: %w", verb, id, err)
	}
	return r, nil
}
