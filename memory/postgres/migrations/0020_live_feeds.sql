-- The live feed of running tables (bot/console): every glyphoxa process that
-- runs tables (serve, demo) writes, every few seconds, a snapshot of each
-- campaign it serves: whether a session is running, who is speaking, the
-- latest NPC turns, its memory health. A console on the same database, in
-- any process, shows the freshest. updated_at is the database's clock, so
-- that freshness does not depend on the processes' clocks agreeing.
CREATE TABLE live_feeds (
	campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
	owner       text NOT NULL CHECK (owner <> ''),
	status      jsonb NOT NULL,
	updated_at  timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (campaign_id, owner)
);
