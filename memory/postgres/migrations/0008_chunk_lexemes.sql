-- Full-text statistics of the semantic index: how many chunks each
-- campaign holds, and in how many of them each lexeme occurs (its document
-- frequency). Chunk full-text search weighs a question's words by their
-- rarity; reading these counts costs a lookup per word instead of a count
-- over the campaign's chunks. Triggers on chunks keep them current for
-- every insert, update and delete (cascades and COPY included).
CREATE TABLE chunk_counts (
    campaign_id text PRIMARY KEY,
    chunks      bigint NOT NULL
);

CREATE TABLE chunk_lexemes (
    campaign_id text NOT NULL,
    lexeme      text NOT NULL,
    df          integer NOT NULL,
    PRIMARY KEY (campaign_id, lexeme)
);

INSERT INTO chunk_counts (campaign_id, chunks)
SELECT campaign_id, count(*) FROM chunks GROUP BY campaign_id;

INSERT INTO chunk_lexemes (campaign_id, lexeme, df)
SELECT c.campaign_id, l.lexeme, count(*) FROM chunks c, unnest(c.tsv) l
WHERE c.tsv IS NOT NULL GROUP BY c.campaign_id, l.lexeme;

-- chunk_stats_track applies one statement's changes to chunks; counts
-- that drop to zero are removed. A transaction writing a campaign's chunks
-- first takes that campaign's statistics lock (until it ends), so that
-- concurrent writers, which may touch the same lexemes in any order over
-- several statements, wait for each other instead of deadlocking.
CREATE FUNCTION chunk_stats_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM pg_advisory_xact_lock(hashtext('glyphoxa.chunk_stats'), hashtext(x.campaign_id))
        FROM (SELECT DISTINCT n.campaign_id FROM new_rows n ORDER BY 1) x;
        INSERT INTO chunk_counts AS t (campaign_id, chunks)
        SELECT n.campaign_id, count(*) FROM new_rows n GROUP BY n.campaign_id ORDER BY n.campaign_id
        ON CONFLICT (campaign_id) DO UPDATE SET chunks = t.chunks + excluded.chunks;
        INSERT INTO chunk_lexemes AS t (campaign_id, lexeme, df)
        SELECT n.campaign_id, l.lexeme, count(*) FROM new_rows n, unnest(n.tsv) l
        GROUP BY n.campaign_id, l.lexeme ORDER BY n.campaign_id, l.lexeme
        ON CONFLICT (campaign_id, lexeme) DO UPDATE SET df = t.df + excluded.df;
        RETURN NULL;
    END IF;

    IF TG_OP = 'DELETE' THEN
        PERFORM pg_advisory_xact_lock(hashtext('glyphoxa.chunk_stats'), hashtext(x.campaign_id))
        FROM (SELECT DISTINCT o.campaign_id FROM old_rows o ORDER BY 1) x;
        INSERT INTO chunk_counts AS t (campaign_id, chunks)
        SELECT o.campaign_id, -count(*) FROM old_rows o GROUP BY o.campaign_id ORDER BY o.campaign_id
        ON CONFLICT (campaign_id) DO UPDATE SET chunks = t.chunks + excluded.chunks;
        INSERT INTO chunk_lexemes AS t (campaign_id, lexeme, df)
        SELECT o.campaign_id, l.lexeme, -count(*) FROM old_rows o, unnest(o.tsv) l
        GROUP BY o.campaign_id, l.lexeme ORDER BY o.campaign_id, l.lexeme
        ON CONFLICT (campaign_id, lexeme) DO UPDATE SET df = t.df + excluded.df;
    ELSE
        -- An update changes the counts only where it changed a chunk's
        -- words (or moved it to another campaign).
        PERFORM pg_advisory_xact_lock(hashtext('glyphoxa.chunk_stats'), hashtext(x.campaign_id))
        FROM (SELECT n.campaign_id FROM new_rows n UNION SELECT o.campaign_id FROM old_rows o ORDER BY 1) x;
        INSERT INTO chunk_counts AS t (campaign_id, chunks)
        SELECT x.campaign_id, sum(x.n) FROM (
            SELECT n.campaign_id, 1 AS n FROM new_rows n
            UNION ALL
            SELECT o.campaign_id, -1 FROM old_rows o) x
        GROUP BY x.campaign_id HAVING sum(x.n) <> 0 ORDER BY x.campaign_id
        ON CONFLICT (campaign_id) DO UPDATE SET chunks = t.chunks + excluded.chunks;
        INSERT INTO chunk_lexemes AS t (campaign_id, lexeme, df)
        SELECT x.campaign_id, x.lexeme, sum(x.n) FROM (
            SELECT n.campaign_id, l.lexeme, 1 AS n FROM new_rows n, unnest(n.tsv) l
            WHERE NOT EXISTS (SELECT 1 FROM old_rows o
                              WHERE o.campaign_id = n.campaign_id AND o.id = n.id AND o.tsv = n.tsv)
            UNION ALL
            SELECT o.campaign_id, l.lexeme, -1 FROM old_rows o, unnest(o.tsv) l
            WHERE NOT EXISTS (SELECT 1 FROM new_rows n
                              WHERE n.campaign_id = o.campaign_id AND n.id = o.id AND n.tsv = o.tsv)) x
        GROUP BY x.campaign_id, x.lexeme HAVING sum(x.n) <> 0 ORDER BY x.campaign_id, x.lexeme
        ON CONFLICT (campaign_id, lexeme) DO UPDATE SET df = t.df + excluded.df;
    END IF;
    DELETE FROM chunk_counts t WHERE t.chunks <= 0 AND t.campaign_id IN (SELECT o.campaign_id FROM old_rows o);
    DELETE FROM chunk_lexemes t USING (SELECT DISTINCT o.campaign_id, l.lexeme FROM old_rows o, unnest(o.tsv) l) d
    WHERE t.campaign_id = d.campaign_id AND t.lexeme = d.lexeme AND t.df <= 0;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_stats_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_stats_track();
CREATE TRIGGER chunks_stats_update AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_stats_track();
CREATE TRIGGER chunks_stats_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_stats_track();
