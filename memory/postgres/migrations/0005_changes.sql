-- A change log of the knowledge graph, written by triggers, so agents can
-- sync what changed since a cursor. The writer names itself with
-- set_config('glyphoxa.actor', …, true) inside its transaction; writes
-- without a name are the bot's own.
CREATE TABLE graph_changes (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    kind        text NOT NULL,   -- entity, fact, proposal
    ref         text NOT NULL,   -- entity id, fact id, proposal id
    op          text NOT NULL,   -- insert, update, delete
    actor       text NOT NULL DEFAULT ''
);
CREATE INDEX graph_changes_campaign ON graph_changes (campaign_id, id);

CREATE FUNCTION glyphoxa_log_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    row_ record;
BEGIN
    IF TG_OP = 'DELETE' THEN row_ := OLD; ELSE row_ := NEW; END IF;
    INSERT INTO graph_changes (campaign_id, kind, ref, op, actor)
    VALUES (row_.campaign_id, TG_ARGV[0], row_.id::text, lower(TG_OP),
            coalesce(current_setting('glyphoxa.actor', true), ''));
    RETURN NULL;
END $$;

CREATE TRIGGER entities_log AFTER INSERT OR UPDATE OR DELETE ON entities
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('entity');
CREATE TRIGGER relationships_log AFTER INSERT OR UPDATE OR DELETE ON relationships
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('fact');

-- Changes proposed by agents without DM rights, waiting for the DM: new or
-- changed entities, and deletions. (Proposed facts are pending facts.)
CREATE TABLE proposals (
    id          bigserial PRIMARY KEY,
    campaign_id text NOT NULL REFERENCES campaigns (id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('put_node', 'delete_node', 'delete_edge')),
    payload     jsonb NOT NULL,
    actor       text NOT NULL,
    status      text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'rejected')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at timestamptz
);
CREATE INDEX proposals_pending ON proposals (campaign_id, id) WHERE status = 'pending';
CREATE TRIGGER proposals_log AFTER INSERT OR UPDATE ON proposals
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('proposal');
