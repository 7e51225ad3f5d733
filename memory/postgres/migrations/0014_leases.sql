-- Claims of the glyphoxa processes sharing this database (lifecycle/lease):
-- a guild's voice session, a Discord shard, a campaign's background work.
-- A row is held by owner until expires_at; the holder renews it by its
-- heartbeat. token is the fencing token: it grows by one each time the row
-- changes hands, so a process that lost a claim can tell (its token no
-- longer matches). state is what the next holder needs to resume the work
-- (a running session's guild, channels and id), empty when there is none.
CREATE TABLE leases (
	name        text PRIMARY KEY,
	owner       text NOT NULL,
	token       bigint NOT NULL,
	acquired_at timestamptz NOT NULL,
	renewed_at  timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL,
	state       text NOT NULL DEFAULT ''
);

-- The takeover scan reads the expired claims that carry work to resume.
CREATE INDEX leases_expiring ON leases (expires_at) WHERE state <> '';
