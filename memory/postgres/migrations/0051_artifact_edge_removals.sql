-- Whether a player may be told that an artifact edge was deleted.
--
-- A player's graph leaves out an artifact edge (kg_edges) with an end they
-- may not see: an entity first heard in a split scene they were not in
-- (loadKG, view.entityVisible). Once such an edge is deleted its row is
-- gone, and kg_sync, with nothing left to judge it by, named its removal
-- ("edge:campaign:artifact:<id>") to every player: it told them that the
-- DM had written, and then removed, something about a scene they were not
-- in. A deletion now records, as a fact's does (migration 0039), what it
-- took out and whose graph it left: gone = {"from", "rel", "to", "dm",
-- "players"}, where "players" holds when every player could read the edge:
-- each end is an artifact reference (a '/', '.' or ':', as IsArtifactRef
-- says) or an entity that is there and not scene_only, the strictest
-- player's view. kg_sync names the removal to a player only then; an
-- end already deleted counts as one they could not read (a miss, never a
-- leak).
CREATE FUNCTION glyphoxa_log_kg_edge_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    players boolean;
BEGIN
    SELECT bool_and(ref ~ '[/.:]' OR EXISTS (SELECT 1 FROM entities e
                                             WHERE e.campaign_id = OLD.campaign_id AND e.id = ref AND NOT e.scene_only))
      INTO players
      FROM unnest(ARRAY[OLD.from_ref, OLD.to_ref]) AS ends(ref);
    INSERT INTO graph_changes (campaign_id, kind, ref, op, actor, gone)
    VALUES (OLD.campaign_id, 'kg_edge', OLD.id::text, 'delete', coalesce(current_setting('glyphoxa.actor', true), ''),
            jsonb_build_object('from', OLD.from_ref, 'rel', OLD.rel, 'to', OLD.to_ref, 'dm', true, 'players', players));
    RETURN NULL;
END $$;

DROP TRIGGER kg_edges_log ON kg_edges;
CREATE TRIGGER kg_edges_log AFTER INSERT OR UPDATE ON kg_edges
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_change('kg_edge');
CREATE TRIGGER kg_edges_log_delete AFTER DELETE ON kg_edges
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_log_kg_edge_delete();
