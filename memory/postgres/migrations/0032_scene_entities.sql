-- Entities first heard in a split scene. Post-session extraction creates
-- an entity from a window of lines; when none of the window's lines said
-- with the party together names it and the window holds lines of a split
-- scene (session_presence.split, migration 0031), the entity is
-- scene_only: a player sees it (its name, aliases, id, type) only through
-- a trace they may read (memory/postgres viewer.go's entityVisible): a
-- line it was heard in (entity_evidence) that they heard, a fact they may
-- read that has it as an end, a chunk they may read that mentions it, a
-- fact the DM granted them. The DM publishes it (Graph.PublishEntity);
-- editing it does not.
--
-- Rows written before this migration are false: they read as they did
-- before (the store had no provenance for entities), as do entities of
-- bundles written by an older glyphoxa.
ALTER TABLE entities ADD COLUMN scene_only boolean NOT NULL DEFAULT false;
CREATE INDEX entities_scene_only ON entities (campaign_id, id) WHERE scene_only;

-- The lines a scene_only entity was heard in: those of its window naming
-- it (or, when none names it, every split line of the window), and the
-- lines of later windows naming it. Like fact_evidence, a deleted line
-- takes its rows with it; an entity left without evidence stays
-- scene_only (hidden from players without another trace) until the DM
-- publishes it.
CREATE TABLE entity_evidence (
    campaign_id text NOT NULL,
    entity_id   text NOT NULL,
    entry_id    bigint NOT NULL REFERENCES transcript_entries (id) ON DELETE CASCADE,
    PRIMARY KEY (campaign_id, entity_id, entry_id),
    FOREIGN KEY (campaign_id, entity_id) REFERENCES entities (campaign_id, id) ON DELETE CASCADE
);
CREATE INDEX entity_evidence_entry ON entity_evidence (entry_id);

-- The change log names an entity by id. A player reads an entity's
-- changes only while they may see it; once it is deleted (or merged away)
-- the store can no longer tell, so its changes are marked scene_only when
-- a scene_only entity is deleted, and stay hidden from players.
ALTER TABLE graph_changes ADD COLUMN scene_only boolean NOT NULL DEFAULT false;
CREATE FUNCTION glyphoxa_scene_entity_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE graph_changes SET scene_only = true
    WHERE campaign_id = OLD.campaign_id AND kind = 'entity' AND ref = OLD.id;
    RETURN NULL;
END $$;
-- AFTER triggers fire in name order: entities_log (which logs the
-- deletion) before entities_scene_gone.
CREATE TRIGGER entities_scene_gone AFTER DELETE ON entities
    FOR EACH ROW WHEN (OLD.scene_only) EXECUTE FUNCTION glyphoxa_scene_entity_gone();

-- Publishing an entity (scene_only from true to false) is a change of the
-- graph: players' kg_sync and the console learn of the node.
DROP TRIGGER entities_log_update ON entities;
CREATE TRIGGER entities_log_update AFTER UPDATE ON entities
    FOR EACH ROW WHEN ((OLD.type, OLD.name, OLD.aliases, OLD.attributes, OLD.retired_at, OLD.scene_only)
        IS DISTINCT FROM (NEW.type, NEW.name, NEW.aliases, NEW.attributes, NEW.retired_at, NEW.scene_only))
    EXECUTE FUNCTION glyphoxa_log_change('entity');

-- A player's traces of scene_only entities look up the facts that end at
-- one (view.tracedSceneSQL), of any status: relationships_in holds the
-- active facts only, and relationships_triple leads with the source.
CREATE INDEX relationships_target ON relationships (campaign_id, target_id);

-- The ids a query (text) returns as text[], planned and run with JIT off.
-- A player's entity reads ask, once per statement, which scene_only
-- entities they may read a trace of (view.tracedSceneSQL): a few index
-- lookups per scene_only entity, which the planner prices high enough to
-- compile with JIT, and the compilation (0.5 to 1 s) cost far more than the
-- query (BenchmarkSceneEntities). Only the store's own SQL is passed in.
CREATE FUNCTION glyphoxa_ids_nojit(q text) RETURNS text[] LANGUAGE plpgsql STABLE SET jit = off AS $$
DECLARE
    ids text[];
BEGIN
    EXECUTE q INTO ids;
    RETURN coalesce(ids, '{}');
END $$;
