package postgres

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/glyphoxa/glyphoxa/memory"
)

// ChunkHit is a chunk found by a retrieval query, with its score (higher is
// better; the scale depends on the query).
type ChunkHit struct {
	Chunk memory.Chunk
	Score float64
}

// hitSelect are the columns of a chunk hit of chunks c, in the order
// scanHitWith reads them: the entities it mentions are those the viewer
// may see ([view.chunkEntityIDs]).
func (w view) hitSelect() string {
	return `c.id, c.session_id, c.content, c.speaker_ids, c.start_at, c.end_at, ` + w.chunkEntityIDs("c")
}

// hitOf is a subquery of the hit columns of chunk id (a column of an
// outer query) of campaign $1, for a LATERAL join: one lookup of
// chunks_pkey for each hit, and the viewer's check of the chunk, row by
// row, where its text is read. Kept apart (OFFSET 0), so that no plan
// reads the campaign's chunks to join them to a few hits when it has no
// statistics to count them by.
func (w view) hitOf(id string) string {
	return `SELECT ` + w.hitSelect() + ` FROM chunks c WHERE c.campaign_id = $1 AND c.id = ` + id + ` AND ` + w.chunkVisible("c") + ` OFFSET 0`
}

func scanHit(row pgx.CollectableRow) (ChunkHit, error) { return scanHitWith(row) }

// scanHitWith scans a chunk hit followed by the columns of extra.
func scanHitWith(row pgx.CollectableRow, extra ...any) (ChunkHit, error) {
	var h ChunkHit
	var start, end *time.Time
	c := &h.Chunk
	err := row.Scan(append([]any{&c.ID, &c.SessionID, &c.Content, &c.SpeakerIDs, &start, &end, &c.EntityIDs, &h.Score}, extra...)...)
	if start != nil {
		c.StartAt = *start
	}
	if end != nil {
		c.EndAt = *end
	}
	return h, err
}

// TextSearch ranks chunks by the question's words with Okapi BM25, any
// of which may match (unlike the session log's search, which wants all of
// them). only, when not nil, restricts the search to those chunk ids. Best
// first, at most limit.
//
// Each matched word adds its rarity (inverse document frequency, Lucene's
// never-negative form log(1 + (N - df + 0.5)/(df + 0.5))) times its
// saturated, length-normalised frequency in the chunk:
//
//	tf·(k1+1) / (tf + k1·(1 - b + b·len/avglen))
//
// with the textbook k1 1.2 and b 0.75, not fitted to any corpus. The
// saturation keeps a word said ten times from counting ten times; the
// length normalisation keeps a long monologue, which shares some words
// with every question, from outranking the short line that answers it.
// PostgreSQL's ts_rank and ts_rank_cd do neither in this sense (their
// normalisation options divide by length or by unique words, without
// saturation and without an average length to compare with), so the
// score is computed here over the chunks' tsvector lexemes: tf is the
// number of positions of the lexeme, len the chunk's tokens (chunks.
// doc_len). Document frequencies, the chunk count and the total tokens
// are read from the campaign's statistics (chunk_lexemes, chunk_counts),
// kept current by triggers as chunks are written, so the ranking follows
// the campaign as lines arrive. Words are stemmed by the campaign's
// text-search configuration ([Campaign.SetLanguage]).
//
// Without only, the search reads the words' postings (chunk_postings,
// kept by triggers as chunks are written) best first and stops early:
// see postings.go. The result is the same as scoring every
// matching chunk. Equal scores (to nine decimals, so that the order in
// which floating-point terms are summed cannot reorder them) are ordered
// by chunk id.
func (x *SemanticIndex) TextSearch(ctx context.Context, query string, limit int, only []string) ([]ChunkHit, error) {
	if err := memory.CheckQuery(query); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty query", memory.ErrInvalid)
	}
	if limit <= 0 {
		limit = 10
	}
	terms, avgLen, err := x.textTerms(ctx, query)
	if err != nil {
		return nil, err
	}
	if len(terms) == 0 {
		return []ChunkHit{}, nil
	}
	lexemes := make([]string, len(terms))
	idfs := make([]float64, len(terms))
	for i, t := range terms {
		lexemes[i], idfs[i] = t.lexeme, t.idf
	}
	// A player searches the chunks they may read: those not denied
	// (view.deniedCTEs), in every query below, so that the limit chunks
	// returned are the best of those. Each chunk returned is checked
	// again, row by row, where its text is read.
	if only != nil {
		return x.scoreChunks(ctx, query, lexemes, idfs, avgLen, limit, only)
	}
	// Words whose postings number no more than the top postings would
	// read of them (depth each) are scored whole: reading every posting
	// costs less than reading the top ones, proving and scoring the
	// candidates (measured on the evaluation corpora, 200 chunks).
	var postings int64
	for _, t := range terms {
		postings += t.df
	}
	if postings <= postingDepth(limit)*int64(len(terms)) {
		return x.scorePostings(ctx, query, lexemes, idfs, avgLen, limit)
	}
	hits, proven, err := x.topPostings(ctx, query, terms, avgLen, limit)
	if err != nil || proven {
		return hits, err
	}
	return x.scorePostings(ctx, query, lexemes, idfs, avgLen, limit)
}

