package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// WriteFact is the one way facts are written: every writer (the DM, an
// import, extraction, a player's agent, an NPC) goes through it, and the
// store, not the caller, decides from the writer what the write may do.
//
// A canon fact it conflicts with is never overwritten. Conflicts are the
// canon facts with the same source and an exclusive type (see
// ExclusiveTypes) but another target, and explicit negations (NOT_X of X,
// or the reverse). Each is linked from the new fact and queued for the DM
// (see Conflicts):
//
//   - the DM's write is DM-confirmed canon; it supersedes the facts it
//     conflicts with, which are retired as of r's session (or now) and stay
//     visible to "as of" queries for the time they held. The conflict is
//     recorded as settled ("kept_new") with reason.
//   - import and extraction write canon at or above the review threshold:
//     an exclusive fact of a later session supersedes the old one (which
//     is retired only if the new one is canon); any other conflict leaves
//     the old fact canon and holds the new one pending.
//   - players and NPCs only propose: each write is the writer's own pending
//     proposal, stored apart from canon (a proposal of an existing triple
//     never merges into it, so it can neither flip a fact's secrecy nor
//     tell the writer the fact exists). Its conflicts are queued but not
//     returned: the canon it contradicts may be hidden from the writer.
//
// Writing the same fact again changes nothing, so a re-run of an import or
// of extraction creates no duplicate.
func (g *Graph) WriteFact(ctx context.Context, w memory.Writer, r memory.Relationship, reason string) (memory.FactWrite, error) {
	return g.writeFact(ctx, w, r, reason, nil)
}

