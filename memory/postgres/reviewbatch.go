package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// ReviewAction is what a bulk review does to each fact.
type ReviewAction string

// Review actions.
const (
	ReviewConfirm ReviewAction = "confirm"
	ReviewReject  ReviewAction = "reject"
)

// maxReviewBatch bounds the facts of one bulk review.
const maxReviewBatch = 1000

// ReviewBatch is one bulk confirm or reject, undoable while nothing it
// touched has changed since.
type ReviewBatch struct {
	ID     int64
	Action ReviewAction
	// Actor is who asked (the DM's user id, or empty).
	Actor string
	// Facts are the facts asked for, in order.
	Facts []int64
	// Done are those facts as the batch left them (a proposal of a fact
	// canon already holds is the canon fact).
	Done      []memory.Relationship
	CreatedAt time.Time
	// UndoneAt is when it was undone; zero while it stands.
	UndoneAt time.Time
}

// ReviewFacts confirms or rejects the facts ids in one transaction, each as
// ConfirmFact or RejectFact would (settling their conflicts), and records
// the previous state of every row it touched, so UndoReview can restore it.
// Any fact that cannot be reviewed fails the whole batch, naming it.
func (g *Graph) ReviewFacts(ctx context.Context, action ReviewAction, ids []int64, actor string) (ReviewBatch, error) {
	if err := g.dmOnly("reviewing facts"); err != nil {
		return ReviewBatch{}, err
	}
	switch {
	case action != ReviewConfirm && action != ReviewReject:
		return ReviewBatch{}, fmt.Errorf("%w: unknown review action %q: want confirm or reject", memory.ErrInvalid, action)
	case len(ids) == 0:
		return ReviewBatch{}, fmt.Errorf("%w: no facts to %s", memory.ErrInvalid, action)
	case len(ids) > maxReviewBatch:
		return ReviewBatch{}, fmt.Errorf("%w: %d facts to %s, at most %d at once", memory.ErrInvalid, len(ids), action, maxReviewBatch)
	}
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if id <= 0 || seen[id] {
			return ReviewBatch{}, fmt.Errorf("%w: fact %d is not a fact number or is listed twice", memory.ErrInvalid, id)
		}
		seen[id] = true
	}
	b := ReviewBatch{Action: action, Actor: actor, Facts: slices.Clone(ids)}
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := g.txGraph(tx)
		sources, err := tg.lockSources(ctx, `SELECT DISTINCT source_id FROM relationships WHERE campaign_id = $1 AND id = ANY($2)`, ids)
		if err != nil {
			return err
		}
		var before []byte
		if err := tx.QueryRow(ctx, reviewSnapshotSQL, g.campaign, sources).Scan(&before); err != nil {
			return fmt.Errorf("recording the facts as they were: %w", err)
		}
		for _, id := range ids {
			var f memory.Relationship
			if action == ReviewConfirm {
				f, err = tg.confirm(ctx, id)
			} else {
				f, err = tg.reject(ctx, id)
			}
			if err != nil {
				return fmt.Errorf("%s fact %d: %w", action, id, err)
			}
			b.Done = append(b.Done, f)
		}
		var after []byte
		if err := tx.QueryRow(ctx, reviewStampsSQL, g.campaign, sources).Scan(&after); err != nil {
			return fmt.Errorf("recording the facts as left: %w", err)
		}
		return tx.QueryRow(ctx, `INSERT INTO review_batches (campaign_id, action, actor, facts, before, after)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id, created_at`, g.campaign, string(action), actor, ids, before, after).
			Scan(&b.ID, &b.CreatedAt)
	})
	if err != nil {
		return ReviewBatch{}, fmt.Errorf("bulk review: %w", err)
	}
	return b, nil
}

