package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// The store rule of review. A fact the DM confirms or rejects is settled
// through every open conflict it is in, in the same transaction: confirming
// the new fact of a conflict keeps it and retires the old one with a reason;
// rejecting it keeps the old one; confirming the old one keeps it and
// rejects the new one. A single-valued relation (see ExclusiveTypes: where
// someone is) never has two active facts for one source: making one active
// retires the others, with the source entity's row locked (FOR UPDATE, the
// lock WriteFact takes) so two confirmations cannot both miss each other.
// This is a locked check, not a unique index, because campaigns written
// before it (and the bench campaigns) hold such pairs.

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

// txGraph is g bound to the transaction tx.
func (g *Graph) txGraph(tx pgx.Tx) *Graph {
	return &Graph{db: tx, campaign: g.campaign, threshold: g.threshold}
}

// ConfirmFact makes a pending (or rejected) fact canon and marks it
// confirmed by the DM, settling the open conflicts it is in (see the store
// rule above). Confirming a player's or NPC's proposal of a fact canon
// already holds confirms the canon fact and drops the proposal.
func (g *Graph) ConfirmFact(ctx context.Context, id int64) (memory.Relationship, error) {
	if err := g.dmOnly("confirming a fact"); err != nil {
		return memory.Relationship{}, err
	}
	var out memory.Relationship
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		var err error
		out, err = g.txGraph(tx).confirm(ctx, id)
		return err
	})
	return out, err
}

// confirm is ConfirmFact inside a transaction.
func (g *Graph) confirm(ctx context.Context, id int64) (memory.Relationship, error) {
	if err := g.lockSourceOf(ctx, id); err != nil {
		return memory.Relationship{}, err
	}
	var canonID int64
	err := g.db.QueryRow(ctx, `SELECT c.id FROM relationships p
		JOIN relationships c ON c.campaign_id = p.campaign_id AND c.source_id = p.source_id
		     AND c.target_id = p.target_id AND c.rel_type = p.rel_type AND c.proposed_by = '' AND c.entry = p.entry
		     AND c.status IN ('active', 'pending') AND c.id <> p.id
		WHERE p.campaign_id = $1 AND p.id = $2 AND p.proposed_by <> ''`, g.campaign, id).Scan(&canonID)
	switch {
	case isNoRows(err):
	case err != nil:
		return memory.Relationship{}, fmt.Errorf("confirming fact %d: %w", id, err)
	default:
		if _, err := g.db.Exec(ctx, `DELETE FROM relationships WHERE campaign_id = $1 AND id = $2`, g.campaign, id); err != nil {
			return memory.Relationship{}, fmt.Errorf("confirming fact %d: %w", id, err)
		}
		id = canonID
	}
	// Settle through the conflicts: as the new fact, keep it; as the old
	// one, keep the old one.
	open, err := g.openConflicts(ctx, id)
	if err != nil {
		return memory.Relationship{}, err
	}
	for _, c := range open {
		if _, err := g.settle(ctx, c.id, c.newFact == id, "confirmed by the DM"); err != nil {
			return memory.Relationship{}, err
		}
	}
	return g.activate(ctx, id, fmt.Sprintf("fact %d confirmed by the DM", id))
}

// RejectFact takes a fact out of canon. It stays in the database, rejected,
// so the audit trail keeps it and re-proposing it does not bring it back.
// Rejecting the new fact of an open conflict settles it keeping the old
// fact (canon again if the conflict had retired it).
func (g *Graph) RejectFact(ctx context.Context, id int64) (memory.Relationship, error) {
	if err := g.dmOnly("rejecting a fact"); err != nil {
		return memory.Relationship{}, err
	}
	var out memory.Relationship
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		var err error
		out, err = g.txGraph(tx).reject(ctx, id)
		return err
	})
	return out, err
}

