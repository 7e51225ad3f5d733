-- A log of the chunks whose entity links changed, which the retrieval
-- graph's refresh reads (Campaign.GraphChanges), kept as graph_changes is
-- for facts: an id and the transaction that wrote it (migration 0038), so
-- that a link committed late by a long transaction is still read.
--
-- The refresh used to read the chunks re-indexed since its cursor, by
-- chunks.updated_at. That missed every link written without re-indexing
-- its chunk: a DM's merge moves the duplicate's links to the entity kept,
-- and deleting an entity or a session's chunks takes their links away by
-- cascade. A resident graph (an NPC's, the MCP server's, the console's
-- asks) kept the old links until the process restarted, so a question
-- naming the merged entity never reached the duplicate's lines. It also
-- missed a chunk written by a transaction that committed after a later
-- one's chunk was read: its timestamp sorted before the cursor.
--
-- Not a change to show anyone: it holds chunk ids only, and the refresh
-- reads each chunk's links as the reader may see them now.
CREATE TABLE chunk_changes (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL,
    chunk_id    text NOT NULL,
    xid         xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX chunk_changes_campaign ON chunk_changes (campaign_id, id);
CREATE INDEX chunk_changes_xid ON chunk_changes (campaign_id, xid);

-- glyphoxa_log_chunk_links logs, once per statement, each chunk whose
-- links the statement inserted, updated or deleted.
CREATE FUNCTION glyphoxa_log_chunk_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_current_xact_id(); -- before the changes' ids, as in glyphoxa_log_fact
    IF TG_OP = 'INSERT' THEN
        INSERT INTO chunk_changes (campaign_id, chunk_id)
        SELECT DISTINCT n.campaign_id, n.chunk_id FROM new_rows n ORDER BY 1, 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO chunk_changes (campaign_id, chunk_id)
        SELECT DISTINCT o.campaign_id, o.chunk_id FROM old_rows o ORDER BY 1, 2;
    ELSE
        INSERT INTO chunk_changes (campaign_id, chunk_id)
        SELECT campaign_id, chunk_id FROM (SELECT n.campaign_id, n.chunk_id FROM new_rows n
                                           UNION SELECT o.campaign_id, o.chunk_id FROM old_rows o) u
        ORDER BY 1, 2;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER chunk_entities_log_insert AFTER INSERT ON chunk_entities
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION glyphoxa_log_chunk_links();
CREATE TRIGGER chunk_entities_log_update AFTER UPDATE ON chunk_entities
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION glyphoxa_log_chunk_links();
CREATE TRIGGER chunk_entities_log_delete AFTER DELETE ON chunk_entities
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION glyphoxa_log_chunk_links();

-- The refresh no longer reads chunks by time.
DROP INDEX chunks_updated;