// BM25 parameters: the textbook values (Robertson and Zaragoza, "The
// Probabilistic Relevance Framework: BM25 and Beyond", 2009), untuned.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// Question words: the words that make a statement a question ("When did
// Grog grab the chain?" asks what "Grog grabbed the chain" says). They are
// dropped from the query, stemmed as the campaign's configuration stems
// them, so that a question and the statement it asks about rank alike:
// the configurations' stop lists keep some of them (english keeps
// "whose" and the "didn" of "didn't"; german keeps "wann", "wer",
// "warum"), and a rare one would otherwise weigh like a rare name. A
// campaign in another language relies on its configuration's stop list
// and the English list.
const (
	questionWordsEnglish = `when where why how what which who whom whose whoever whatever whenever
		do does did done doing didn doesn don isn wasn weren aren hasn haven hadn won wouldn couldn shouldn`
	questionWordsGerman = `wann wo woher wohin warum wieso weshalb weswegen wie was wer wen wem wessen
		welche welcher welches welchen welchem hat hatte hatten haben ist war waren wurde wurden
		tat taten getan`
)

// textTerm is a query lexeme that occurs in the campaign's chunks, with its
// inverse document frequency.
type textTerm struct {
	lexeme string
	df     int64
	idf    float64
}

// textTerms returns the query's lexemes (stemmed by the campaign's
// text-search configuration) that occur in the campaign, rarest first, and
// the campaign's average chunk length in tokens.
func (x *SemanticIndex) textTerms(ctx context.Context, query string) ([]textTerm, float64, error) {
	rows, err := x.db.Query(ctx, `
		WITH n AS (SELECT coalesce((SELECT chunks FROM chunk_counts WHERE campaign_id = $1), 0)::bigint AS chunks,
		                  coalesce((SELECT tokens FROM chunk_counts WHERE campaign_id = $1), 0)::bigint AS tokens)
		, cfg AS (SELECT coalesce((SELECT text_config FROM campaigns WHERE id = $1), 'english'::regconfig) AS cfg)
		SELECT q.lexeme, l.df::bigint, n.chunks, n.tokens
		FROM (SELECT DISTINCT u.lexeme FROM cfg, unnest(to_tsvector(cfg.cfg, $2)) u
		      WHERE u.lexeme NOT IN (SELECT w.lexeme FROM cfg, unnest(to_tsvector(cfg.cfg,
		          CASE cfg.cfg::text WHEN 'german' THEN $4 ELSE $3 END)) w)) q
		JOIN chunk_lexemes l ON l.campaign_id = $1 AND l.lexeme = q.lexeme
		CROSS JOIN n
		ORDER BY 2, 1`, x.campaign, query, questionWordsEnglish, questionWordsGerman)
	if err != nil {
		return nil, 0, fmt.Errorf("reading the document frequencies of %q: %w", query, err)
	}
	var terms []textTerm
	var t textTerm
	var n, tokens int64
	if _, err := pgx.ForEachRow(rows, []any{&t.lexeme, &t.df, &n, &tokens}, func() error {
		if t.df > 0 {
			terms = append(terms, t)
		}
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("reading the document frequencies of %q: %w", query, err)
	}
	for i := range terms {
		df := float64(terms[i].df)
		terms[i].idf = math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
	}
	avg := 1.0
	if n > 0 && tokens > 0 {
		avg = float64(tokens) / float64(n)
	}
	return terms, avg, nil
}

// scoreChunks scores the chunks among only that match any of lexemes by
// BM25 (weighted by idfs), reading their tsvectors, best first, at most
// limit.
func (x *SemanticIndex) scoreChunks(ctx context.Context, query string, lexemes []string, idfs []float64,
	avgLen float64, limit int, only []string) ([]ChunkHit, error) {
	hits, err := x.searchHits(ctx, withCTEs(x.view.deniedCTEs(), `w AS MATERIALIZED (
		    SELECT u.lexeme, u.idf FROM unnest($2::text[], $3::float8[]) AS u(lexeme, idf)
		)`)+`, cand AS (
		    SELECT c.id, c.tsv, c.doc_len FROM chunks c
		    WHERE c.campaign_id = $1 AND c.tsv @@ (SELECT string_agg(quote_literal(l), ' | ')::tsquery FROM unnest($2::text[]) l)
		      AND c.id = ANY($8) AND `+x.view.notDenied("c.id")+`
		), scored AS (
		    SELECT cand.id, `+bm25Sum("t.tf", "cand.doc_len")+` AS score
		    FROM cand
		    CROSS JOIN LATERAL (SELECT u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
		                        FROM unnest(cand.tsv) u WHERE u.lexeme = ANY($2)) t
		    JOIN w ON w.lexeme = t.lexeme
		    GROUP BY cand.id
		    ORDER BY score DESC, cand.id
		    LIMIT $4
		)
		SELECT `+x.view.hitSelect()+`, s.score FROM scored s JOIN chunks c ON c.campaign_id = $1 AND c.id = s.id
		WHERE `+x.view.chunkVisible("c")+`
		ORDER BY s.score DESC, c.id`, x.campaign, lexemes, idfs, limit, avgLen, bm25K1, bm25B, only)
	if err != nil {
		return nil, fmt.Errorf("full-text search of chunks for %q: %w", query, err)
	}
	return hits, nil
}

// VectorSearch returns the limit chunks nearest to embedding, nearest
// first, scored 1 - cosine distance. only, when not nil, restricts the
// search to those chunk ids (searched exactly).
func (x *SemanticIndex) VectorSearch(ctx context.Context, embedding []float32, limit int, only []string) ([]ChunkHit, error) {
	if len(embedding) == 0 {
		return nil, fmt.Errorf("%w: empty query embedding", memory.ErrInvalid)
	}
	if err := x.checkEmbedding(embedding, "the query embedding"); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 10
	}
	// A player searches the chunks they may read: those not denied
	// (view.deniedCTEs), so that the limit chunks returned are the nearest
	// of those, not the nearest of all less the denied. Each chunk
	// returned is checked again, row by row, where its text is read.
	if only == nil {
		// The campaign's chunks, by the search of [SemanticIndex.Search]:
		// the same chunks in the same order, without reading their
		// embeddings (1.5 kB each at 384 dimensions, dropped here). The
		// index scan is iterative: it reads on past the denied chunks.
		hits, err := nearest(ctx, x.db, x.exactChunks, withCTEs(x.view.deniedCTEs())+`SELECT `+x.view.hitSelect()+`, 1 - ((c.embedding <=> $2) + 0) AS score FROM chunks c
			WHERE c.campaign_id = $1 AND c.embedding IS NOT NULL AND `+x.view.notDenied("c.id")+` AND `+x.view.chunkVisible("c"),
			"score DESC", []any{x.campaign, pgvector.NewVector(embedding)}, limit, scanHit)
		if err != nil {
			return nil, fmt.Errorf("searching the semantic index: %w", err)
		}
		return hits, nil
	}
	hits, err := x.searchHits(ctx, withCTEs(x.view.deniedCTEs(), `near AS (
		    SELECT c.id, c.embedding <=> $2 AS distance FROM chunks c
		    WHERE c.campaign_id = $1 AND c.embedding IS NOT NULL AND c.id = ANY($3) AND `+x.view.notDenied("c.id")+`
		    ORDER BY (c.embedding <=> $2) + 0, c.id LIMIT $4)`)+`
		SELECT `+x.view.hitSelect()+`, 1 - n.distance FROM near n JOIN chunks c ON c.campaign_id = $1 AND c.id = n.id
		WHERE `+x.view.chunkVisible("c")+`
		ORDER BY n.distance, c.id`, x.campaign, pgvector.NewVector(embedding), only, limit)
	if err != nil {
		return nil, fmt.Errorf("searching the semantic index: %w", err)
	}
	return hits, nil
}