// reject is RejectFact inside a transaction.
func (g *Graph) reject(ctx context.Context, id int64) (memory.Relationship, error) {
	if err := g.lockSourceOf(ctx, id); err != nil {
		return memory.Relationship{}, err
	}
	open, err := g.openConflicts(ctx, id)
	if err != nil {
		return memory.Relationship{}, err
	}
	for _, c := range open {
		if c.newFact != id {
			// The old fact of a conflict rejected on its own: the new one
			// still waits, and its conflict card says the old one is
			// rejected.
			continue
		}
		if _, err := g.settle(ctx, c.id, false, "rejected by the DM"); err != nil {
			return memory.Relationship{}, err
		}
	}
	return g.setStatus(ctx, id, "rejecting", `status = 'rejected', dm_confirmed = false, valid_until_session = $3,
		retired_at = NULL, retire_reason = ''`, `r.status IN ('pending', 'active', 'rejected')`, "")
}

// RetireFact records that a fact stopped holding in the given session (empty
// for "now"): it leaves the canon but "as of" queries for earlier sessions
// (and earlier dates: the retirement time is recorded) still see it.
func (g *Graph) RetireFact(ctx context.Context, id int64, sessionID string) (memory.Relationship, error) {
	if err := g.dmOnly("retiring a fact"); err != nil {
		return memory.Relationship{}, err
	}
	return g.retire(ctx, id, sessionID, "retired by the DM")
}

// retire retires fact id as of sessionID with reason. A fact still
// waiting for review never held: it is rejected instead, as the DM's
// rejection leaves it (a retired fact is one that held until then, and
// every player reads it, in "as of", traces and recaps; a pending one is
// the DM's until confirmed).
func (g *Graph) retire(ctx context.Context, id int64, sessionID, reason string) (memory.Relationship, error) {
	return g.setStatus(ctx, id, "retiring", `status = CASE WHEN r.status = 'pending' THEN 'rejected' ELSE 'retired' END,
		dm_confirmed = r.dm_confirmed AND r.status <> 'pending', valid_until_session = $3,
		retired_at = CASE WHEN r.status = 'pending' THEN NULL WHEN r.status = 'retired' THEN coalesce(r.retired_at, now()) ELSE now() END,
		retire_reason = CASE WHEN r.status = 'pending' THEN '' WHEN r.status = 'retired' AND r.retire_reason <> '' THEN r.retire_reason ELSE $4 END`,
		`r.status IN ('active', 'pending', 'retired')`, sessionID, reason)
}

// Retirement is when and why a fact left canon.
type Retirement struct {
	// At is when it was retired; zero for a fact that is not retired.
	At time.Time
	// Reason says why ("superseded by fact 12 (…)", "retired by the DM").
	Reason string
}

