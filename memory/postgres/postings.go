package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// BM25 top-k from impact-ordered postings.
//
// chunk_postings holds one row per (chunk, lexeme) with the lexeme's
// frequency in the chunk (tf) and the chunk's length (doc_len), kept by
// triggers as chunks are written (migration 0027). A word's BM25
// contribution to a chunk,
//
//	idf · tf·(k1+1) / (tf + k1·(1 - b + b·len/avglen))
//
// grows with tf and falls with len whatever avglen is (k1, b > 0), so the
// index chunk_postings_impact, ordered (tf descending, doc_len ascending,
// chunk id), lists each word's postings best first for any average length:
// the order needs no rewriting as the campaign grows.
//
// topPostings reads the first depth postings of each query word, and the
// rest of the last one's tie group (the postings of equal tf and length,
// up to depth more), and scores the chunks it met exactly, over all their
// postings of the query's words. A chunk it did not meet holds, of the
// query's words, only words whose postings were not read to the end, each
// at most as well as the bound of [postingEdge.bound]; when the limit-th
// chunk met scores above the sum of those bounds, no chunk unmet can enter
// the result, and the result equals scoring every chunk (a WAND/MaxScore
// threshold, Broder et al. 2003, Turtle and Flood 1995, taken once). When
// it cannot tell (several common words, none rare enough to decide), the
// search scores every posting of the words ([SemanticIndex.scorePostings]),
// which reads the postings index only, not the chunks. Both read each
// hit's chunk, and scorePostings each word's postings, through subqueries
// kept apart (LATERAL, OFFSET 0), so that their plans stay lookups when
// the planner has no statistics (a campaign just imported, a test
// database): without them its generic plan read a campaign's postings
// whole for a few words.

// bm25Sum is the SQL of a chunk's BM25 score: the sum over the query words
// it holds (w.idf, joined) of each word's contribution, tf and docLen
// naming the frequency and the chunk's length. Parameters: $5 the average
// length, $6 k1, $7 b. Rounded to nine decimals, so that the order in
// which the terms are summed cannot reorder equal scores.
func bm25Sum(tf, docLen string) string {
	return `round(sum(w.idf * ` + tf + ` * ($6::float8 + 1) / (` + tf +
		` + $6::float8 * (1 - $7::float8 + $7::float8 * ` + docLen + ` / $5::float8)))::numeric, 9)::float8`
}

// bm25Term is a word's BM25 contribution to a chunk without its idf, as
// bm25Sum computes it: tf·(k1+1) / (tf + k1·(1 - b + b·docLen/avgLen)).
func bm25Term(tf, docLen int64, avgLen float64) float64 {
	if tf <= 0 {
		return 0
	}
	t := float64(tf)
	return t * (bm25K1 + 1) / (t + bm25K1*(1-bm25B+bm25B*float64(docLen)/avgLen))
}

// postingEdge is where topPostings stopped reading a word's postings.
type postingEdge struct {
	lexeme string
	// read is how many of the word's postings were read in impact order
	// (fewer than the depth: all of them).
	read int64
	// tf and docLen are the last posting read in impact order.
	tf, docLen int64
	// tail is how many postings of the same tf and length followed it
	// (the depth or more: the tie group was not read to its end).
	tail int64
	// lower is the best contribution (without idf) of a posting with a
	// smaller tf than the last read: the shortest chunk of each smaller
	// tf, scored.
	lower float64
}

// bound returns the most that a chunk whose posting of the word was not
// read can score by this word, without the idf (0: all were read). After
// a tie group read to its end, an unread posting has the same tf in a
// longer chunk, scoring at most (tf, docLen+1), or a smaller tf, scoring
// at most lower. If the tie group was cut, an unread posting may score
// as much as the last one read.
func (e postingEdge) bound(depth int64, avgLen float64) float64 {
	switch {
	case e.read < depth:
		return 0
	case e.tail >= depth:
		return max(bm25Term(e.tf, e.docLen, avgLen), e.lower)
	default:
		return max(bm25Term(e.tf, e.docLen+1, avgLen), e.lower)
	}
}

// postingDepth is how many postings of each word topPostings reads for a
// result of limit chunks.
func postingDepth(limit int) int64 { return int64(max(2*limit, 32)) }

// scoreSlack absorbs the rounding of scores to nine decimals when a
// score is compared with a bound computed here.
const scoreSlack = 1e-8