// ChunksByID returns the chunks with the given ids (without embeddings), in
// the order of ids; ids that do not exist are left out.
func (x *SemanticIndex) ChunksByID(ctx context.Context, ids []string) ([]memory.Chunk, error) {
	rows, err := x.db.Query(ctx, `SELECT `+x.view.hitSelect()+`, array_position($2::text[], c.id)::float8 FROM chunks c
		WHERE c.campaign_id = $1 AND c.id = ANY($2) AND `+x.view.chunkVisible("c")+`
		ORDER BY array_position($2::text[], c.id)`, x.campaign, nonNil(ids))
	if err != nil {
		return nil, fmt.Errorf("reading chunks: %w", err)
	}
	hits, err := pgx.CollectRows(rows, scanHit)
	out := make([]memory.Chunk, len(hits))
	for i, h := range hits {
		out[i] = h.Chunk
	}
	return out, err
}

// HeardChunks returns the ids of the chunks an NPC heard: those of the
// sessions it spoke in that lie within HeardWindow of one of its canon
// lines (npcSpokeCTE). A chunk without a start spans its session (up to
// its end, when it has one). The search starts from the NPC's lines, not
// from the campaign's chunks: at the 100k bench scale, looking for the
// NPC's lines near every chunk took 0.2 s.
//
// Of those, only the chunks any player may read ([view.chunkVisible]):
// none that holds a line said while the DM had split the party, as
// [SessionLog.SearchHeard] keeps to public lines.
func (x *SemanticIndex) HeardChunks(ctx context.Context, npcID string) ([]string, error) {
	rows, err := x.db.Query(ctx, `
		WITH `+npcSpokeCTE+`
		SELECT DISTINCT o.id FROM spoke s CROSS JOIN LATERAL (
		    SELECT c.id FROM chunks c WHERE c.campaign_id = $1 AND c.session_id = s.session_id
		      AND c.start_at <= s.at + $3::interval AND coalesce(c.end_at, c.start_at) >= s.at - $3::interval
		    UNION ALL
		    SELECT c.id FROM chunks c WHERE c.campaign_id = $1 AND c.session_id = s.session_id
		      AND c.start_at IS NULL AND s.at <= coalesce(c.end_at, s.at) + $3::interval
		) o JOIN chunks c ON c.campaign_id = $1 AND c.id = o.id
		WHERE `+view{v: memory.PlayerViewer()}.chunkVisible("c")+`
		ORDER BY o.id`, x.campaign, npcID, HeardWindow)
	if err != nil {
		return nil, fmt.Errorf("listing the chunks %q heard: %w", npcID, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if ids == nil && err == nil {
		ids = []string{}
	}
	return ids, err
}

// EdgeKind tells the two kinds of edges of the retrieval graph apart.
type EdgeKind int

// Edge kinds.
const (
	// EdgeFact is an active relationship between two entities.
	EdgeFact EdgeKind = iota + 1
	// EdgeMention links an entity (From) to a chunk that mentions it (To).
	EdgeMention
)

// GraphEdge is one edge of the retrieval graph, or, when Removed is set,
// the removal of one: of fact FactID, or of every mention edge of chunk To.
type GraphEdge struct {
	Kind     EdgeKind
	FactID   int64
	From, To string
	// Weight is the fact's confidence, or 1 for a mention.
	Weight  float64
	Removed bool
}

// GraphCursor marks how far a reader of the retrieval graph has read.
type GraphCursor struct {
	// Change is the last graph change seen, and Running the transactions
	// in progress when it was read ([ChangeCursor]: a change with a lower
	// id they commit later is read by the next refresh).
	Change  int64
	Running []int64
	// Chunk is the last change of a chunk's entity links seen
	// (chunk_changes, migration 0042), read in the same snapshot as
	// Running, which serves it as it serves Change.
	Chunk int64
	// Seen is, for a player or an NPC, the entities first heard in split
	// scenes they could see then ([Graph.SceneEntitiesSeen]): their graph
	// holds an entity's links and facts only while they may see it, and
	// that changes with a trace (a line, a chunk, for an NPC a fact the
	// DM gave it) as well as with the entity.
	Seen []string
}

// LoadGraph streams the campaign's retrieval graph to fn: every active
// relationship and every chunk-entity link. The cursor it returns lets
// [Campaign.GraphChanges] pick up later writes. Its three queries go to the
// database together, in one round trip.
func (c *Campaign) LoadGraph(ctx context.Context, fn func(GraphEdge) error) (GraphCursor, error) {
	var cur GraphCursor
	b := &pgx.Batch{}
	// Read the cursor first: a write racing with the load shows up again
	// in the next refresh, and applying an edge twice is harmless.
	b.Queue(`SELECT coalesce((SELECT max(id) FROM graph_changes WHERE campaign_id = $1), 0), `+runningSQL+`,
		coalesce((SELECT max(id) FROM chunk_changes WHERE campaign_id = $1), 0), `+c.view.sceneEntitiesSeenSQL(), c.id)
	b.Queue(`SELECT r.id, r.source_id, r.target_id, r.confidence FROM relationships r
		WHERE r.campaign_id = $1 AND r.status = 'active' AND `+c.view.factVisible("r"), c.id)
	// The mentions of entities the viewer may see only: a player's graph
	// holds no node of an entity first heard in a split scene they were
	// not in, nor an NPC's one it may not see ([view.npcEntity]).
	mentions := `SELECT ce.entity_id, ce.chunk_id FROM chunk_entities ce WHERE ce.campaign_id = $1`
	if !c.view.system() {
		mentions += ` AND EXISTS (SELECT 1 FROM entities ve WHERE ve.campaign_id = ce.campaign_id AND ve.id = ce.entity_id AND ` +
			c.view.entityVisible("ve") + `)`
	}
	b.Queue(mentions, c.id)
	res := c.l1.db.SendBatch(ctx, b)
	defer res.Close()
	if err := res.QueryRow().Scan(&cur.Change, &cur.Running, &cur.Chunk, &cur.Seen); err != nil {
		return cur, fmt.Errorf("reading the graph cursor: %w", err)
	}
	rows, err := res.Query()
	if err != nil {
		return cur, fmt.Errorf("loading relationships: %w", err)
	}
	e := GraphEdge{Kind: EdgeFact}
	if _, err := pgx.ForEachRow(rows, []any{&e.FactID, &e.From, &e.To, &e.Weight}, func() error { return fn(e) }); err != nil {
		return cur, fmt.Errorf("loading relationships: %w", err)
	}
	rows, err = res.Query()
	if err != nil {
		return cur, fmt.Errorf("loading chunk links: %w", err)
	}
	e = GraphEdge{Kind: EdgeMention, Weight: 1}
	if _, err := pgx.ForEachRow(rows, []any{&e.From, &e.To}, func() error { return fn(e) }); err != nil {
		return cur, fmt.Errorf("loading chunk links: %w", err)
	}
	if err := res.Close(); err != nil {
		return cur, fmt.Errorf("loading the retrieval graph: %w", err)
	}
	return cur, nil
}

// changedChunk is a chunk whose mention edges a refresh replaces: its id and
// the entities it links to, as the viewer may see them.
type changedChunk struct {
	id   string
	ents []string
}

// entityEdges is what a player's graph reads again of entities whose
// visibility may have changed: the ids of their facts not in skip (the
// facts already read), and their chunks with their links.
type entityEdges struct {
	facts  []int64
	chunks []changedChunk
}

// entityEdges reads the facts and the chunks of entities ids, as the
// viewer may see them now ([Campaign.GraphChanges]).
func (c *Campaign) entityEdges(ctx context.Context, ids []string, skip map[int64]bool) (entityEdges, error) {
	var out entityEdges
	b := &pgx.Batch{}
	b.Queue(`SELECT r.id FROM relationships r WHERE r.campaign_id = $1 AND r.source_id = ANY($2)
		UNION SELECT r.id FROM relationships r WHERE r.campaign_id = $1 AND r.target_id = ANY($2)
		ORDER BY 1`, c.id, ids)
	b.Queue(`SELECT c.id, `+c.view.chunkEntityIDs("c")+` FROM chunks c
		WHERE c.campaign_id = $1 AND c.id IN (SELECT ce.chunk_id FROM chunk_entities ce WHERE ce.campaign_id = $1 AND ce.entity_id = ANY($2))
		ORDER BY c.id`, c.id, ids)
	res := c.l1.db.SendBatch(ctx, b)
	defer res.Close()
	rows, err := res.Query()
	if err != nil {
		return out, fmt.Errorf("reading the facts of entities a player's view changed for: %w", err)
	}
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		if !skip[id] {
			skip[id] = true
			out.facts = append(out.facts, id)
		}
		return nil
	}); err != nil {
		return out, fmt.Errorf("reading the facts of entities a player's view changed for: %w", err)
	}
	if out.chunks, err = changedChunks(res.Query()); err != nil {
		return out, fmt.Errorf("reading the chunks of entities a player's view changed for: %w", err)
	}
	return out, res.Close()
}

