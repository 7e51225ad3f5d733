-- A fact's public_updated_at is when it last changed in what players read
-- of it, as an entity's is (migration 0046): every column but its
-- attributes counts as read, and of the attributes what
-- glyphoxa_player_fact_attributes below keeps (the public part without
-- the secret marker, and the marker: what viewer.go's factAttrs gives a
-- player). It stays put when only the fact's DM-only attributes change
-- (dm_notes, secrets nested in its attributes: the changes migration 0048
-- logs dm_only), so neither the stamp a player reads nor the order of a
-- player's fact lists (newest first) tells when, or that, the DM wrote a
-- note on a fact they read. updated_at keeps moving on every change: the
-- DM, the server's caches and conflict handling read it (viewer.go's
-- updatedCol).
--
-- entry is a generated column of the attributes (migration 0025), not yet
-- computed for NEW in a BEFORE trigger: the attributes' comparison covers
-- it. Attributes whose text holds no secret key (secretKeyStarts in
-- viewer.go) are their own public part; a migration that changes
-- glyphoxa_public or secretKeyStarts must change the function too.
-- Rows written before this migration start with their updated_at; a row
-- inserted starts with it too, unless the insert gives its own (an
-- imported bundle carries the stamps it was exported with: importing it
-- again did set them to updated_at, which told players of the DM's last
-- note). An update that sets the stamp itself keeps it (no server write
-- does; a test that backdates a row does), as entities' stamp (migration
-- 0046).

ALTER TABLE relationships ADD COLUMN public_updated_at timestamptz;
UPDATE relationships SET public_updated_at = updated_at;
ALTER TABLE relationships ALTER COLUMN public_updated_at SET NOT NULL;

CREATE FUNCTION glyphoxa_player_fact_attributes(a jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN jsonb_typeof(a) = 'object' AND a::text ~* '"(secret|gm_|dm_|hidden|known_by|notes_)'
                THEN glyphoxa_public_attributes(a - 'secret')
                     || CASE WHEN a ? 'secret' THEN jsonb_build_object('secret', a->'secret') ELSE '{}'::jsonb END
                ELSE a END
$$;

CREATE FUNCTION glyphoxa_fact_public_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.public_updated_at := coalesce(NEW.public_updated_at, NEW.updated_at);
    ELSIF NEW.public_updated_at IS DISTINCT FROM OLD.public_updated_at THEN
        NULL; -- set by the writer itself
    ELSIF (to_jsonb(OLD) - 'attributes' - 'entry' - 'updated_at' - 'public_updated_at')
          IS DISTINCT FROM (to_jsonb(NEW) - 'attributes' - 'entry' - 'updated_at' - 'public_updated_at')
       OR (OLD.attributes IS DISTINCT FROM NEW.attributes
           AND glyphoxa_player_fact_attributes(OLD.attributes) IS DISTINCT FROM glyphoxa_player_fact_attributes(NEW.attributes)) THEN
        NEW.public_updated_at := NEW.updated_at;
    ELSE
        NEW.public_updated_at := OLD.public_updated_at;
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER relationships_public_stamp BEFORE INSERT OR UPDATE ON relationships
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_fact_public_stamp();

-- A player's and an NPC's fact lists read newest first by the public
-- stamp, as the DM's by updated_at (relationships_newest and
-- relationships_type, migration 0036).
CREATE INDEX relationships_public_newest ON relationships (campaign_id, public_updated_at DESC, id DESC);
CREATE INDEX relationships_public_type ON relationships (campaign_id, rel_type, public_updated_at DESC, id DESC);