// topPostings returns the best limit chunks for terms from the words' top
// postings, and whether they are proven to be the best of all chunks (see
// above). One round trip.
func (x *SemanticIndex) topPostings(ctx context.Context, query string, terms []textTerm, avgLen float64, limit int) ([]ChunkHit, bool, error) {
	lexemes := make([]string, len(terms))
	idfs := make([]float64, len(terms))
	idf := make(map[string]float64, len(terms))
	for i, t := range terms {
		lexemes[i], idfs[i] = t.lexeme, t.idf
		idf[t.lexeme] = t.idf
	}
	depth := postingDepth(limit)
	rows, err := x.db.Query(ctx, topPostingsSQL(x.view), x.campaign, lexemes, idfs, limit, avgLen, bm25K1, bm25B, depth)
	if err != nil {
		return nil, false, fmt.Errorf("full-text search of chunks for %q: %w", query, err)
	}
	var hits []ChunkHit
	var lx []string
	var n, tf, dl, tail []int64
	var low []float64
	for rows.Next() {
		h, err := scanHitWith(rows, &lx, &n, &tf, &dl, &tail, &low)
		if err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("full-text search of chunks for %q: %w", query, err)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("full-text search of chunks for %q: %w", query, err)
	}
	if len(hits) == 0 {
		// No word has a posting: no chunk matches.
		return []ChunkHit{}, true, nil
	}
	if len(n) != len(lx) || len(tf) != len(lx) || len(dl) != len(lx) || len(tail) != len(lx) || len(low) != len(lx) {
		return nil, false, fmt.Errorf("full-text search of chunks for %q: %d words but %d, %d, %d, %d, %d bounds",
			query, len(lx), len(n), len(tf), len(dl), len(tail), len(low))
	}
	edges := make([]postingEdge, len(lx))
	for i := range lx {
		edges[i] = postingEdge{lexeme: lx[i], read: n[i], tf: tf[i], docLen: dl[i], tail: tail[i], lower: low[i]}
	}
	return hits, proveTop(hits, edges, idf, depth, avgLen, limit), nil
}

// proveTop tells whether hits, the best limit chunks among those whose
// postings topPostings met, are the best of all chunks: whether the
// limit-th outscores what a chunk unmet could score.
func proveTop(hits []ChunkHit, edges []postingEdge, idf map[string]float64, depth int64, avgLen float64, limit int) bool {
	var ub float64
	for _, e := range edges {
		ub += idf[e.lexeme] * e.bound(depth, avgLen)
	}
	if ub == 0 {
		return true // every posting of every word was read
	}
	return len(hits) >= limit && hits[limit-1].Score > ub+scoreSlack
}

// scorePostings scores every chunk holding any of lexemes by BM25
// (weighted by idfs) from the words' postings, best first, at most limit.
func (x *SemanticIndex) scorePostings(ctx context.Context, query string, lexemes []string, idfs []float64,
	avgLen float64, limit int) ([]ChunkHit, error) {
	rows, err := x.db.Query(ctx, scorePostingsSQL(x.view), x.campaign, lexemes, idfs, limit, avgLen, bm25K1, bm25B)
	if err != nil {
		return nil, fmt.Errorf("full-text search of chunks for %q: %w", query, err)
	}
	return pgx.CollectRows(rows, scanHit)
}