// changedChunks collects rows of a chunk's id and its entity ids.
func changedChunks(rows pgx.Rows, err error) ([]changedChunk, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (changedChunk, error) {
		var ch changedChunk
		err := row.Scan(&ch.id, &ch.ents)
		return ch, err
	})
}

// symmetricDiff returns the strings in exactly one of the sorted lists a
// and b.
func symmetricDiff(a, b []string) []string {
	var out []string
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return out
}

// GraphChanges streams to fn what changed in the retrieval graph since cur:
// for each changed relationship its current edge, or its removal; for each
// chunk whose entity links changed (re-indexed, merged into another
// entity, deleted with their entity or their chunk) the removal of its
// mention edges followed by the current ones, as the viewer may see them.
// For a player, the same for every chunk and fact of an entity that
// changed, or that they came to see or no longer see (cur.Seen): a player's
// graph holds an entity only while they may see it. It returns the new
// cursor.
//
// With nothing written since cur it costs one round trip of a few index
// lookups (a second one reads the relationships that changed, if any, and
// for a player another the edges of the entities their view changed for).
// A change written by a transaction that was running at cur and commits
// later is reported although its id is below cur's ([ChangeCursor]). A
// change may be reported twice (a later refresh reads it again); applying
// it twice is harmless.
func (c *Campaign) GraphChanges(ctx context.Context, cur GraphCursor, fn func(GraphEdge) error) (GraphCursor, error) {
	next := cur
	b := &pgx.Batch{}
	// The changed facts, the newest ids and the transactions in progress
	// in one statement, one snapshot: a newest id read in a later
	// statement could step over a change committed between the two. A
	// change written by a transaction that was running at cur and has
	// committed since comes back even with an id below cur's
	// (ChangeCursor).
	xids := xidTexts(cur.Running)
	player := !c.view.system()
	changedEntities := `'{}'::text[]`
	if player {
		changedEntities = `ARRAY(SELECT DISTINCT ch.ref FROM graph_changes ch
		    WHERE ch.campaign_id = $1 AND ch.kind = 'entity' AND (ch.id > $2 OR ` + lateSQL + `))`
	}
	b.Queue(`WITH now AS (SELECT `+runningSQL+` AS running,
		                    (SELECT coalesce(max(id), $2) FROM graph_changes WHERE campaign_id = $1) AS top,
		                    (SELECT coalesce(max(id), $4) FROM chunk_changes WHERE campaign_id = $1) AS chunk_top,
		                    `+c.view.sceneEntitiesSeenSQL()+` AS seen, `+changedEntities+` AS entities)
		SELECT now.running, now.top, now.chunk_top, now.seen, now.entities, ch.ref FROM now LEFT JOIN LATERAL (
		    SELECT ch.id, ch.ref FROM graph_changes ch
		    WHERE ch.campaign_id = $1 AND ch.kind = 'fact' AND (ch.id > $2 OR `+lateSQL+`)) ch ON true
		ORDER BY ch.id`, c.id, cur.Change, xids, cur.Chunk)
	// The chunks' links, read in a later snapshot than the cursor's: a
	// change committed in between is read now and again by the next
	// refresh, never stepped over.
	b.Queue(`SELECT x.chunk_id, coalesce((SELECT `+c.view.chunkEntityIDs("c")+` FROM chunks c
		                                   WHERE c.campaign_id = $1 AND c.id = x.chunk_id), '{}')
		FROM (SELECT ch.chunk_id, min(ch.id) AS first FROM chunk_changes ch
		      WHERE ch.campaign_id = $1 AND (ch.id > $2 OR `+lateSQL+`) GROUP BY ch.chunk_id) x
		ORDER BY x.first, x.chunk_id`, c.id, cur.Chunk, xids)
	res := c.l1.db.SendBatch(ctx, b)
	defer res.Close()
	rows, err := res.Query()
	if err != nil {
		return cur, fmt.Errorf("reading graph changes: %w", err)
	}
	var facts []int64
	listed := map[int64]bool{}
	var ref *string
	var entities []string
	if _, err := pgx.ForEachRow(rows, []any{&next.Running, &next.Change, &next.Chunk, &next.Seen, &entities, &ref}, func() error {
		if ref == nil {
			return nil
		}
		if f, err := strconv.ParseInt(*ref, 10, 64); err == nil && !listed[f] {
			listed[f] = true
			facts = append(facts, f)
		}
		return nil
	}); err != nil {
		return cur, fmt.Errorf("reading graph changes: %w", err)
	}
	chunks, err := changedChunks(res.Query())
	if err != nil {
		return cur, fmt.Errorf("reading changed chunks: %w", err)
	}
	if err := res.Close(); err != nil {
		return cur, fmt.Errorf("reading graph changes: %w", err)
	}
	if player {
		// The entities a player may have come to see or no longer see:
		// those whose rows changed (published, merged, deleted) and those
		// whose traces did (symmetricDiff of the sets seen). Their facts
		// and their chunks' links are read again.
		entities = append(entities, symmetricDiff(cur.Seen, next.Seen)...)
		if len(entities) > 0 {
			more, err := c.entityEdges(ctx, entities, listed)
			if err != nil {
				return cur, err
			}
			facts = append(facts, more.facts...)
			chunks = append(chunks, more.chunks...)
		}
	}
	if len(facts) > 0 {
		rows, err := c.l1.db.Query(ctx, `SELECT f.id, coalesce(r.source_id, ''), coalesce(r.target_id, ''), coalesce(r.confidence, 0),
			coalesce(r.status = 'active' AND `+c.view.factVisible("r")+`, false)
			FROM unnest($2::bigint[]) f(id) LEFT JOIN relationships r ON r.campaign_id = $1 AND r.id = f.id`, c.id, facts)
		if err != nil {
			return cur, fmt.Errorf("reading changed relationships: %w", err)
		}
		e := GraphEdge{Kind: EdgeFact}
		var active bool
		if _, err := pgx.ForEachRow(rows, []any{&e.FactID, &e.From, &e.To, &e.Weight, &active}, func() error {
			e.Removed = !active
			return fn(e)
		}); err != nil {
			return cur, fmt.Errorf("reading changed relationships: %w", err)
		}
	}
	for _, x := range chunks {
		if err := fn(GraphEdge{Kind: EdgeMention, To: x.id, Removed: true}); err != nil {
			return cur, fmt.Errorf("reading changed chunks: %w", err)
		}
		for _, ent := range x.ents {
			if err := fn(GraphEdge{Kind: EdgeMention, From: ent, To: x.id, Weight: 1}); err != nil {
				return cur, fmt.Errorf("reading changed chunks: %w", err)
			}
		}
	}
	return next, nil
}

// ChunkIDsOfSessions returns the ids of the chunks of the sessions that
// started within [from, to] (a zero bound is open): what a question about
// a time, or asked as of a session, may be answered from.
func (x *SemanticIndex) ChunkIDsOfSessions(ctx context.Context, from, to time.Time) ([]string, error) {
	rows, err := x.db.Query(ctx, `
		SELECT c.id FROM chunks c JOIN sessions s ON s.campaign_id = c.campaign_id AND s.id = c.session_id
		WHERE c.campaign_id = $1 AND ($2::timestamptz IS NULL OR s.started_at >= $2)
		  AND ($3::timestamptz IS NULL OR s.started_at <= $3)
		ORDER BY c.id`, x.campaign, nullTime(from), nullTime(to))
	if err != nil {
		return nil, fmt.Errorf("listing the chunks of the sessions from %v to %v: %w", from, to, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if ids == nil && err == nil {
		ids = []string{}
	}
	return ids, err
}
