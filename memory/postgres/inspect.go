package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Inspection summarises what a campaign's memory holds.
type Inspection struct {
	Campaign string
	// Sessions with their entry counts, oldest first.
	Sessions []memory.Session
	// Chunks is the number of L2 chunks, Embedded how many have an embedding.
	Chunks, Embedded int
	// EntityTypes counts entities per type, most common first.
	EntityTypes []TypeCount
	// Facts counts relationships per status.
	Facts map[memory.FactStatus]int
	// Pending lists the oldest facts waiting for the DM (at most 20).
	Pending []memory.Relationship
	// OpenConflicts is the number of new facts conflicting with canon that
	// wait for the DM (see Graph.Conflicts).
	OpenConflicts int
}

// TypeCount is a number of entities of one type.
type TypeCount struct {
	Type  string
	Count int
}

// Inspect reports the campaign's sessions, chunk embedding coverage,
// entities per type, pending facts and open conflicts.
func (c *Campaign) Inspect(ctx context.Context) (Inspection, error) {
	in := Inspection{Campaign: c.id, Facts: map[memory.FactStatus]int{}}
	var err error
	if in.Sessions, err = c.l1.Sessions(ctx); err != nil {
		return in, err
	}
	if err := c.l1.db.QueryRow(ctx, `SELECT count(*), count(embedding) FROM chunks WHERE campaign_id = $1`, c.id).
		Scan(&in.Chunks, &in.Embedded); err != nil {
		return in, fmt.Errorf("counting chunks: %w", err)
	}
	rows, err := c.l1.db.Query(ctx, `SELECT type, count(*) FROM entities WHERE campaign_id = $1
		GROUP BY type ORDER BY count(*) DESC, type`, c.id)
	if err != nil {
		return in, fmt.Errorf("counting entities: %w", err)
	}
	if in.EntityTypes, err = pgx.CollectRows(rows, pgx.RowToStructByPos[TypeCount]); err != nil {
		return in, fmt.Errorf("counting entities: %w", err)
	}
	rows, err = c.l1.db.Query(ctx, `SELECT status, count(*) FROM relationships WHERE campaign_id = $1 GROUP BY status`, c.id)
	if err != nil {
		return in, fmt.Errorf("counting facts: %w", err)
	}
	var status string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&status, &n}, func() error {
		in.Facts[memory.FactStatus(status)] = n
		return nil
	}); err != nil {
		return in, fmt.Errorf("counting facts: %w", err)
	}
	if in.Pending, err = c.graph.PendingFacts(ctx, memory.FactFilter{Limit: 20}); err != nil {
		return in, err
	}
	if err := c.l1.db.QueryRow(ctx, `SELECT count(*) FROM fact_conflicts WHERE campaign_id = $1 AND resolution = ''`, c.id).
		Scan(&in.OpenConflicts); err != nil {
		return in, fmt.Errorf("counting open conflicts: %w", err)
	}
	return in, nil
}
