-- BM25 over the semantic index, in the campaign's language.
--
-- A campaign names the text-search configuration its chunks are stemmed
-- with (english unless set: see Campaign.SetLanguage). chunks.tsv was a
-- generated column fixed to english; it becomes a plain column that a
-- trigger fills from the campaign's configuration, beside the chunk's
-- length in tokens (doc_len), which BM25 normalises by. chunk_counts keeps
-- the campaign's total tokens (for the average length) next to its chunk
-- count, incrementally, as chunk_lexemes keeps document frequencies.

ALTER TABLE campaigns ADD COLUMN text_config regconfig NOT NULL DEFAULT 'english';

ALTER TABLE chunks ALTER COLUMN tsv DROP EXPRESSION;
ALTER TABLE chunks ADD COLUMN doc_len integer NOT NULL DEFAULT 0;

-- tsv_tokens is a tsvector's length in tokens: the positions of all its
-- lexemes (a lexeme keeps at most 256 positions, so a word said more often
-- than that in one chunk counts 256).
CREATE FUNCTION tsv_tokens(t tsvector) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0)::integer FROM unnest(t) u
$$;

CREATE FUNCTION chunk_text_fill() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.tsv := to_tsvector(coalesce((SELECT c.text_config FROM campaigns c WHERE c.id = NEW.campaign_id),
                                    'english'::regconfig), NEW.content);
    NEW.doc_len := tsv_tokens(NEW.tsv);
    RETURN NEW;
END
$$;

CREATE TRIGGER chunks_text_fill BEFORE INSERT OR UPDATE OF content, campaign_id ON chunks
    FOR EACH ROW EXECUTE FUNCTION chunk_text_fill();

ALTER TABLE chunk_counts ADD COLUMN tokens bigint NOT NULL DEFAULT 0;

-- Backfill: the trigger recomputes tsv and doc_len (the statistics
-- triggers see an unchanged tsv and leave document frequencies alone).
UPDATE chunks SET content = content;
UPDATE chunk_counts n SET tokens = coalesce((SELECT sum(c.doc_len) FROM chunks c WHERE c.campaign_id = n.campaign_id), 0);

-- chunk_stats_track as in 0008, with the total tokens kept beside the
-- chunk count.
CREATE OR REPLACE FUNCTION chunk_stats_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM pg_advisory_xact_lock(hashtext('glyphoxa.chunk_stats'), hashtext(x.campaign_id))
        FROM (SELECT DISTINCT n.campaign_id FROM new_rows n ORDER BY 1) x;
        INSERT INTO chunk_counts AS t (campaign_id, chunks, tokens)
        SELECT n.campaign_id, count(*), sum(n.doc_len) FROM new_rows n GROUP BY n.campaign_id ORDER BY n.campaign_id
        ON CONFLICT (campaign_id) DO UPDATE SET chunks = t.chunks + excluded.chunks, tokens = t.tokens + excluded.tokens;
        INSERT INTO chunk_lexemes AS t (campaign_id, lexeme, df)
        SELECT n.campaign_id, l.lexeme, count(*) FROM new_rows n, unnest(n.tsv) l
        GROUP BY n.campaign_id, l.lexeme ORDER BY n.campaign_id, l.lexeme
        ON CONFLICT (campaign_id, lexeme) DO UPDATE SET df = t.df + excluded.df;
        RETURN NULL;
    END IF;

    IF TG_OP = 'DELETE' THEN
        PERFORM pg_advisory_xact_lock(hashtext('glyphoxa.chunk_stats'), hashtext(x.campaign_id))
        FROM (SELECT DISTINCT o.campaign_id FROM old_rows o ORDER BY 1) x;
        INSERT INTO chunk_counts AS t (campaign_id, chunks, tokens)
        SELECT o.campaign_id, -count(*), -sum(o.doc_len) FROM old_rows o GROUP BY o.campaign_id ORDER BY o.campaign_id
        ON CONFLICT (campaign_id) DO UPDATE SET chunks = t.chunks + excluded.chunks, tokens = t.tokens + excluded.tokens;
        INSERT INTO chunk_lexemes AS t (campaign_id, lexeme, df)
        SELECT o.campaign_id, l.lexeme, -count(*) FROM old_rows o, unnest(o.tsv) l
        GROUP BY o.campaign_id, l.lexeme ORDER BY o.campaign_id, l.lexeme
        ON CONFLICT (campaign_id, lexeme) DO UPDATE SET df = t.df + excluded.df;
    ELSE
        PERFORM pg_advisory_xact_lock(hashtext('glyphoxa.chunk_stats'), hashtext(x.campaign_id))
        FROM (SELECT n.campaign_id FROM new_rows n UNION SELECT o.campaign_id FROM old_rows o ORDER BY 1) x;
        INSERT INTO chunk_counts AS t (campaign_id, chunks, tokens)
        SELECT x.campaign_id, sum(x.n), sum(x.len) FROM (
            SELECT n.campaign_id, 1 AS n, n.doc_len AS len FROM new_rows n
            UNION ALL
            SELECT o.campaign_id, -1, -o.doc_len FROM old_rows o) x
        GROUP BY x.campaign_id HAVING sum(x.n) <> 0 OR sum(x.len) <> 0 ORDER BY x.campaign_id
        ON CONFLICT (campaign_id) DO UPDATE SET chunks = t.chunks + excluded.chunks, tokens = t.tokens + excluded.tokens;
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