// topPostingsSQL returns the query of [SemanticIndex.topPostings]. Parameters:
// $1 the campaign, $2 and $3 the words and their idfs, $4 the limit, $5
// the average length, $6 k1, $7 b, $8 the depth.
func topPostingsSQL(w view) string {
	return `
		WITH w AS MATERIALIZED (
		    SELECT u.lexeme, u.idf FROM unnest($2::text[], $3::float8[]) AS u(lexeme, idf)
		), top AS MATERIALIZED (
		    SELECT w.lexeme, h.chunk_id, h.tf, h.doc_len FROM w CROSS JOIN LATERAL (
		        SELECT p.chunk_id, p.tf, p.doc_len FROM chunk_postings p
		        WHERE p.campaign_id = $1 AND p.lexeme = w.lexeme
		        ORDER BY p.tf DESC, p.doc_len, p.chunk_id LIMIT $8) h
		), edge AS MATERIALIZED (
		    SELECT DISTINCT ON (t.lexeme) t.lexeme, t.tf, t.doc_len, t.chunk_id,
		           count(*) OVER (PARTITION BY t.lexeme) AS n
		    FROM top t ORDER BY t.lexeme, t.tf, t.doc_len DESC, t.chunk_id DESC
		), tail AS MATERIALIZED (
		    SELECT e.lexeme, h.chunk_id FROM edge e CROSS JOIN LATERAL (
		        SELECT p.chunk_id FROM chunk_postings p
		        WHERE p.campaign_id = $1 AND p.lexeme = e.lexeme AND p.tf = e.tf AND p.doc_len = e.doc_len
		          AND p.chunk_id > e.chunk_id
		        ORDER BY p.chunk_id LIMIT $8) h
		    WHERE e.n = $8
		), low AS MATERIALIZED (
		    -- The best posting of each smaller tf (the shortest chunk
		    -- holding the word that often): what an unread posting with
		    -- a smaller tf than the last read can score at most.
		    SELECT e.lexeme, max(f.tf * ($6::float8 + 1) / (f.tf + $6::float8 * (1 - $7::float8 + $7::float8 * f.doc_len / $5::float8))) AS bound
		    FROM edge e CROSS JOIN LATERAL generate_series(1, e.tf - 1) g(tf)
		    CROSS JOIN LATERAL (SELECT p.tf::float8 AS tf, p.doc_len FROM chunk_postings p
		        WHERE p.campaign_id = $1 AND p.lexeme = e.lexeme AND p.tf = g.tf
		        ORDER BY p.doc_len LIMIT 1) f
		    WHERE e.n = $8
		    GROUP BY e.lexeme
		), cand AS (
		    SELECT t.chunk_id FROM top t UNION SELECT t.chunk_id FROM tail t
		), scored AS (
		    -- Each candidate is scored over its own postings of the words
		    -- (a lookup in chunk_postings_pkey), not by joining every
		    -- posting of the words. One lookup of the primary key for each
		    -- (candidate, word) not read instead was measured dearer: 6.1
		    -- against 4.4 ms of server CPU for a name and a common word at
		    -- 100k chunks (a chunk's postings share an index page).
		    SELECT cand.chunk_id AS id, (SELECT ` + bm25Sum("p.tf::float8", "p.doc_len") + `
		        FROM chunk_postings p JOIN w ON w.lexeme = p.lexeme
		        WHERE p.campaign_id = $1 AND p.chunk_id = cand.chunk_id AND p.lexeme = ANY($2)) AS score
		    FROM cand
		    ORDER BY score DESC, cand.chunk_id
		    LIMIT $4
		), bounds AS MATERIALIZED (
		    SELECT array_agg(e.lexeme ORDER BY e.lexeme) AS lexemes, array_agg(e.n ORDER BY e.lexeme) AS n,
		           array_agg(e.tf::bigint ORDER BY e.lexeme) AS tf, array_agg(e.doc_len::bigint ORDER BY e.lexeme) AS len,
		           array_agg((SELECT count(*) FROM tail t WHERE t.lexeme = e.lexeme) ORDER BY e.lexeme) AS tail,
		           array_agg(coalesce((SELECT l.bound FROM low l WHERE l.lexeme = e.lexeme), 0) ORDER BY e.lexeme) AS low
		    FROM edge e
		)
		SELECT h.*, s.score, b.lexemes, b.n, b.tf, b.len, b.tail, b.low
		FROM scored s CROSS JOIN LATERAL (` + w.hitOf("s.id") + `) h CROSS JOIN bounds b
		ORDER BY s.score DESC, h.id`
}

// scorePostingsSQL returns the query of [SemanticIndex.scorePostings], with
// the parameters of topPostingsSQL but the depth.
func scorePostingsSQL(w view) string {
	return `
		WITH w AS MATERIALIZED (
		    SELECT u.lexeme, u.idf FROM unnest($2::text[], $3::float8[]) AS u(lexeme, idf)
		), scored AS (
		    -- Each word's postings from chunk_postings_impact (the subquery
		    -- is kept apart, OFFSET 0, so that no plan reads the
		    -- campaign's postings whole and joins the words to them).
		    SELECT p.chunk_id AS id, ` + bm25Sum("p.tf::float8", "p.doc_len") + ` AS score
		    FROM w CROSS JOIN LATERAL (SELECT q.chunk_id, q.lexeme, q.tf, q.doc_len FROM chunk_postings q
		        WHERE q.campaign_id = $1 AND q.lexeme = w.lexeme OFFSET 0) p
		    GROUP BY p.chunk_id
		    ORDER BY score DESC, p.chunk_id
		    LIMIT $4
		)
		SELECT h.*, s.score FROM scored s CROSS JOIN LATERAL (` + w.hitOf("s.id") + `) h
		ORDER BY s.score DESC, h.id`
}
