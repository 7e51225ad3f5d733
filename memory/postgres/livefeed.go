package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

// LiveFeed is one process's latest report on a campaign's table (see
// migration 0020): a JSON snapshot the process wrote, and how long ago by
// the database's clock.
type LiveFeed struct {
	// Owner names the process that wrote it.
	Owner string
	// Status is the snapshot, as the writer encoded it.
	Status json.RawMessage
	// Age is how long ago it was written, by the database's clock.
	Age time.Duration
}

// PublishLive stores owner's latest snapshot of the campaign's table,
// replacing its previous one.
func (c *Campaign) PublishLive(ctx context.Context, owner string, status json.RawMessage) error {
	if strings.TrimSpace(owner) == "" {
		return fmt.Errorf("%w: a live feed needs an owner", memory.ErrInvalid)
	}
	if !json.Valid(status) {
		return fmt.Errorf("%w: the live status of %s is not JSON", memory.ErrInvalid, owner)
	}
	_, err := c.l1.db.Exec(ctx, `INSERT INTO live_feeds (campaign_id, owner, status, updated_at)
		VALUES ($1, $2, $3, now())
		ON CONFLICT (campaign_id, owner) DO UPDATE SET status = EXCLUDED.status, updated_at = now()`,
		c.id, owner, []byte(status))
	if err != nil {
		return fmt.Errorf("publishing the live status of %s: %w", owner, err)
	}
	return nil
}

// WithdrawLive removes owner's snapshot: the process no longer runs a
// table for the campaign.
func (c *Campaign) WithdrawLive(ctx context.Context, owner string) error {
	if _, err := c.l1.db.Exec(ctx, `DELETE FROM live_feeds WHERE campaign_id = $1 AND owner = $2`, c.id, owner); err != nil {
		return fmt.Errorf("withdrawing the live status of %s: %w", owner, err)
	}
	return nil
}

// LiveFeeds returns the snapshots written within fresh, newest first;
// older ones belong to processes that stopped without withdrawing them
// and are removed.
func (c *Campaign) LiveFeeds(ctx context.Context, fresh time.Duration) ([]LiveFeed, error) {
	if fresh <= 0 {
		return nil, fmt.Errorf("%w: live feed freshness must be positive, got %s", memory.ErrInvalid, fresh)
	}
	secs := fresh.Seconds()
	if _, err := c.l1.db.Exec(ctx, `DELETE FROM live_feeds
		WHERE campaign_id = $1 AND updated_at < now() - make_interval(secs => $2 * 10)`, c.id, secs); err != nil {
		return nil, fmt.Errorf("removing stale live feeds: %w", err)
	}
	rows, err := c.l1.db.Query(ctx, `SELECT owner, status, extract(epoch FROM now() - updated_at)::float8
		FROM live_feeds
		WHERE campaign_id = $1 AND updated_at >= now() - make_interval(secs => $2)
		ORDER BY updated_at DESC, owner`, c.id, secs)
	if err != nil {
		return nil, fmt.Errorf("reading the live feeds: %w", err)
	}
	defer rows.Close()
	var out []LiveFeed
	for rows.Next() {
		var f LiveFeed
		var st []byte
		var age float64
		if err := rows.Scan(&f.Owner, &st, &age); err != nil {
			return nil, fmt.Errorf("reading a live feed: %w", err)
		}
		f.Status = st
		f.Age = time.Duration(max(age, 0) * float64(time.Second))
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the live feeds: %w", err)
	}
	return out, nil
}
