-- A fact's evidence decides who may read it: a fact resting only on lines
-- of a split scene reaches that scene's players only; one resting on no
-- line reaches every player. Writing or deleting evidence moved no change
-- log, so the console's snapshots and kg_sync sessions kept a fact that
-- its new evidence hid from a player (extraction wrote the fact, then its
-- lines, in two statements). Each statement that adds or deletes evidence
-- now logs a change of every fact it touched.
--
-- Adding evidence takes a fact out of the players' graph in one case only:
-- it rested on no line (every player read it) and now rests on lines of
-- split scenes alone. glyphoxa_fact_public is split into the fact's own
-- columns (glyphoxa_fact_open) and its evidence (glyphoxa_fact_told) so
-- that the trigger asks exactly that; together they are the function
-- TestFactPublicIsThePlayersView holds to the store's rule, unchanged.
CREATE FUNCTION glyphoxa_fact_open(r relationships) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT r.status = 'active' AND r.proposed_by = ''
       AND r.attributes->'secret' IS DISTINCT FROM 'true'::jsonb
       AND EXISTS (SELECT 1 FROM entities s WHERE s.campaign_id = r.campaign_id AND s.id = r.source_id AND NOT s.scene_only)
       AND EXISTS (SELECT 1 FROM entities s WHERE s.campaign_id = r.campaign_id AND s.id = r.target_id AND NOT s.scene_only)
$$;

-- glyphoxa_fact_told is true when the fact of id $1 was told where the
-- party was together: a line of its evidence said while not split, or no
-- line of a split scene at all. ($1, not a name: a column of the tables
-- read would take the name's place.)
CREATE FUNCTION glyphoxa_fact_told(bigint) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
                   WHERE fe.fact_id = $1 AND NOT coalesce((
                       SELECT p.split FROM session_presence p
                       WHERE p.campaign_id = t.campaign_id AND p.session_id = t.session_id AND p.at <= t.at
                       ORDER BY p.at DESC LIMIT 1), false))
        OR NOT EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
                   WHERE fe.fact_id = $1 AND coalesce((
                       SELECT p.split FROM session_presence p
                       WHERE p.campaign_id = t.campaign_id AND p.session_id = t.session_id AND p.at <= t.at
                       ORDER BY p.at DESC LIMIT 1), false))
$$;

CREATE OR REPLACE FUNCTION glyphoxa_fact_public(r relationships) RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT glyphoxa_fact_open(r) AND glyphoxa_fact_told(r.id)
$$;

-- glyphoxa_log_evidence logs a change of each fact whose evidence the
-- statement added or deleted (facts deleted with it are logged by
-- glyphoxa_log_fact). An insert that leaves a fact which rested on no line
-- resting on split scenes' lines alone records it gone from the players'
-- graph, unless the transaction wrote the fact itself (glyphoxa_fact_fresh:
-- no reader has seen it). A deletion records nothing gone: it can only
-- take a fact out of the players' graph by deleting the lines it was told
-- on at the table, which ForgetSpeaker records.
CREATE FUNCTION glyphoxa_log_evidence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_current_xact_id(); -- before the changes' ids, as in glyphoxa_log_fact
    IF TG_OP = 'INSERT' THEN
        INSERT INTO graph_changes (campaign_id, kind, ref, op, actor, gone)
        SELECT r.campaign_id, 'fact', r.id::text, 'update', coalesce(current_setting('glyphoxa.actor', true), ''),
               CASE WHEN glyphoxa_fact_open(r) AND NOT glyphoxa_fact_told(r.id) AND NOT glyphoxa_fact_fresh(r)
                         AND NOT EXISTS (SELECT 1 FROM fact_evidence fe WHERE fe.fact_id = r.id
                                         AND NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.fact_id = fe.fact_id AND n.entry_id = fe.entry_id))
                    THEN glyphoxa_fact_gone(r, false, true) END
        FROM relationships r
        WHERE r.id IN (SELECT DISTINCT n.fact_id FROM new_rows n)
        ORDER BY r.id;
    ELSE
        INSERT INTO graph_changes (campaign_id, kind, ref, op, actor)
        SELECT r.campaign_id, 'fact', r.id::text, 'update', coalesce(current_setting('glyphoxa.actor', true), '')
        FROM relationships r
        WHERE r.id IN (SELECT DISTINCT o.fact_id FROM old_rows o)
        ORDER BY r.id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER fact_evidence_log_insert AFTER INSERT ON fact_evidence
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION glyphoxa_log_evidence();
CREATE TRIGGER fact_evidence_log_delete AFTER DELETE ON fact_evidence
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION glyphoxa_log_evidence();
