package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// ExclusiveTypes returns the relationship types a source holds with one
// target at a time: a new target conflicts with the old one.
func ExclusiveTypes() []string { return []string{"LOCATED_AT", "LIVES_IN"} }

// negationPrefix marks a fact that denies another: NOT_LOCATED_AT denies
// LOCATED_AT between the same entities.
const negationPrefix = "NOT_"

func isExclusive(t string) bool {
	for _, x := range ExclusiveTypes() {
		if x == t {
			return true
		}
	}
	return false
}

var _ memory.FactTimeline = (*Graph)(nil)

// RecordFact stores r like UpsertRelationship and checks it against the
// canon. A canon fact it conflicts with is never overwritten:
//
//   - same source, an exclusive type (see ExclusiveTypes), another target,
//     and r established in a later session: r supersedes the old fact,
//     which is retired as of r's session and stays visible to "as of"
//     queries for the sessions in which it held;
//   - otherwise (an explicit negation NOT_X of a fact X or the reverse, or
//     an exclusive conflict that time does not order): r contradicts the old
//     fact, which stays canon, and r waits as pending.
//
// Each conflict is recorded as a link from r to the old fact, weighted by
// r's confidence, and queued for the DM (see Conflicts).
func (g *Graph) RecordFact(ctx context.Context, r memory.Relationship) (memory.Relationship, []memory.Conflict, error) {
	if err := validRel(r); err != nil {
		return memory.Relationship{}, nil, err
	}
	var out memory.Relationship
	var conflicts []memory.Conflict
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := &Graph{db: tx, campaign: g.campaign, threshold: g.threshold}
		// Serialise facts about the same source, so two conflicting writes
		// cannot both miss each other.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM entities WHERE campaign_id = $1 AND id = $2 FOR UPDATE`, g.campaign, r.SourceID); err != nil {
			return err
		}
		typ := r.Type
		base, negated := strings.CutPrefix(typ, negationPrefix)
		var olds []memory.Relationship
		var err error
		switch {
		case negated:
			olds, err = tg.canon(ctx, `r.source_id = $2 AND r.target_id = $3 AND r.rel_type = $4`, r.SourceID, r.TargetID, base)
		default:
			olds, err = tg.canon(ctx, `r.source_id = $2 AND r.target_id = $3 AND r.rel_type = $4`, r.SourceID, r.TargetID, negationPrefix+typ)
			if err == nil && isExclusive(typ) {
				var more []memory.Relationship
				more, err = tg.canon(ctx, `r.source_id = $2 AND r.target_id <> $3 AND r.rel_type = $4`, r.SourceID, r.TargetID, typ)
				olds = append(olds, more...)
			}
		}
		if err != nil {
			return err
		}
		if out, err = tg.UpsertRelationship(ctx, r); err != nil {
			return err
		}
		if out.Status == memory.StatusRejected {
			return nil
		}
		for _, old := range olds {
			kind := memory.LinkContradicts
			if !negated && old.Type == typ && isExclusive(typ) {
				later, err := tg.laterSession(ctx, out.Provenance.SessionID, old.Provenance.SessionID)
				if err != nil {
					return err
				}
				if later {
					kind = memory.LinkSupersedes
				}
			}
			if kind == memory.LinkSupersedes {
				if old, err = tg.RetireFact(ctx, old.ID, out.Provenance.SessionID); err != nil {
					return err
				}
			} else if out.Status == memory.StatusActive {
				if _, err := tx.Exec(ctx, `UPDATE relationships SET status = 'pending', updated_at = now()
					WHERE campaign_id = $1 AND id = $2`, g.campaign, out.ID); err != nil {
					return fmt.Errorf("holding fact %d for review: %w", out.ID, err)
				}
				out.Status = memory.StatusPending
			}
			if err := tg.LinkFacts(ctx, memory.FactLink{FromFact: out.ID, ToFact: old.ID, Kind: kind,
				Weight: out.Provenance.Confidence}); err != nil {
				return err
			}
			c := memory.Conflict{NewFact: out, OldFact: old, Kind: kind}
			err := tx.QueryRow(ctx, `INSERT INTO fact_conflicts (campaign_id, new_fact, old_fact, kind)
				VALUES ($1, $2, $3, $4)
				ON CONFLICT (new_fact, old_fact) DO UPDATE SET kind = excluded.kind
				RETURNING id, resolution, created_at`, g.campaign, out.ID, old.ID, string(kind)).Scan(&c.ID, &c.Resolution, &c.CreatedAt)
			if err != nil {
				return fmt.Errorf("queueing the conflict of facts %d and %d: %w", out.ID, old.ID, err)
			}
			conflicts = append(conflicts, c)
		}
		return nil
	})
	if err != nil {
		return memory.Relationship{}, nil, fmt.Errorf("recording fact %s -%s-> %s: %w", r.SourceID, r.Type, r.TargetID, err)
	}
	return out, conflicts, nil
}

