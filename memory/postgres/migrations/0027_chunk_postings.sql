-- Impact-ordered postings for BM25 (SemanticIndex.TextSearch).
--
-- Scoring a common word by the chunks' tsvectors reads every chunk that
-- holds it (a word in 5% of 100k chunks is ~4,800 heap pages). A posting
-- is one (chunk, lexeme) pair with what BM25 needs of it: the lexeme's
-- frequency in the chunk (tf, its tsvector positions) and the chunk's
-- length in tokens (doc_len). For fixed k1 > 0 and b > 0 a term's BM25
-- contribution grows with tf and falls with doc_len, whatever the
-- campaign's average length, so the index chunk_postings_impact lists
-- each lexeme's postings best first (tf descending, then doc_len
-- ascending, then chunk id): a search reads the top postings of each word
-- and stops once no unread posting can change the result.
-- chunk_postings_pkey finds a chunk's postings (to score candidates
-- exactly, and to remove them). Both cover tf and doc_len, so searches
-- read the indexes only.
--
-- Triggers on chunks keep the postings in step with every insert, update
-- and delete (cascades, forget-me and COPY included), as chunk_lexemes is
-- kept (0008, 0013). Bundles leave the table out: importing chunks
-- rebuilds it.
CREATE TABLE chunk_postings (
    campaign_id text NOT NULL,
    chunk_id    text NOT NULL,
    lexeme      text NOT NULL,
    tf          integer NOT NULL,
    doc_len     integer NOT NULL,
    PRIMARY KEY (campaign_id, chunk_id, lexeme) INCLUDE (tf, doc_len)
);

CREATE INDEX chunk_postings_impact ON chunk_postings (campaign_id, lexeme, tf DESC, doc_len, chunk_id);

INSERT INTO chunk_postings (campaign_id, chunk_id, lexeme, tf, doc_len)
SELECT c.campaign_id, c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1), c.doc_len
FROM chunks c, unnest(c.tsv) u WHERE c.tsv IS NOT NULL;

-- chunk_postings_track applies one statement's changes to chunks: the
-- postings of deleted chunks, and of updated chunks whose words changed,
-- go; those of inserted chunks, and of updated chunks whose words
-- changed, come. An update that leaves a chunk's words alone (a new
-- embedding) touches none.
CREATE FUNCTION chunk_postings_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM chunk_postings p USING old_rows o
        WHERE p.campaign_id = o.campaign_id AND p.chunk_id = o.id;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM chunk_postings p USING old_rows o
        WHERE p.campaign_id = o.campaign_id AND p.chunk_id = o.id
          AND NOT EXISTS (SELECT 1 FROM new_rows n
                          WHERE n.campaign_id = o.campaign_id AND n.id = o.id AND n.tsv = o.tsv AND n.doc_len = o.doc_len);
        INSERT INTO chunk_postings (campaign_id, chunk_id, lexeme, tf, doc_len)
        SELECT n.campaign_id, n.id, u.lexeme, coalesce(array_length(u.positions, 1), 1), n.doc_len
        FROM new_rows n, unnest(n.tsv) u
        WHERE NOT EXISTS (SELECT 1 FROM old_rows o
                          WHERE o.campaign_id = n.campaign_id AND o.id = n.id AND o.tsv = n.tsv AND o.doc_len = n.doc_len);
        RETURN NULL;
    END IF;
    INSERT INTO chunk_postings (campaign_id, chunk_id, lexeme, tf, doc_len)
    SELECT n.campaign_id, n.id, u.lexeme, coalesce(array_length(u.positions, 1), 1), n.doc_len
    FROM new_rows n, unnest(n.tsv) u;
    RETURN NULL;
END
$$;

CREATE TRIGGER chunks_postings_insert AFTER INSERT ON chunks
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_postings_track();
CREATE TRIGGER chunks_postings_update AFTER UPDATE ON chunks
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_postings_track();
CREATE TRIGGER chunks_postings_delete AFTER DELETE ON chunks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION chunk_postings_track();