// reviewSnapshotSQL is every row a review of the facts of sources ($2) can
// touch: their facts, and the conflicts, links and evidence of those facts.
const reviewSnapshotSQL = `
WITH f AS (SELECT * FROM relationships WHERE campaign_id = $1 AND source_id = ANY($2))
SELECT jsonb_build_object(
  'facts', (SELECT coalesce(jsonb_agg(to_jsonb(f)), '[]') FROM f),
  'conflicts', (SELECT coalesce(jsonb_agg(to_jsonb(c)), '[]') FROM fact_conflicts c
                WHERE c.campaign_id = $1 AND (c.new_fact IN (SELECT id FROM f) OR c.old_fact IN (SELECT id FROM f))),
  'links', (SELECT coalesce(jsonb_agg(to_jsonb(l)), '[]') FROM fact_links l
            WHERE l.campaign_id = $1 AND (l.from_fact IN (SELECT id FROM f) OR l.to_fact IN (SELECT id FROM f))),
  'evidence', (SELECT coalesce(jsonb_agg(to_jsonb(e)), '[]') FROM fact_evidence e WHERE e.fact_id IN (SELECT id FROM f)))`

// reviewStampsSQL is the updated_at of every fact of sources ($2) and the
// resolution of their conflicts: what undo checks nothing changed since.
const reviewStampsSQL = `
WITH f AS (SELECT id, updated_at FROM relationships WHERE campaign_id = $1 AND source_id = ANY($2))
SELECT jsonb_build_object(
  'facts', (SELECT coalesce(jsonb_object_agg(f.id::text, f.updated_at), '{}') FROM f),
  'conflicts', (SELECT coalesce(jsonb_object_agg(c.id::text, c.resolution), '{}') FROM fact_conflicts c
                WHERE c.campaign_id = $1 AND (c.new_fact IN (SELECT id FROM f) OR c.old_fact IN (SELECT id FROM f))))`

