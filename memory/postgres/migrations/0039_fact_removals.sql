-- What a fact's change took out of an agent's graph, and the transactions a
-- kg_sync session must still read.
--
-- kg_sync reports a fact that left the active graph by its ends
-- ("edge:campaign:<from>:<rel>:<to>"), read from the row after the change.
-- Two removals had no row to read them from, or none a player may read:
--   - a fact deleted (a player forgotten, an entity deleted) was never
--     reported to anyone;
--   - a fact a player could read that the DM made secret (or rejected, or
--     whose ends changed) was never reported to a player: the row is now
--     one they may not see, and naming a secret's ends would tell it.
-- So the change records, when it is written, the fact as it was:
-- gone = {"from", "rel", "to", "dm", "players"}, where "dm" says the fact was
-- in the DM's graph (active) and "players" that it was in every player's
-- (glyphoxa_fact_public below). A player is told of the removal only when
-- "players" holds: then they could read the fact, whoever they are.
ALTER TABLE graph_changes ADD COLUMN gone jsonb;

-- glyphoxa_fact_public is true when every player may read fact r (the
-- store's view.factVisible for the unbound player): active, not secret,
-- no agent's proposal, both ends present and not first heard in a split
-- scene, and revealed where the party was together (a line said while
-- not split, or no line of a split scene at all). It is the strictest
-- player's view, so a removal it allows tells no player anything they could
-- not read. It restates the store's rule in SQL (a trigger cannot call the
-- Go that writes it); TestFactPublicIsThePlayersView holds the two together.
CREATE FUNCTION glyphoxa_fact_public(r relationships) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT r.status = 'active' AND r.proposed_by = ''
       AND r.attributes->'secret' IS DISTINCT FROM 'true'::jsonb
       AND EXISTS (SELECT 1 FROM entities s WHERE s.campaign_id = r.campaign_id AND s.id = r.source_id AND NOT s.scene_only)
       AND EXISTS (SELECT 1 FROM entities s WHERE s.campaign_id = r.campaign_id AND s.id = r.target_id AND NOT s.scene_only)
       AND (EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
                    WHERE fe.fact_id = r.id AND NOT coalesce((
                        SELECT p.split FROM session_presence p
                        WHERE p.campaign_id = t.campaign_id AND p.session_id = t.session_id AND p.at <= t.at
                        ORDER BY p.at DESC LIMIT 1), false))
            OR NOT EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
                    WHERE fe.fact_id = r.id AND coalesce((
                        SELECT p.split FROM session_presence p
                        WHERE p.campaign_id = t.campaign_id AND p.session_id = t.session_id AND p.at <= t.at
                        ORDER BY p.at DESC LIMIT 1), false)))
$$;

-- glyphoxa_fact_fresh is true when fact r, as the trigger sees it, was
-- written by the transaction now running: it changed before in this
-- transaction (its change has this transaction's id). No reader has seen
-- that row, so nothing left anyone's graph with it: extraction writes a
-- contradicting fact active and holds it pending in the same transaction,
-- an import may write a fact twice, the second time secret. Judged as it
-- was, such a row named a pending or secret fact to every player. A fact
-- changed twice in one transaction, the second time hidden, is thus not
-- named removed to players (their next kg_read drops it): a miss, never a
-- leak.
CREATE FUNCTION glyphoxa_fact_fresh(r relationships) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM graph_changes g
                   WHERE g.campaign_id = r.campaign_id AND g.kind = 'fact' AND g.ref = r.id::text
                     AND g.xid = pg_current_xact_id())
$$;
CREATE INDEX graph_changes_fact_xid ON graph_changes (campaign_id, ref, xid) WHERE kind = 'fact';

-- glyphoxa_fact_gone is the gone record of fact r as it is: its ends and
-- type, and whose graph it leaves (every writer of gone builds it here).
CREATE FUNCTION glyphoxa_fact_gone(r relationships, dm boolean, players boolean) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('from', r.source_id, 'rel', r.rel_type, 'to', r.target_id, 'dm', dm, 'players', players)
$$;

-- glyphoxa_log_fact logs a change of a fact, as glyphoxa_log_change does,
-- with what it took out of the graph. A deletion is logged before the row
-- goes (BEFORE DELETE): after it, its evidence is gone with it (ON DELETE
-- CASCADE). A fact deleted with one of its entities (the foreign key's
-- cascade) is deleted once the entity is gone, when glyphoxa_fact_public
-- finds an end missing: glyphoxa_log_entity_facts below logs those facts
-- first, while both ends are there. Whether a fact was public costs its
-- evidence lookups only when the cheap columns say it may have been.
CREATE FUNCTION glyphoxa_log_fact() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    row_ relationships;
    was_dm boolean := false;
    was_players boolean := false;
    moved boolean := false;
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
    END IF;
    INSERT INTO graph_changes (campaign_id, kind, ref, op, actor, gone)
    VALUES (row_.campaign_id, 'fact', row_.id::text, lower(TG_OP),
            coalesce(current_setting('glyphoxa.actor', true), ''),
            CASE WHEN was_dm OR was_players THEN glyphoxa_fact_gone(OLD, was_dm, was_players) END);
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NULL;
END $$;

-- glyphoxa_log_entity_facts logs, before an entity is deleted, what its
-- active facts take out of the graphs as the cascade deletes them: judged
-- while the entity is still there (scene_only or not), so a player is told
-- the edges of a public entity they read, never those of one first heard
-- in a split scene. The cascade then logs each fact's deletion again, with
-- an end missing (players false); kg_sync names each edge once.
CREATE FUNCTION glyphoxa_log_entity_facts() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_current_xact_id(); -- before the changes' ids, as in glyphoxa_log_fact
    INSERT INTO graph_changes (campaign_id, kind, ref, op, actor, gone)
    SELECT r.campaign_id, 'fact', r.id::text, 'delete', coalesce(current_setting('glyphoxa.actor', true), ''),
           glyphoxa_fact_gone(r, true, glyphoxa_fact_public(r))
    FROM relationships r
    WHERE r.campaign_id = OLD.campaign_id AND OLD.id IN (r.source_id, r.target_id) AND r.status = 'active'
      AND NOT glyphoxa_fact_fresh(r);
    RETURN OLD;
END $$;
CREATE TRIGGER entities_log_facts BEFORE DELETE ON entities
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_entity_facts();

DROP TRIGGER relationships_log ON relationships;
CREATE TRIGGER relationships_log AFTER INSERT OR UPDATE ON relationships
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_fact();
CREATE TRIGGER relationships_log_delete BEFORE DELETE ON relationships
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_fact();

-- A kg_sync session's cursor, like the server's caches' (migration 0038),
-- also keeps the transactions in progress when it was read: a change they
-- commit later has an id below the cursor, and is still one the session
-- has not seen.
ALTER TABLE kg_sessions ADD COLUMN running xid8[] NOT NULL DEFAULT '{}';
