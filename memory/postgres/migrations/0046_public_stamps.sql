-- An entity's public_updated_at is when it last changed in what players
-- read of it: its type, name, aliases, public attributes (public_attributes,
-- migration 0029, or the attributes when they hold no secret), retirement,
-- scene_only and compaction's archiving. It stays put when only its DM-only
-- attributes change (dm_notes, secrets: the changes migration 0045 logs
-- dm_only), so the stamp a player reads does not tell when, or that, the
-- DM wrote a note on the entity. updated_at keeps moving on every change:
-- the DM, the server's caches and compaction read it (viewer.go's
-- updatedCol).
--
-- public_attributes is a generated column, not yet computed for NEW in a
-- BEFORE trigger, so the trigger compares the public attributes by the
-- same definition (glyphoxa_player_attributes below); a migration that
-- changes glyphoxa_public or secretKeyStarts must change it too.
-- Rows written before this migration start with their updated_at; a new
-- row with its updated_at, unless it brings its own (a restored backup).
ALTER TABLE entities ADD COLUMN public_updated_at timestamptz;
UPDATE entities SET public_updated_at = updated_at;
ALTER TABLE entities ALTER COLUMN public_updated_at SET NOT NULL;

CREATE FUNCTION glyphoxa_player_attributes(a jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN a::text ~* '"(secret|gm_|dm_|hidden|known_by|notes_)' THEN glyphoxa_public_attributes(a) ELSE a END
$$;

CREATE FUNCTION glyphoxa_entity_public_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A restored backup (memory/bundle) gives the stamp it had.
        NEW.public_updated_at := coalesce(NEW.public_updated_at, NEW.updated_at);
    ELSIF NEW.public_updated_at IS DISTINCT FROM OLD.public_updated_at THEN
        NULL; -- set by the writer itself (no server write does; a test that backdates a row does)
    ELSIF (OLD.type, OLD.name, OLD.aliases, OLD.retired_at, OLD.scene_only, OLD.kg_archived_at)
          IS DISTINCT FROM (NEW.type, NEW.name, NEW.aliases, NEW.retired_at, NEW.scene_only, NEW.kg_archived_at)
       OR (OLD.attributes IS DISTINCT FROM NEW.attributes
           AND glyphoxa_player_attributes(OLD.attributes) IS DISTINCT FROM glyphoxa_player_attributes(NEW.attributes)) THEN
        NEW.public_updated_at := NEW.updated_at;
    ELSE
        NEW.public_updated_at := OLD.public_updated_at;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER entities_public_stamp BEFORE INSERT OR UPDATE ON entities
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_entity_public_stamp();