// canon returns the active facts matching where ($2..$4 bound to args).
func (g *Graph) canon(ctx context.Context, where string, args ...any) ([]memory.Relationship, error) {
	rows, err := g.db.Query(ctx, `SELECT `+relColumns+` FROM relationships r
		WHERE r.campaign_id = $1 AND r.status = 'active' AND `+where+` ORDER BY r.id`, append([]any{g.campaign}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("finding conflicting facts: %w", err)
	}
	return pgx.CollectRows(rows, scanRel)
}

// laterSession reports whether session a started after session b. A fact
// entered outside play (no session) comes before every session; a new fact
// without a session cannot be ordered.
func (g *Graph) laterSession(ctx context.Context, a, b string) (bool, error) {
	if a == "" {
		return false, nil
	}
	if b == "" {
		return true, nil
	}
	var later bool
	err := g.db.QueryRow(ctx, `SELECT coalesce((SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $2) >
		(SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $3), false)`, g.campaign, a, b).Scan(&later)
	if err != nil {
		return false, fmt.Errorf("ordering sessions %q and %q: %w", a, b, err)
	}
	return later, nil
}

// LinkFacts records a link between two facts of the campaign (again: the
// weight is updated).
func (g *Graph) LinkFacts(ctx context.Context, l memory.FactLink) error {
	switch {
	case !l.Kind.Valid():
		return fmt.Errorf("%w: unknown fact link kind %q", memory.ErrInvalid, l.Kind)
	case l.Weight < 0 || l.Weight > 1:
		return fmt.Errorf("%w: fact link weight %v is outside 0..1", memory.ErrInvalid, l.Weight)
	case l.FromFact == l.ToFact:
		return fmt.Errorf("%w: fact %d cannot be linked to itself", memory.ErrInvalid, l.FromFact)
	}
	tag, err := g.db.Exec(ctx, `
		INSERT INTO fact_links (campaign_id, from_fact, to_fact, kind, weight)
		SELECT $1, a.id, b.id, $4, $5 FROM relationships a, relationships b
		WHERE a.campaign_id = $1 AND a.id = $2 AND b.campaign_id = $1 AND b.id = $3
		ON CONFLICT (from_fact, to_fact, kind) DO UPDATE SET weight = excluded.weight`,
		g.campaign, l.FromFact, l.ToFact, string(l.Kind), l.Weight)
	if err != nil {
		return fmt.Errorf("linking fact %d to %d: %w", l.FromFact, l.ToFact, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("linking fact %d to %d: %w", l.FromFact, l.ToFact, memory.ErrNotFound)
	}
	return nil
}

// FactLinks returns the links from and to a fact.
func (g *Graph) FactLinks(ctx context.Context, factID int64) ([]memory.FactLink, error) {
	rows, err := g.db.Query(ctx, `SELECT from_fact, to_fact, kind, weight FROM fact_links
		WHERE campaign_id = $1 AND (from_fact = $2 OR to_fact = $2) ORDER BY created_at, from_fact, to_fact`, g.campaign, factID)
	if err != nil {
		return nil, fmt.Errorf("reading the links of fact %d: %w", factID, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.FactLink, error) {
		var l memory.FactLink
		var kind string
		err := row.Scan(&l.FromFact, &l.ToFact, &kind, &l.Weight)
		l.Kind = memory.LinkKind(kind)
		return l, err
	})
}

// FactsAsOf returns the facts of an entity (either end) that held during a
// session: canon or since retired, established in that session or before
// (or outside play), and not yet ended by then.
func (g *Graph) FactsAsOf(ctx context.Context, entityID, sessionID string) ([]memory.Relationship, error) {
	var at time.Time
	err := g.db.QueryRow(ctx, `SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $2`, g.campaign, sessionID).Scan(&at)
	if isNoRows(err) {
		return nil, fmt.Errorf("facts as of session %q: %w", sessionID, memory.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("facts as of session %q: %w", sessionID, err)
	}
	rows, err := g.db.Query(ctx, `
		SELECT `+g.view.relCols()+` FROM relationships r
		LEFT JOIN sessions fs ON fs.campaign_id = r.campaign_id AND fs.id = r.session_id
		LEFT JOIN sessions us ON us.campaign_id = r.campaign_id AND us.id = r.valid_until_session
		WHERE r.campaign_id = $1 AND (r.source_id = $2 OR r.target_id = $2) AND `+g.view.factVisible("r")+`
		  AND (r.status = 'active' OR (r.status = 'retired' AND r.valid_until_session <> ''))
		  AND (r.session_id = '' OR fs.started_at <= $3)
		  AND (r.valid_until_session = '' OR us.started_at > $3)
		ORDER BY r.rel_type, r.id`, g.campaign, entityID, at)
	if err != nil {
		return nil, fmt.Errorf("facts of %q as of session %q: %w", entityID, sessionID, err)
	}
	return pgx.CollectRows(rows, scanRel)
}

// Conflicts lists the open conflicts, oldest first.
func (g *Graph) Conflicts(ctx context.Context) ([]memory.Conflict, error) {
	if !g.view.system() {
		return nil, fmt.Errorf("%w: fact conflicts are for the DM", memory.ErrForbidden)
	}
	rows, err := g.db.Query(ctx, `SELECT id, new_fact, old_fact, kind, resolution, created_at FROM fact_conflicts
		WHERE campaign_id = $1 AND resolution = '' ORDER BY id`, g.campaign)
	if err != nil {
		return nil, fmt.Errorf("listing fact conflicts: %w", err)
	}
	type row struct {
		c        memory.Conflict
		new, old int64
	}
	rs, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var r row
		var kind string
		err := cr.Scan(&r.c.ID, &r.new, &r.old, &kind, &r.c.Resolution, &r.c.CreatedAt)
		r.c.Kind = memory.LinkKind(kind)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing fact conflicts: %w", err)
	}
	out := make([]memory.Conflict, len(rs))
	for i, r := range rs {
		if r.c.NewFact, err = g.Fact(ctx, r.new); err != nil {
			return nil, err
		}
		if r.c.OldFact, err = g.Fact(ctx, r.old); err != nil {
			return nil, err
		}
		out[i] = r.c
	}
	return out, nil
}

// ResolveConflict settles an open conflict. Keeping the new fact makes it
// DM-confirmed canon and retires the old one as of the new fact's session;
// keeping the old one rejects the new fact and, if the conflict had retired
// the old one, makes it canon again.
func (g *Graph) ResolveConflict(ctx context.Context, id int64, keepNew bool) (memory.Conflict, error) {
	var c memory.Conflict
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := &Graph{db: tx, campaign: g.campaign, threshold: g.threshold}
		var newID, oldID int64
		var kind string
		err := tx.QueryRow(ctx, `SELECT new_fact, old_fact, kind, resolution FROM fact_conflicts
			WHERE campaign_id = $1 AND id = $2 FOR UPDATE`, g.campaign, id).Scan(&newID, &oldID, &kind, &c.Resolution)
		if isNoRows(err) {
			return fmt.Errorf("conflict %d: %w", id, memory.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if c.Resolution != "" {
			return fmt.Errorf("%w: conflict %d is already resolved (%s)", memory.ErrInvalid, id, c.Resolution)
		}
		c.ID, c.Kind = id, memory.LinkKind(kind)
		if keepNew {
			c.Resolution = "kept_new"
			nf, err := tg.Fact(ctx, newID)
			if err != nil {
				return err
			}
			if _, err := tg.RetireFact(ctx, oldID, nf.Provenance.SessionID); err != nil {
				return err
			}
			if _, err := tg.ConfirmFact(ctx, newID); err != nil {
				return err
			}
		} else {
			c.Resolution = "kept_old"
			if _, err := tg.RejectFact(ctx, newID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE relationships SET status = 'active', valid_until_session = '', updated_at = now()
				WHERE campaign_id = $1 AND id = $2 AND status = 'retired'`, g.campaign, oldID); err != nil {
				return fmt.Errorf("restoring fact %d: %w", oldID, err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE fact_conflicts SET resolution = $3, resolved_at = now() WHERE campaign_id = $1 AND id = $2`,
			g.campaign, id, c.Resolution); err != nil {
			return err
		}
		if c.NewFact, err = tg.Fact(ctx, newID); err != nil {
			return err
		}
		c.OldFact, err = tg.Fact(ctx, oldID)
		return err
	})
	if err != nil {
		return memory.Conflict{}, fmt.Errorf("resolving conflict %d: %w", id, err)
	}
	return c, nil
}