// Retirement returns when and why a retired fact left canon (zero time and
// empty reason for a fact that is not retired). It is for the DM: a reason
// may name the DM's note or a fact a player may not see.
func (g *Graph) Retirement(ctx context.Context, id int64) (Retirement, error) {
	var out Retirement
	if !g.view.system() {
		return out, fmt.Errorf("%w: why a fact was retired is for the DM", memory.ErrForbidden)
	}
	var at *time.Time
	err := g.db.QueryRow(ctx, `SELECT r.retired_at, r.retire_reason FROM relationships r
		WHERE r.campaign_id = $1 AND r.id = $2 AND `+g.view.factVisible("r"), g.campaign, id).Scan(&at, &out.Reason)
	if isNoRows(err) {
		return out, fmt.Errorf("fact %d: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return out, fmt.Errorf("reading when fact %d was retired: %w", id, err)
	}
	if at != nil {
		out.At = *at
	}
	return out, nil
}

// lockSourceOf locks the row of fact id's source entity, the lock WriteFact
// takes, so review decisions and writes about one source are serialised.
func (g *Graph) lockSourceOf(ctx context.Context, id int64) error {
	_, err := g.db.Exec(ctx, `SELECT 1 FROM entities e JOIN relationships r ON r.campaign_id = e.campaign_id AND r.source_id = e.id
		WHERE r.campaign_id = $1 AND r.id = $2 FOR UPDATE OF e`, g.campaign, id)
	if err != nil {
		return fmt.Errorf("locking the source of fact %d: %w", id, err)
	}
	return nil
}

// openConflict is an open conflict a fact is in.
type openConflict struct {
	id, newFact, oldFact int64
}

// openConflicts lists the open conflicts fact id is in, oldest first.
func (g *Graph) openConflicts(ctx context.Context, id int64) ([]openConflict, error) {
	rows, err := g.db.Query(ctx, `SELECT id, new_fact, old_fact FROM fact_conflicts
		WHERE campaign_id = $1 AND resolution = '' AND (new_fact = $2 OR old_fact = $2) ORDER BY id FOR UPDATE`, g.campaign, id)
	if err != nil {
		return nil, fmt.Errorf("finding the open conflicts of fact %d: %w", id, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (openConflict, error) {
		var c openConflict
		err := row.Scan(&c.id, &c.newFact, &c.oldFact)
		return c, err
	})
}

// OpenConflictsOf maps each of ids that is in an open conflict to the ids
// of those conflicts: what a pending fact's card mentions.
func (g *Graph) OpenConflictsOf(ctx context.Context, ids []int64) (map[int64][]int64, error) {
	if !g.view.system() {
		return nil, fmt.Errorf("%w: fact conflicts are for the DM", memory.ErrForbidden)
	}
	rows, err := g.db.Query(ctx, `SELECT f, c.id FROM fact_conflicts c, unnest($2::bigint[]) f
		WHERE c.campaign_id = $1 AND c.resolution = '' AND (c.new_fact = f OR c.old_fact = f) ORDER BY f, c.id`, g.campaign, ids)
	if err != nil {
		return nil, fmt.Errorf("finding open conflicts: %w", err)
	}
	out := map[int64][]int64{}
	var f, c int64
	_, err = pgx.ForEachRow(rows, []any{&f, &c}, func() error {
		out[f] = append(out[f], c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding open conflicts: %w", err)
	}
	return out, nil
}

// settle settles open conflict cid inside a transaction: keeping the new
// fact confirms it and retires the old one as of the new fact's session;
// keeping the old one rejects the new fact and makes the old one canon
// again if the conflict had retired it.
func (g *Graph) settle(ctx context.Context, cid int64, keepNew bool, why string) (memory.Conflict, error) {
	var c memory.Conflict
	var newID, oldID int64
	var kind string
	err := g.db.QueryRow(ctx, `SELECT new_fact, old_fact, kind, resolution FROM fact_conflicts
		WHERE campaign_id = $1 AND id = $2 FOR UPDATE`, g.campaign, cid).Scan(&newID, &oldID, &kind, &c.Resolution)
	if isNoRows(err) {
		return c, fmt.Errorf("conflict %d: %w", cid, memory.ErrNotFound)
	}
	if err != nil {
		return c, err
	}
	if c.Resolution != "" {
		return c, fmt.Errorf("%w: conflict %d is already resolved (%s)", memory.ErrInvalid, cid, c.Resolution)
	}
	c.ID, c.Kind = cid, memory.LinkKind(kind)
	// Mark it settled first, so confirming or rejecting its facts below
	// does not settle it again.
	c.Resolution = "kept_old"
	if keepNew {
		c.Resolution = "kept_new"
	}
	if _, err := g.db.Exec(ctx, `UPDATE fact_conflicts SET resolution = $3, resolved_at = now(),
		reason = CASE WHEN reason = '' THEN $4 ELSE reason || '; ' || $4 END WHERE campaign_id = $1 AND id = $2`,
		g.campaign, cid, c.Resolution, why); err != nil {
		return c, fmt.Errorf("settling conflict %d: %w", cid, err)
	}
	if keepNew {
		nf, err := g.Fact(ctx, newID)
		if err != nil {
			return c, err
		}
		of, err := g.Fact(ctx, oldID)
		if err != nil {
			return c, err
		}
		if of.Status != memory.StatusRejected {
			if _, err := g.retire(ctx, oldID, nf.Provenance.SessionID, fmt.Sprintf("superseded by fact %d (conflict %d, %s)", newID, cid, why)); err != nil {
				return c, err
			}
		}
		if _, err := g.confirm(ctx, newID); err != nil {
			return c, err
		}
	} else {
		if _, err := g.reject(ctx, newID); err != nil {
			return c, err
		}
		of, err := g.Fact(ctx, oldID)
		if err != nil {
			return c, err
		}
		if of.Status == memory.StatusRetired {
			if err := g.exclusiveFree(ctx, of); err != nil {
				return c, fmt.Errorf("keeping fact %d: %w", oldID, err)
			}
			if _, err := g.db.Exec(ctx, `UPDATE relationships SET status = 'active', valid_until_session = '', retired_at = NULL,
				retire_reason = '', updated_at = now() WHERE campaign_id = $1 AND id = $2`, g.campaign, oldID); err != nil {
				return c, fmt.Errorf("restoring fact %d: %w", oldID, err)
			}
		}
	}
	if c.NewFact, err = g.Fact(ctx, newID); err != nil {
		return c, err
	}
	c.OldFact, err = g.Fact(ctx, oldID)
	return c, err
}

// exclusiveFree checks that making f canon again would not give its source
// two active facts of a single-valued relation.
func (g *Graph) exclusiveFree(ctx context.Context, f memory.Relationship) error {
	if !isExclusive(f.Type) {
		return nil
	}
	others, err := g.canon(ctx, `r.source_id = $2 AND r.rel_type = $3 AND r.id <> $4`, f.SourceID, f.Type, f.ID)
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return fmt.Errorf("%w: %s is single-valued and fact %d (%s -> %s) is canon now; settle that one first",
			memory.ErrInvalid, f.Type, others[0].ID, others[0].SourceID, others[0].TargetID)
	}
	return nil
}

// activate makes fact id DM-confirmed canon inside a transaction. For a
// single-valued relation it first retires the source's other active facts
// of that relation, each with a supersedes link and a settled conflict
// saying why.
func (g *Graph) activate(ctx context.Context, id int64, why string) (memory.Relationship, error) {
	f, err := g.Fact(ctx, id)
	if err != nil {
		return memory.Relationship{}, err
	}
	if err := g.supersedeOthers(ctx, f, why); err != nil {
		return memory.Relationship{}, err
	}
	return g.setStatus(ctx, id, "confirming", `status = 'active', dm_confirmed = true, valid_until_session = $3, proposed_by = '',
		retired_at = NULL, retire_reason = ''`, `r.status IN ('pending', 'rejected', 'active')`, "")
}

// supersedeOthers retires the source's other active facts of f's relation
// if it is single-valued, each with a supersedes link from f and a settled
// conflict saying why.
func (g *Graph) supersedeOthers(ctx context.Context, f memory.Relationship, why string) error {
	if !isExclusive(f.Type) {
		return nil
	}
	others, err := g.canon(ctx, `r.source_id = $2 AND r.rel_type = $3 AND r.id <> $4`, f.SourceID, f.Type, f.ID)
	if err != nil {
		return err
	}
	for _, o := range others {
		reason := fmt.Sprintf("superseded by fact %d (%s)", f.ID, why)
		if _, err := g.retire(ctx, o.ID, f.Provenance.SessionID, reason); err != nil {
			return err
		}
		if err := g.linkFacts(ctx, memory.FactLink{FromFact: f.ID, ToFact: o.ID, Kind: memory.LinkSupersedes, Weight: 1}, reason); err != nil {
			return err
		}
		if _, err := g.db.Exec(ctx, `INSERT INTO fact_conflicts (campaign_id, new_fact, old_fact, kind, resolution, resolved_at, reason, writer)
			VALUES ($1, $2, $3, 'supersedes', 'kept_new', now(), $4, 'dm')
			ON CONFLICT (new_fact, old_fact) DO UPDATE SET resolution = 'kept_new', resolved_at = now(), reason = excluded.reason`,
			g.campaign, f.ID, o.ID, reason); err != nil {
			return fmt.Errorf("recording that fact %d supersedes %d: %w", f.ID, o.ID, err)
		}
	}
	return nil
}

// setStatus applies set (which may use $3, the session, and $4… for more) to fact id if its
// current status is allowed.
func (g *Graph) setStatus(ctx context.Context, id int64, verb, set, allowed, sessionID string, more ...any) (memory.Relationship, error) {
	rows, err := g.db.Query(ctx, `
		UPDATE relationships r SET `+set+`, updated_at = now()
		WHERE r.campaign_id = $1 AND r.id = $2 AND `+allowed+`
		RETURNING `+relColumns, append([]any{g.campaign, id, sessionID}, more...)...)
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
