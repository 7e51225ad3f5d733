package postgres

import (
	"context"
	"fmt"
	"time"
)

// EntityStamp identifies the state of a campaign's entities: it changes
// when an entity is added, edited or deleted. A running table polls it to
// learn, within seconds and without reading every entity, that the DM
// changed a name or an alias.
type EntityStamp struct {
	Count  int64
	Latest time.Time
}

// EntityStamp reads the stamp of the campaign's entities the viewer may
// see ([view.entityVisible]).
func (g *Graph) EntityStamp(ctx context.Context) (EntityStamp, error) {
	var s EntityStamp
	var latest *time.Time
	err := g.db.QueryRow(ctx, `SELECT count(*), max(`+g.view.updatedCol("e")+`) FROM entities e WHERE e.campaign_id = $1
		AND `+g.view.entityVisible("e"), g.campaign).
		Scan(&s.Count, &latest)
	if err != nil {
		return s, fmt.Errorf("reading the entities' stamp: %w", err)
	}
	if latest != nil {
		s.Latest = *latest
	}
	return s, nil
}
