-- A fact's change that touched only what players do not read of it (its
-- DM-only attributes: dm_notes, secrets nested in its attributes) is the
-- DM's, as an entity's is (migration 0045): it is logged with dm_only set,
-- and a player's change feeds (sync, kg_sync, their cursor) leave it out,
-- so that the log does not tell players when, or how often, the DM writes
-- notes on a fact they read (entityChangeVisible in changes.go). What a
-- player reads of a fact's attributes is glyphoxa_public_attributes of
-- them without the secret marker (viewer.go's factAttrs), and the marker
-- itself; every other column counts as read. Attributes whose text holds
-- no secret key (secretKeyStarts in viewer.go) are their own public part,
-- so the public parts are compared only when one side holds one.
-- This is glyphoxa_log_fact of migration 0039 with dm_only added.
CREATE OR REPLACE FUNCTION glyphoxa_log_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    row_ relationships;
    was_dm boolean := false;
    was_players boolean := false;
    moved boolean := false;
    dm_only boolean := false;
BEGIN
    -- Before a deletion the transaction may have written nothing yet: its
    -- id is taken here, before the change's id, as a write's is before an
    -- AFTER trigger's. Taken after, a reader could read the log between
    -- the two and list neither (postgres.ChangeCursor).
    PERFORM pg_current_xact_id();
    IF TG_OP = 'DELETE' THEN
        row_ := OLD;
        was_dm := OLD.status = 'active' AND NOT glyphoxa_fact_fresh(OLD);
        was_players := was_dm AND glyphoxa_fact_public(OLD);
    ELSE
        row_ := NEW;
        -- An update takes the fact out of a graph when it moves it (its
        -- ends or type change: the old edge is gone) or hides it: retired,
        -- rejected, made a proposal or made secret. Otherwise, whatever
        -- else changed, nothing is gone, and nothing is looked up.
        IF TG_OP = 'UPDATE' AND OLD.status = 'active' THEN
            moved := (OLD.source_id, OLD.target_id, OLD.rel_type) IS DISTINCT FROM (NEW.source_id, NEW.target_id, NEW.rel_type);
            IF (moved OR NEW.status <> 'active' OR NEW.proposed_by <> ''
                OR (NEW.attributes->'secret' = 'true'::jsonb AND OLD.attributes->'secret' IS DISTINCT FROM 'true'::jsonb))
               AND NOT glyphoxa_fact_fresh(OLD) THEN
                was_dm := moved OR NEW.status <> 'active';
                was_players := glyphoxa_fact_public(OLD);
            END IF;
        END IF;
        IF TG_OP = 'UPDATE' AND OLD.attributes IS DISTINCT FROM NEW.attributes
           AND OLD.attributes->'secret' IS NOT DISTINCT FROM NEW.attributes->'secret'
           AND (OLD.attributes::text ~* '"(secret|gm_|dm_|hidden|known_by|notes_)'
                OR NEW.attributes::text ~* '"(secret|gm_|dm_|hidden|known_by|notes_)')
           AND (to_jsonb(OLD) - 'attributes' - 'updated_at') = (to_jsonb(NEW) - 'attributes' - 'updated_at') THEN
            dm_only := glyphoxa_public_attributes(OLD.attributes - 'secret') IS NOT DISTINCT FROM
                       glyphoxa_public_attributes(NEW.attributes - 'secret');
        END IF;
    END IF;
    INSERT INTO graph_changes (campaign_id, kind, ref, op, actor, gone, dm_only)
    VALUES (row_.campaign_id, 'fact', row_.id::text, lower(TG_OP),
            coalesce(current_setting('glyphoxa.actor', true), ''),
            CASE WHEN was_dm OR was_players THEN glyphoxa_fact_gone(OLD, was_dm, was_players) END, dm_only);
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NULL;
END $$;
