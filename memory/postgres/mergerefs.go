package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// moveMemoryToolRefs makes the memory tools' references to entity from
// name into instead, inside a merge's transaction: the touches of every
// node (the campaign's entities and the DM's nodes), the ends of the
// campaign's artifact edges and of the DM's edges, and the DM's own node
// about from (its notes join those of the DM's node about into, or it
// takes into's id). Two edges that become one keep both's notes. It
// returns how many rows changed.
func moveMemoryToolRefs(ctx context.Context, tx pgx.Tx, campaign, from, into string) (int, error) {
	n := 0
	// touches: the id replaced where it occurs, each reference kept once,
	// in its first place, and none to the node itself.
	for _, q := range []string{
		`UPDATE entities SET attributes = jsonb_set(attributes, '{touches}', (
		     SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY o), '[]') FROM (
		         SELECT CASE WHEN x = $2 THEN $3 ELSE x END AS t, min(o) AS o
		         FROM jsonb_array_elements_text(attributes->'touches') WITH ORDINALITY AS a(x, o) GROUP BY 1) d WHERE t <> entities.id)),
		     updated_at = now()
		 WHERE campaign_id = $1 AND jsonb_typeof(attributes->'touches') = 'array' AND attributes->'touches' ? $2`,
		`UPDATE dm_nodes SET touches = (
		     SELECT coalesce(array_agg(t ORDER BY o), '{}') FROM (
		         SELECT CASE WHEN x = $2 THEN $3 ELSE x END AS t, min(o) AS o
		         FROM unnest(touches) WITH ORDINALITY AS a(x, o) GROUP BY 1) d WHERE t <> dm_nodes.id),
		     updated_at = now()
		 WHERE campaign_id = $1 AND $2 = ANY(touches)`,
	} {
		tag, err := tx.Exec(ctx, q, campaign, from, into)
		if err != nil {
			return n, fmt.Errorf("moving memory-tool touches: %w", err)
		}
		n += int(tag.RowsAffected())
	}
	// The DM's node about from.
	tag, err := tx.Exec(ctx, `UPDATE dm_nodes i SET
		    notes = i.notes || ARRAY(SELECT x FROM unnest(f.notes) x WHERE x <> ALL(i.notes)),
		    touches = i.touches || ARRAY(SELECT x FROM unnest(f.touches) x WHERE x <> ALL(i.touches) AND x <> $3),
		    gist = CASE WHEN i.gist = '' THEN f.gist ELSE i.gist END,
		    archived_at = CASE WHEN i.archived_at IS NULL OR f.archived_at IS NULL THEN NULL ELSE i.archived_at END,
		    updated_at = now()
		FROM dm_nodes f WHERE f.campaign_id = $1 AND f.id = $2 AND i.campaign_id = $1 AND i.id = $3`, campaign, from, into)
	if err != nil {
		return n, fmt.Errorf("merging the DM's notes on %s into those on %s: %w", from, into, err)
	}
	if tag.RowsAffected() > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM dm_nodes WHERE campaign_id = $1 AND id = $2`, campaign, from); err != nil {
			return n, fmt.Errorf("merging the DM's notes on %s: %w", from, err)
		}
	} else if tag, err = tx.Exec(ctx, `UPDATE dm_nodes SET id = $3, updated_at = now() WHERE campaign_id = $1 AND id = $2`,
		campaign, from, into); err != nil {
		return n, fmt.Errorf("moving the DM's notes on %s to %s: %w", from, into, err)
	}
	n += int(tag.RowsAffected())
	// Edges, one at a time so that two becoming one merge their notes.
	for _, t := range []struct{ table, from, to string }{{"dm_edges", "from_id", "to_id"}, {"kg_edges", "from_ref", "to_ref"}} {
		rows, err := tx.Query(ctx, `SELECT id FROM `+t.table+` WHERE campaign_id = $1 AND ($2 IN (`+t.from+`, `+t.to+`)) ORDER BY id`,
			campaign, from)
		if err != nil {
			return n, fmt.Errorf("moving %s: %w", t.table, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return n, fmt.Errorf("moving %s: %w", t.table, err)
		}
		ends := `CASE WHEN e.` + t.from + ` = $2 THEN $3 ELSE e.` + t.from + ` END, CASE WHEN e.` + t.to + ` = $2 THEN $3 ELSE e.` + t.to + ` END`
		for _, id := range ids {
			// The edge it becomes, if another already is that edge: the
			// notes join it and this one goes.
			tag, err := tx.Exec(ctx, `WITH e AS (SELECT * FROM `+t.table+` WHERE id = $4)
				UPDATE `+t.table+` o SET notes = o.notes || ARRAY(SELECT x FROM unnest(e.notes) x WHERE x <> ALL(o.notes)), updated_at = now()
				FROM e WHERE o.campaign_id = $1 AND o.id <> e.id AND o.rel = e.rel AND (o.`+t.from+`, o.`+t.to+`) = (`+ends+`)`,
				campaign, from, into, id)
			if err != nil {
				return n, fmt.Errorf("moving %s %d: %w", t.table, id, err)
			}
			q := `UPDATE ` + t.table + ` e SET (` + t.from + `, ` + t.to + `) = (` + ends + `), updated_at = now() WHERE e.id = $4 AND e.campaign_id = $1`
			if tag.RowsAffected() > 0 {
				q = `DELETE FROM ` + t.table + ` WHERE id = $4 AND campaign_id = $1 AND $2 <> $3`
			}
			if _, err := tx.Exec(ctx, q, campaign, from, into, id); err != nil {
				return n, fmt.Errorf("moving %s %d: %w", t.table, id, err)
			}
			n++
		}
	}
	return n, nil
}
