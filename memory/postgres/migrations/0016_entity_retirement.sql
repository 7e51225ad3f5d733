-- The DM retires an entity (the NPC died, the tower fell): it leaves the
-- name lists and its facts leave the canon, but it stays in the graph for
-- "as of" and the history. When and in which session it was retired, and
-- why, are recorded.
ALTER TABLE entities ADD COLUMN retired_at timestamptz;
ALTER TABLE entities ADD COLUMN retired_session text NOT NULL DEFAULT '';
ALTER TABLE entities ADD COLUMN retired_reason text NOT NULL DEFAULT '';

-- Retiring (or restoring) an entity is a change of the graph: the change
-- log records it, so kg_sync and the console see it.
DROP TRIGGER entities_log_update ON entities;
CREATE TRIGGER entities_log_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN ((OLD.type, OLD.name, OLD.aliases, OLD.attributes, OLD.retired_at)
        IS DISTINCT FROM (NEW.type, NEW.name, NEW.aliases, NEW.attributes, NEW.retired_at))
    EXECUTE FUNCTION glyphoxa_log_change('entity');