// writeFact is WriteFact, linking the fact to the transcript lines
// evidence (AddEvidence) in the same transaction: a reader never sees the
// fact without the lines that decide which players may read it.
func (g *Graph) writeFact(ctx context.Context, w memory.Writer, r memory.Relationship, reason string, evidence []int64) (memory.FactWrite, error) {
	if err := w.Validate(); err != nil {
		return memory.FactWrite{}, err
	}
	if err := g.view.mayWriteAs(w); err != nil {
		return memory.FactWrite{}, fmt.Errorf("recording fact %s -%s-> %s: %w", r.SourceID, r.Type, r.TargetID, err)
	}
	if err := validRel(r); err != nil {
		return memory.FactWrite{}, err
	}
	if err := g.endsVisible(ctx, r.SourceID, r.TargetID); err != nil {
		return memory.FactWrite{}, err
	}
	attrs := make(map[string]any, len(r.Attributes)+2)
	for k, v := range r.Attributes {
		attrs[k] = v
	}
	r.Attributes = attrs
	proposedBy := ""
	switch w.Role {
	case memory.WriterDM:
		r.Provenance.DMConfirmed = true
		if r.Provenance.Confidence == 0 {
			r.Provenance.Confidence = 1
		}
		if reason = strings.TrimSpace(reason); reason != "" {
			// dm_: the DM's reason may tell what players do not know yet
			// ("captured by the cult"): the viewer keeps it from them.
			attrs["dm_reason"] = reason
		}
	case memory.WriterPlayer, memory.WriterNPC:
		proposedBy = w.Key()
		r.Provenance.DMConfirmed = false
		// Whatever the writer claims, the store records who proposed it.
		attrs["proposed_by"] = w.ID
		attrs["proposed_by_role"] = string(w.Role)
	}
	var out memory.FactWrite
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
		if out.Fact, err = tg.upsertRel(ctx, r, proposedBy); err != nil {
			return err
		}
		if err := tg.AddEvidence(ctx, out.Fact.ID, evidence); err != nil {
			return err
		}
		out.Proposed = out.Fact.Status == memory.StatusPending
		if out.Fact.Status == memory.StatusRejected {
			return nil
		}
		for _, old := range olds {
			kind := memory.LinkContradicts
			switch {
			case w.Role == memory.WriterDM:
				kind = memory.LinkSupersedes
			case !negated && old.Type == typ && isExclusive(typ):
				later, err := tg.laterSession(ctx, out.Fact.Provenance.SessionID, old.Provenance.SessionID)
				if err != nil {
					return err
				}
				if later {
					kind = memory.LinkSupersedes
				}
			}
			resolution := ""
			switch {
			case w.Proposes():
				// A proposal changes no canon: the DM settles the pair.
			case w.Role == memory.WriterDM:
				resolution = "kept_new"
				why := fmt.Sprintf("superseded by fact %d, written by the DM", out.Fact.ID)
				if reason != "" {
					why += ": " + reason
				}
				if old, err = tg.retire(ctx, old.ID, out.Fact.Provenance.SessionID, why); err != nil {
					return err
				}
			case kind == memory.LinkSupersedes && out.Fact.Status == memory.StatusActive:
				if old, err = tg.retire(ctx, old.ID, out.Fact.Provenance.SessionID,
					fmt.Sprintf("superseded by fact %d of a later session", out.Fact.ID)); err != nil {
					return err
				}
			case kind == memory.LinkSupersedes:
				// A guess below the review threshold retires nothing: the
				// DM keeps the new fact or the old in /memory conflicts.
			case out.Fact.Status == memory.StatusActive:
				if _, err := tx.Exec(ctx, `UPDATE relationships SET status = 'pending', updated_at = now()
					WHERE campaign_id = $1 AND id = $2`, g.campaign, out.Fact.ID); err != nil {
					return fmt.Errorf("holding fact %d for review: %w", out.Fact.ID, err)
				}
				out.Fact.Status = memory.StatusPending
			}
			if err := tg.linkFacts(ctx, memory.FactLink{FromFact: out.Fact.ID, ToFact: old.ID, Kind: kind,
				Weight: out.Fact.Provenance.Confidence}, reason); err != nil {
				return err
			}
			c := memory.Conflict{NewFact: out.Fact, OldFact: old, Kind: kind}
			err := tx.QueryRow(ctx, `INSERT INTO fact_conflicts (campaign_id, new_fact, old_fact, kind, resolution, resolved_at, reason, writer)
				VALUES ($1, $2, $3, $4, $5, CASE WHEN $5 = '' THEN NULL ELSE now() END, $6, $7)
				ON CONFLICT (new_fact, old_fact) DO UPDATE SET kind = excluded.kind
				RETURNING id, resolution, created_at`, g.campaign, out.Fact.ID, old.ID, string(kind), resolution, reason, w.Key()).
				Scan(&c.ID, &c.Resolution, &c.CreatedAt)
			if err != nil {
				return fmt.Errorf("queueing the conflict of facts %d and %d: %w", out.Fact.ID, old.ID, err)
			}
			if !w.Proposes() {
				out.Conflicts = append(out.Conflicts, c)
			}
		}
		out.Proposed = out.Fact.Status == memory.StatusPending
		return nil
	})
	if err != nil {
		return memory.FactWrite{}, fmt.Errorf("recording fact %s -%s-> %s: %w", r.SourceID, r.Type, r.TargetID, err)
	}
	return out, nil
}

// endsVisible refuses, for a handle bound to a player, a fact whose end is
// an entity the player may not see ([view.entityVisible]) with the error
// of an entity that does not exist: a player's proposal about an entity
// first heard in a split scene they were not in must not tell them that it
// exists. Other handles write as before (a missing end is a foreign-key
// error, see explainFK).
func (g *Graph) endsVisible(ctx context.Context, ids ...string) error {
	if g.view.v.Role != memory.RolePlayer {
		return nil
	}
	rows, err := g.db.Query(ctx, `SELECT e.id FROM entities e WHERE e.campaign_id = $1 AND e.id = ANY($2)
		AND `+g.view.entityVisible("e"), g.campaign, ids)
	if err != nil {
		return fmt.Errorf("reading the fact's ends: %w", err)
	}
	seen, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("reading the fact's ends: %w", err)
	}
	for _, id := range ids {
		if !slices.Contains(seen, id) {
			return fmt.Errorf("%w: an entity it refers to does not exist (%q)", memory.ErrNotFound, id)
		}
	}
	return nil
}
