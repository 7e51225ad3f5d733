-- A session's line count (SessionLog.Sessions: the console's sessions page,
-- Discord's session autocomplete, recaps picking the sessions with lines)
-- was a count of the session's lines each time it was asked: 1,000
-- sessions of 1,000 lines cost 88 ms a listing at the 100k bench scale.
-- sessions.entries keeps it, and sessions.struck the lines among them the
-- DM struck from the record (noncanon), which a player's count leaves out
-- as a player's page does. Both are moved by the statements that insert
-- and delete lines (one update per session a statement touches, the
-- sessions locked in key order so that two statements over the same
-- sessions never wait for each other in a cycle) and by a line struck or
-- restored. A line never moves to another session: the trigger below
-- refuses it, so the counts cannot drift.
ALTER TABLE sessions ADD COLUMN entries bigint NOT NULL DEFAULT 0, ADD COLUMN struck bigint NOT NULL DEFAULT 0;

UPDATE sessions s SET entries = c.n, struck = c.struck
FROM (SELECT campaign_id, session_id, count(*) AS n, count(*) FILTER (WHERE noncanon) AS struck
      FROM transcript_entries GROUP BY campaign_id, session_id) c
WHERE s.campaign_id = c.campaign_id AND s.id = c.session_id;

CREATE FUNCTION glyphoxa_count_entries() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM 1 FROM sessions s WHERE (s.campaign_id, s.id) IN (SELECT campaign_id, session_id FROM new_rows)
            ORDER BY s.campaign_id, s.id FOR NO KEY UPDATE;
        UPDATE sessions s SET entries = s.entries + d.n, struck = s.struck + d.struck
        FROM (SELECT campaign_id, session_id, count(*) AS n, count(*) FILTER (WHERE noncanon) AS struck
              FROM new_rows GROUP BY campaign_id, session_id) d
        WHERE s.campaign_id = d.campaign_id AND s.id = d.session_id;
    ELSE
        PERFORM 1 FROM sessions s WHERE (s.campaign_id, s.id) IN (SELECT campaign_id, session_id FROM old_rows)
            ORDER BY s.campaign_id, s.id FOR NO KEY UPDATE;
        UPDATE sessions s SET entries = s.entries - d.n, struck = s.struck - d.struck
        FROM (SELECT campaign_id, session_id, count(*) AS n, count(*) FILTER (WHERE noncanon) AS struck
              FROM old_rows GROUP BY campaign_id, session_id) d
        WHERE s.campaign_id = d.campaign_id AND s.id = d.session_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER transcript_entries_count_insert AFTER INSERT ON transcript_entries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION glyphoxa_count_entries();
CREATE TRIGGER transcript_entries_count_delete AFTER DELETE ON transcript_entries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION glyphoxa_count_entries();

-- A line struck from the record, or restored (a few lines at a time: the
-- DM's strike of a span).
CREATE FUNCTION glyphoxa_count_struck() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE sessions SET struck = struck + CASE WHEN NEW.noncanon THEN 1 ELSE -1 END
    WHERE campaign_id = NEW.campaign_id AND id = NEW.session_id;
    RETURN NULL;
END $$;

CREATE TRIGGER transcript_entries_count_struck AFTER UPDATE OF noncanon ON transcript_entries
    FOR EACH ROW WHEN (OLD.noncanon IS DISTINCT FROM NEW.noncanon) EXECUTE FUNCTION glyphoxa_count_struck();

-- A session has no lines when it is created (a line needs its session
-- first), whatever an insert says (an import's row, say).
CREATE FUNCTION glyphoxa_new_session_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.entries := 0;
    NEW.struck := 0;
    RETURN NEW;
END $$;

CREATE TRIGGER sessions_count_from_zero BEFORE INSERT ON sessions
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_new_session_count();

CREATE FUNCTION glyphoxa_line_stays() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.campaign_id <> OLD.campaign_id OR NEW.session_id <> OLD.session_id THEN
        RAISE EXCEPTION 'transcript line % cannot move from session %/% to %/%', OLD.id,
            OLD.campaign_id, OLD.session_id, NEW.campaign_id, NEW.session_id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER transcript_entries_stay BEFORE UPDATE OF campaign_id, session_id ON transcript_entries
    FOR EACH ROW EXECUTE FUNCTION glyphoxa_line_stays();
