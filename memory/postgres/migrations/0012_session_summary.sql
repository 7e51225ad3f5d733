-- The running summary of a session, persisted while it is played (the
-- consolidator saves it when it changes) and kept afterwards for recaps and
-- the next session's context.
ALTER TABLE sessions ADD COLUMN summary text NOT NULL DEFAULT '';

-- A running table re-reads its names when an entity changes: the newest
-- update time is read through this index (see Graph.EntityStamp).
CREATE INDEX entities_updated ON entities (campaign_id, updated_at);
