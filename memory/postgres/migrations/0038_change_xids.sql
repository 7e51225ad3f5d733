-- Which transaction wrote each change of the graph's change log. A reader
-- that caches the graph (the console's snapshots, retrieval's graph) keeps
-- the newest change id it has applied; but ids are taken when a row is
-- written and seen when its transaction commits, so a long transaction
-- (extraction writing a session's facts) can commit changes with ids below
-- one a short transaction (a DM's confirm) committed before it. The reader
-- also keeps the transactions in progress when it read
-- (pg_snapshot_xip(pg_current_snapshot())): a change it has not seen with
-- an id up to its cursor was written by one of them, which this column
-- tells (postgres.ChangeCursor).
--
-- Existing rows keep NULL (their transactions ended long ago); the default
-- is set after the column is added, so adding it rewrites nothing.
ALTER TABLE graph_changes ADD COLUMN xid xid8;
ALTER TABLE graph_changes ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX graph_changes_xid ON graph_changes (campaign_id, xid) WHERE xid IS NOT NULL;