// lockSources locks the source entities the query ($1 campaign, $2 ids)
// names, in id order, and returns them.
func (g *Graph) lockSources(ctx context.Context, query string, ids any) ([]string, error) {
	rows, err := g.db.Query(ctx, `SELECT e.id FROM entities e WHERE e.campaign_id = $1 AND e.id IN (`+query+`)
		ORDER BY e.id FOR UPDATE`, g.campaign, ids)
	if err != nil {
		return nil, fmt.Errorf("locking the facts' sources: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// UndoReview restores every row batch id touched to its state before it:
// facts (a dropped proposal comes back), conflicts, links and evidence. It
// refuses, changing nothing, if the batch was undone already or anything it
// touched changed since (another review, a new fact about the same source).
func (g *Graph) UndoReview(ctx context.Context, id int64) (ReviewBatch, error) {
	if err := g.dmOnly("undoing a review"); err != nil {
		return ReviewBatch{}, err
	}
	var b ReviewBatch
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := g.txGraph(tx)
		var undone *time.Time
		var action string
		err := tx.QueryRow(ctx, `SELECT id, action, actor, facts, created_at, undone_at FROM review_batches
			WHERE campaign_id = $1 AND id = $2 FOR UPDATE`, g.campaign, id).Scan(&b.ID, &action, &b.Actor, &b.Facts, &b.CreatedAt, &undone)
		if isNoRows(err) {
			return fmt.Errorf("review batch %d: %w", id, memory.ErrNotFound)
		}
		if err != nil {
			return err
		}
		b.Action = ReviewAction(action)
		if undone != nil {
			return fmt.Errorf("%w: review batch %d was undone at %s", memory.ErrInvalid, id, undone.UTC().Format(time.RFC3339))
		}
		sources, err := tg.lockSources(ctx, `SELECT DISTINCT x->>'source_id' FROM review_batches b,
			jsonb_array_elements(b.before->'facts') x WHERE b.id = $2`, id)
		if err != nil {
			return err
		}
		var changed string
		err = tx.QueryRow(ctx, `
			WITH now_ AS (SELECT (`+reviewStampsSQL+`) AS s)
			SELECT coalesce(
			  (SELECT 'fact ' || coalesce(a.key, n.key) FROM jsonb_each(b.after->'facts') a
			   FULL JOIN jsonb_each((SELECT s FROM now_)->'facts') n ON n.key = a.key
			   WHERE a.value IS DISTINCT FROM n.value ORDER BY 1 LIMIT 1),
			  (SELECT 'conflict ' || coalesce(a.key, n.key) FROM jsonb_each(b.after->'conflicts') a
			   FULL JOIN jsonb_each((SELECT s FROM now_)->'conflicts') n ON n.key = a.key
			   WHERE a.value IS DISTINCT FROM n.value ORDER BY 1 LIMIT 1), '')
			FROM review_batches b WHERE b.id = $3`, g.campaign, sources, id).Scan(&changed)
		if err != nil {
			return fmt.Errorf("checking what changed since review batch %d: %w", id, err)
		}
		if changed != "" {
			return fmt.Errorf("%w: %s changed after review batch %d; undo would overwrite that, so nothing was undone", memory.ErrInvalid, changed, id)
		}
		for _, q := range undoReviewSQL {
			if _, err := tx.Exec(ctx, q, g.campaign, id); err != nil {
				return fmt.Errorf("undoing review batch %d: %w", id, err)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE review_batches SET undone_at = now() WHERE id = $1`, id); err != nil {
			return fmt.Errorf("undoing review batch %d: %w", id, err)
		}
		b.UndoneAt = time.Now()
		for _, fid := range b.Facts {
			f, err := tg.Fact(ctx, fid)
			if err != nil {
				return err
			}
			b.Done = append(b.Done, f)
		}
		return nil
	})
	if err != nil {
		return ReviewBatch{}, fmt.Errorf("undoing a review: %w", err)
	}
	return b, nil
}

// undoReviewSQL restores the rows of batch $2 ($1 the campaign), in order:
// drops the conflicts and links the batch created, brings back the facts
// as they were (re-inserting a dropped proposal), then their evidence,
// conflicts and links.
var undoReviewSQL = []string{
	`DELETE FROM fact_conflicts c USING review_batches b
	 WHERE b.id = $2 AND c.campaign_id = $1
	   AND (c.new_fact IN (SELECT (x->>'id')::bigint FROM jsonb_array_elements(b.before->'facts') x)
	        OR c.old_fact IN (SELECT (x->>'id')::bigint FROM jsonb_array_elements(b.before->'facts') x))
	   AND c.id NOT IN (SELECT (x->>'id')::bigint FROM jsonb_array_elements(b.before->'conflicts') x)`,
	`DELETE FROM fact_links l USING review_batches b
	 WHERE b.id = $2 AND l.campaign_id = $1
	   AND (l.from_fact IN (SELECT (x->>'id')::bigint FROM jsonb_array_elements(b.before->'facts') x)
	        OR l.to_fact IN (SELECT (x->>'id')::bigint FROM jsonb_array_elements(b.before->'facts') x))
	   AND NOT EXISTS (SELECT 1 FROM jsonb_populate_recordset(NULL::fact_links, b.before->'links') o
	                   WHERE o.from_fact = l.from_fact AND o.to_fact = l.to_fact AND o.kind = l.kind)`,
	// Out of the live set first, so no row being restored collides with
	// another (relationships_live) on the way.
	`UPDATE relationships r SET status = 'rejected'
	 FROM review_batches b, jsonb_populate_recordset(NULL::relationships, b.before->'facts') o
	 WHERE b.id = $2 AND r.campaign_id = $1 AND r.id = o.id AND r.updated_at IS DISTINCT FROM o.updated_at`,
	`UPDATE relationships r SET status = o.status, dm_confirmed = o.dm_confirmed, valid_until_session = o.valid_until_session,
	        proposed_by = o.proposed_by, attributes = o.attributes, confidence = o.confidence, source = o.source,
	        retired_at = o.retired_at, retire_reason = o.retire_reason, updated_at = o.updated_at
	 FROM review_batches b, jsonb_populate_recordset(NULL::relationships, b.before->'facts') o
	 WHERE b.id = $2 AND r.campaign_id = $1 AND r.id = o.id AND (r.updated_at, r.status) IS DISTINCT FROM (o.updated_at, o.status)`,
	`INSERT INTO relationships (id, campaign_id, source_id, target_id, rel_type, attributes, session_id, established_at,
	        confidence, source, dm_confirmed, status, valid_until_session, created_at, updated_at, proposed_by, retired_at, retire_reason)
	 SELECT o.id, o.campaign_id, o.source_id, o.target_id, o.rel_type, o.attributes, o.session_id, o.established_at,
	        o.confidence, o.source, o.dm_confirmed, o.status, o.valid_until_session, o.created_at, o.updated_at, o.proposed_by,
	        o.retired_at, o.retire_reason
	 FROM review_batches b, jsonb_populate_recordset(NULL::relationships, b.before->'facts') o
	 WHERE b.id = $2 AND o.campaign_id = $1 AND NOT EXISTS (SELECT 1 FROM relationships r WHERE r.id = o.id)`,
	`INSERT INTO fact_evidence SELECT o.* FROM review_batches b, jsonb_populate_recordset(NULL::fact_evidence, b.before->'evidence') o
	 WHERE b.id = $2 AND EXISTS (SELECT 1 FROM transcript_entries t WHERE t.id = o.entry_id)
	   AND EXISTS (SELECT 1 FROM relationships r WHERE r.id = o.fact_id AND r.campaign_id = $1)
	 ON CONFLICT DO NOTHING`,
	`UPDATE fact_conflicts c SET kind = o.kind, resolution = o.resolution, resolved_at = o.resolved_at, reason = o.reason
	 FROM review_batches b, jsonb_populate_recordset(NULL::fact_conflicts, b.before->'conflicts') o
	 WHERE b.id = $2 AND c.campaign_id = $1 AND c.id = o.id`,
	`INSERT INTO fact_conflicts SELECT o.* FROM review_batches b, jsonb_populate_recordset(NULL::fact_conflicts, b.before->'conflicts') o
	 WHERE b.id = $2 AND o.campaign_id = $1 AND NOT EXISTS (SELECT 1 FROM fact_conflicts c WHERE c.id = o.id)`,
	`UPDATE fact_links l SET weight = o.weight, reason = o.reason
	 FROM review_batches b, jsonb_populate_recordset(NULL::fact_links, b.before->'links') o
	 WHERE b.id = $2 AND l.campaign_id = $1 AND l.from_fact = o.from_fact AND l.to_fact = o.to_fact AND l.kind = o.kind`,
	`INSERT INTO fact_links SELECT o.* FROM review_batches b, jsonb_populate_recordset(NULL::fact_links, b.before->'links') o
	 WHERE b.id = $2 AND o.campaign_id = $1 ON CONFLICT DO NOTHING`,
}

// LastReviewBatch returns the newest bulk review of the campaign that has
// not been undone (ok false if there is none): what an undo banner offers.
func (g *Graph) LastReviewBatch(ctx context.Context) (ReviewBatch, bool, error) {
	if !g.view.system() {
		return ReviewBatch{}, false, fmt.Errorf("%w: review batches are for the DM", memory.ErrForbidden)
	}
	var b ReviewBatch
	var action string
	err := g.db.QueryRow(ctx, `SELECT id, action, actor, facts, created_at FROM review_batches
		WHERE campaign_id = $1 AND undone_at IS NULL ORDER BY id DESC LIMIT 1`, g.campaign).
		Scan(&b.ID, &action, &b.Actor, &b.Facts, &b.CreatedAt)
	if isNoRows(err) {
		return ReviewBatch{}, false, nil
	}
	if err != nil {
		return ReviewBatch{}, false, fmt.Errorf("reading the last review batch: %w", err)
	}
	b.Action = ReviewAction(action)
	return b, true, nil
}
