package access

import (
	"context"
	"encoding/json"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// LiveFeed is one process's latest report on a campaign's table.
//
// The live feed goes through the door like the sign-ins: each call is
// bounded by Config.StatementTimeout (a report never hangs on a database
// that does not answer), and an outage degrades the door and is returned
// wrapping memory.ErrUnavailable.
type LiveFeed = postgres.LiveFeed

// PublishLive stores owner's latest snapshot of the campaign's table (the
// console's Live page in any process on the database shows it). DM only:
// it is written by the process that runs the table.
func (c *Campaign) PublishLive(ctx context.Context, owner string, status json.RawMessage) error {
	if err := c.dmOnly("publishing the live status"); err != nil {
		return err
	}
	return c.door.guard(ctx, "publishing the live status", func(ctx context.Context) error {
		return c.pc.PublishLive(ctx, owner, status)
	})
}

// WithdrawLive removes owner's snapshot. DM only.
func (c *Campaign) WithdrawLive(ctx context.Context, owner string) error {
	if err := c.dmOnly("withdrawing the live status"); err != nil {
		return err
	}
	return c.door.guard(ctx, "withdrawing the live status", func(ctx context.Context) error {
		return c.pc.WithdrawLive(ctx, owner)
	})
}

// LiveFeeds returns the snapshots written within fresh, newest first. DM
// only: the table's live status names who speaks and what was heard.
func (c *Campaign) LiveFeeds(ctx context.Context, fresh time.Duration) ([]LiveFeed, error) {
	if err := c.dmOnly("reading the live status"); err != nil {
		return nil, err
	}
	var feeds []LiveFeed
	err := c.door.guard(ctx, "reading the live status", func(ctx context.Context) error {
		var err error
		feeds, err = c.pc.LiveFeeds(ctx, fresh)
		return err
	})
	return feeds, err
}
