-- The memory-tool API (kg_*) as designed (shared/specs/kg-memory-api.md):
-- notes are a list of strings, and an edge's end may be an artifact
-- reference (a path, path:line) rather than a node.
--
-- The DM's level: notes become text[]; dm_edges no longer need both ends
-- to be dm_nodes (deleting a node deletes its edges in code instead), and
-- belong to the campaign directly.
ALTER TABLE dm_nodes ALTER COLUMN notes DROP DEFAULT;
ALTER TABLE dm_nodes ALTER COLUMN notes TYPE text[]
    USING CASE WHEN notes = '' THEN '{}'::text[] ELSE ARRAY[notes] END;
ALTER TABLE dm_nodes ALTER COLUMN notes SET DEFAULT '{}';
ALTER TABLE dm_edges ALTER COLUMN notes DROP DEFAULT;
ALTER TABLE dm_edges ALTER COLUMN notes TYPE text[]
    USING CASE WHEN notes = '' THEN '{}'::text[] ELSE ARRAY[notes] END;
ALTER TABLE dm_edges ALTER COLUMN notes SET DEFAULT '{}';
ALTER TABLE dm_edges DROP CONSTRAINT dm_edges_campaign_id_from_id_fkey;
ALTER TABLE dm_edges DROP CONSTRAINT dm_edges_campaign_id_to_id_fkey;
ALTER TABLE dm_edges ADD FOREIGN KEY (campaign_id) REFERENCES campaigns (id) ON DELETE CASCADE;
CREATE INDEX dm_edges_from ON dm_edges (campaign_id, from_id);

-- The campaign level: an edge between two entities is a fact
-- (relationships); an edge with an artifact end is kept here. Shared with
-- the table like facts, written by the DM (players propose).
CREATE TABLE kg_edges (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    from_ref    text NOT NULL CHECK (from_ref <> ''),
    to_ref      text NOT NULL CHECK (to_ref <> ''),
    rel         text NOT NULL CHECK (rel <> ''),
    notes       text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (campaign_id, from_ref, to_ref, rel)
);
CREATE INDEX kg_edges_to ON kg_edges (campaign_id, to_ref);
CREATE TRIGGER kg_edges_log AFTER INSERT OR UPDATE OR DELETE ON kg_edges
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('kg_edge');

-- A player's kg_put_edge or kg_delete_edge with an artifact end is a proposal
-- of its own kind.
ALTER TABLE proposals DROP CONSTRAINT proposals_kind_check;
ALTER TABLE proposals ADD CONSTRAINT proposals_kind_check
    CHECK (kind IN ('put_node', 'delete_node', 'delete_edge', 'kg_put_node', 'kg_put_edge', 'kg_delete_edge'));
