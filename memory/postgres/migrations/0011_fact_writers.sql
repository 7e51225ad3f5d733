-- Every fact write goes through the fact timeline with its writer named.
--
-- Players and NPCs only propose: a proposal is a pending fact of its own,
-- keyed by its writer, so it never merges into (or reveals) the canon fact
-- of the same triple. Canon rows (DM, extraction, import) have an empty
-- proposed_by.
ALTER TABLE relationships ADD COLUMN proposed_by text NOT NULL DEFAULT '';
DROP INDEX relationships_live;
CREATE UNIQUE INDEX relationships_live ON relationships (campaign_id, source_id, target_id, rel_type, proposed_by)
    WHERE status IN ('active', 'pending');

-- Why a fact superseded another (the DM's reason), and who wrote it.
ALTER TABLE fact_links ADD COLUMN reason text NOT NULL DEFAULT '';
ALTER TABLE fact_conflicts ADD COLUMN reason text NOT NULL DEFAULT '';
ALTER TABLE fact_conflicts ADD COLUMN writer text NOT NULL DEFAULT '';

-- Extraction is re-runnable: the extractor's answer for each window of a
-- session is kept with a hash of the lines it read, so a re-run (after a
-- crash, or on demand) stores the same entities and facts instead of asking
-- again and getting different words.
CREATE TABLE extraction_windows (
    campaign_id text NOT NULL,
    session_id  text NOT NULL,
    window_no   integer NOT NULL CHECK (window_no >= 0),
    lines_hash  text NOT NULL,
    extraction  jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, session_id, window_no),
    FOREIGN KEY (campaign_id, session_id) REFERENCES sessions (campaign_id, id) ON DELETE CASCADE
);

-- The memory-tool API (kg_*): agent sessions, the DM's private level, and
-- compaction.
ALTER TABLE campaigns ADD COLUMN kg_token_limit integer NOT NULL DEFAULT 5000 CHECK (kg_token_limit > 0);

-- A node compaction archived: hidden from kg_read and kg_sync, recallable.
ALTER TABLE entities ADD COLUMN kg_archived_at timestamptz;

-- An agent's registered session: kg_sync reports what others changed since
-- it started.
CREATE TABLE kg_sessions (
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    id          text NOT NULL,
    actor       text NOT NULL,
    level       text NOT NULL CHECK (level IN ('campaign', 'dm')),
    cursor_at   bigint NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    seen_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, id)
);

-- The DM's private notes (level dm): never read by players, NPCs or
-- retrieval, which only know the entities and relationships tables.
CREATE TABLE dm_nodes (
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    id          text NOT NULL CHECK (id <> ''),
    gist        text NOT NULL DEFAULT '',
    touches     text[] NOT NULL DEFAULT '{}',
    notes       text NOT NULL DEFAULT '',
    archived_at timestamptz,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (campaign_id, id)
);
CREATE TABLE dm_edges (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL,
    from_id     text NOT NULL,
    to_id       text NOT NULL,
    rel         text NOT NULL CHECK (rel <> ''),
    notes       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (campaign_id, from_id, to_id, rel),
    FOREIGN KEY (campaign_id, from_id) REFERENCES dm_nodes (campaign_id, id) ON DELETE CASCADE,
    FOREIGN KEY (campaign_id, to_id) REFERENCES dm_nodes (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX dm_edges_to ON dm_edges (campaign_id, to_id);
CREATE TRIGGER dm_nodes_log AFTER INSERT OR UPDATE OR DELETE ON dm_nodes
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('dm_node');
CREATE TRIGGER dm_edges_log AFTER INSERT OR UPDATE OR DELETE ON dm_edges
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('dm_edge');

-- Compaction archiving (or recalling) an entity is not a change of the
-- graph: it is not logged, so kg_sync does not report it and a pass over
-- thousands of nodes writes no change rows.
DROP TRIGGER entities_log ON entities;
CREATE TRIGGER entities_log AFTER INSERT OR DELETE ON entities
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('entity');
CREATE TRIGGER entities_log_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN ((OLD.type, OLD.name, OLD.aliases, OLD.attributes) IS DISTINCT FROM (NEW.type, NEW.name, NEW.aliases, NEW.attributes))
    EXECUTE FUNCTION glyphoxa_log_change('entity');

-- A player's kg_put_node is a proposal of its own kind.
ALTER TABLE proposals DROP CONSTRAINT proposals_kind_check;
ALTER TABLE proposals ADD CONSTRAINT proposals_kind_check
    CHECK (kind IN ('put_node', 'delete_node', 'delete_edge', 'kg_put_node'));
