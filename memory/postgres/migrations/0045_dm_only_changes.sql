-- An entity's change that touched only what players do not read (its
-- DM-only attributes: dm_notes, secrets) is the DM's: it is logged with
-- dm_only set, and a player's change feed (sync, kg_sync, their cursor)
-- leaves it out, so that the log does not tell players when, or how often,
-- the DM writes notes on an entity (entityChangeVisible in changes.go).
-- The DM, the server's caches and the retriever read it as any change.
-- What a player reads of an entity is its type, name, aliases, public
-- attributes (public_attributes, migration 0029, or the attributes when
-- they hold no secret), retirement and whether it is scene_only.
ALTER TABLE graph_changes ADD COLUMN dm_only boolean NOT NULL DEFAULT false;

CREATE FUNCTION glyphoxa_log_dm_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO graph_changes (campaign_id, kind, ref, op, actor, dm_only)
    VALUES (NEW.campaign_id, TG_ARGV[0], NEW.id::text, lower(TG_OP),
            coalesce(current_setting('glyphoxa.actor', true), ''), true);
    RETURN NULL;
END $$;

DROP TRIGGER entities_log_update ON entities;
CREATE TRIGGER entities_log_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN ((OLD.type, OLD.name, OLD.aliases, coalesce(OLD.public_attributes, OLD.attributes), OLD.retired_at, OLD.scene_only)
        IS DISTINCT FROM (NEW.type, NEW.name, NEW.aliases, coalesce(NEW.public_attributes, NEW.attributes), NEW.retired_at, NEW.scene_only))
    EXECUTE FUNCTION glyphoxa_log_change('entity');
CREATE TRIGGER entities_log_dm_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN ((OLD.type, OLD.name, OLD.aliases, coalesce(OLD.public_attributes, OLD.attributes), OLD.retired_at, OLD.scene_only)
        IS NOT DISTINCT FROM (NEW.type, NEW.name, NEW.aliases, coalesce(NEW.public_attributes, NEW.attributes), NEW.retired_at, NEW.scene_only)
        AND OLD.attributes IS DISTINCT FROM NEW.attributes)
    EXECUTE FUNCTION glyphoxa_log_dm_change('entity');
