-- Where each change stands in the order readers of the change log see
-- changes commit. A change's id is taken when its row is written and seen
-- when its transaction commits, so a long transaction (extraction writing
-- a session's facts) can commit a change with an id below one a short
-- transaction (a DM's confirm) committed first. A reader that keeps only a
-- number (the MCP sync tool's cursor, held by the client; the continuity
-- checker's last change) stepped over such a change for good.
--
-- pos is given after the commit, by the reader: glyphoxa_publish_changes
-- numbers a campaign's committed changes that have none, under a lock per
-- campaign, in its own statement. Publications of a campaign are
-- serialised and each commits before the next starts, so pos only grows
-- in the order readers see: a reader that has seen pos p has seen every
-- pos below p that will ever exist. Ids stay the changes' names and the
-- server caches' cursor (ChangeCursor, with the transactions running).
--
-- Existing changes keep their id as their position (their transactions
-- ended long ago), so the cursors clients hold keep their meaning.
ALTER TABLE graph_changes ADD COLUMN pos bigint;
UPDATE graph_changes SET pos = id;
CREATE SEQUENCE graph_changes_pos_seq;
-- New positions start after every id taken so far, rolled-back ones
-- included, so that a cursor an older process hands out during a rolling
-- upgrade (the newest id) is not ahead of them. A fresh database's
-- sequence is left as created: no id was taken.
SELECT setval('graph_changes_pos_seq', last_value) FROM graph_changes_id_seq WHERE is_called;
CREATE INDEX graph_changes_pos ON graph_changes (campaign_id, pos);
CREATE INDEX graph_changes_unpublished ON graph_changes (campaign_id, id) WHERE pos IS NULL;

-- glyphoxa_publish_changes gives at most batch of the campaign's committed
-- changes without a position the next positions, in id order, and returns
-- how many it gave: a caller publishes a backlog (a large import, a log
-- nobody read for weeks) in bounded statements, each of which stays well
-- inside the store's statement timeout and keeps what it did. Run it in a
-- statement of its own (not inside a reader's statement), at read
-- committed: the lock is taken first, and the update's snapshot after
-- it, so it sees every earlier publication's commit. Within an explicit
-- transaction the lock is held until it ends.
CREATE FUNCTION glyphoxa_publish_changes(campaign text, batch int) RETURNS int LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    n int;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('glyphoxa:graph_changes'), hashtext(campaign));
    UPDATE graph_changes g SET pos = t.p
    FROM (SELECT u.id, nextval('graph_changes_pos_seq') AS p
          FROM (SELECT id FROM graph_changes WHERE campaign_id = campaign AND pos IS NULL ORDER BY id LIMIT batch) u) t
    WHERE g.id = t.id;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;
