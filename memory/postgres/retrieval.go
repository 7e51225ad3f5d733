package postgres

import (
	"context"
	"fmt"
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

const hitSelect = `c.id, c.session_id, c.content, c.speaker_ids, c.start_at, c.end_at,
	coalesce((SELECT array_agg(ce.entity_id ORDER BY ce.entity_id) FROM chunk_entities ce
	          WHERE ce.campaign_id = c.campaign_id AND ce.chunk_id = c.id), '{}')`

func scanHit(row pgx.CollectableRow) (ChunkHit, error) {
	var h ChunkHit
	var start, end *time.Time
	c := &h.Chunk
	err := row.Scan(&c.ID, &c.SessionID, &c.Content, &c.SpeakerIDs, &start, &end, &c.EntityIDs, &h.Score)
	if start != nil {
		c.StartAt = *start
	}
	if end != nil {
		c.EndAt = *end
	}
	return h, err
}

// TextSearch ranks chunks by the question's words, any of which may match
// (unlike the session log's search, which wants all of them): each matched
// word counts by its rarity in the campaign (inverse document frequency),
// plus a little for how often it occurs. only, when not nil, restricts the
// search to those chunk ids. Best first, at most limit.
func (x *SemanticIndex) TextSearch(ctx context.Context, query string, limit int, only []string) ([]ChunkHit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty query", memory.ErrInvalid)
	}
	if limit <= 0 {
		limit = 10
	}
	rows, err := x.db.Query(ctx, `
		WITH q AS (
		    SELECT DISTINCT lexeme, quote_literal(lexeme)::tsquery AS tq FROM unnest(to_tsvector('english', $2))
		), n AS MATERIALIZED (
		    SELECT count(*)::float8 AS n FROM chunks WHERE campaign_id = $1
		), df AS MATERIALIZED (
		    -- Materialised: inlined, the document frequencies would be
		    -- counted again for every matching chunk.
		    SELECT q.tq, (SELECT count(*) FROM chunks c WHERE c.campaign_id = $1 AND c.tsv @@ q.tq)::float8 AS df FROM q
		), scored AS (
		    SELECT c.id, sum(ln(1 + (n.n - df.df + 0.5) / (df.df + 0.5)))
		           + 0.1 * ts_rank(c.tsv, (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery FROM q), 1) AS score
		    FROM chunks c CROSS JOIN n JOIN df ON c.tsv @@ df.tq
		    WHERE c.campaign_id = $1 AND df.df > 0 AND ($4::text[] IS NULL OR c.id = ANY($4))
		    GROUP BY c.id, c.tsv
		    ORDER BY score DESC, c.id
		    LIMIT $3
		)
		SELECT `+hitSelect+`, s.score FROM scored s JOIN chunks c ON c.campaign_id = $1 AND c.id = s.id
		ORDER BY s.score DESC, c.id`, x.campaign, query, limit, only)
	if err != nil {
		return nil, fmt.Errorf("full-text search of chunks for %q: %w", query, err)
	}
	return pgx.CollectRows(rows, scanHit)
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
	if only == nil {
		rs, err := x.Search(ctx, embedding, limit, memory.ChunkFilter{})
		if err != nil {
			return nil, err
		}
		out := make([]ChunkHit, len(rs))
		for i, r := range rs {
			r.Chunk.Embedding = nil
			out[i] = ChunkHit{Chunk: r.Chunk, Score: 1 - r.Distance}
		}
		return out, nil
	}
	rows, err := x.db.Query(ctx, `SELECT `+hitSelect+`, 1 - (c.embedding <=> $2) FROM chunks c
		WHERE c.campaign_id = $1 AND c.embedding IS NOT NULL AND c.id = ANY($3)
		ORDER BY (c.embedding <=> $2) + 0, c.id LIMIT $4`, x.campaign, pgvector.NewVector(embedding), only, limit)
	if err != nil {
		return nil, fmt.Errorf("searching the semantic index: %w", err)
	}
	return pgx.CollectRows(rows, scanHit)
}

// ChunksByID returns the chunks with the given ids (without embeddings), in
// the order of ids; ids that do not exist are left out.
func (x *SemanticIndex) ChunksByID(ctx context.Context, ids []string) ([]memory.Chunk, error) {
	rows, err := x.db.Query(ctx, `SELECT `+hitSelect+`, array_position($2::text[], c.id)::float8 FROM chunks c
		WHERE c.campaign_id = $1 AND c.id = ANY($2) ORDER BY array_position($2::text[], c.id)`, x.campaign, nonNil(ids))
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
// sessions it spoke in that lie within HeardWindow of one of its lines.
func (x *SemanticIndex) HeardChunks(ctx context.Context, npcID string) ([]string, error) {
	rows, err := x.db.Query(ctx, `
		SELECT c.id FROM chunks c
		WHERE c.campaign_id = $1 AND EXISTS (
		    SELECT 1 FROM transcript_entries t
		    WHERE t.campaign_id = $1 AND t.session_id = c.session_id AND t.npc_id = $2 AND NOT t.noncanon
		      AND t.at BETWEEN coalesce(c.start_at, t.at) - $3::interval AND coalesce(c.end_at, c.start_at, t.at) + $3::interval)
		ORDER BY c.id`, x.campaign, npcID, HeardWindow)
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
	// Change is the last graph change seen.
	Change int64
	// ChunksAt is the newest chunk update seen.
	ChunksAt time.Time
}

// LoadGraph streams the campaign's retrieval graph to fn: every active
// relationship and every chunk-entity link. The cursor it returns lets
// [Campaign.GraphChanges] pick up later writes.
func (c *Campaign) LoadGraph(ctx context.Context, fn func(GraphEdge) error) (GraphCursor, error) {
	var cur GraphCursor
	db := c.l1.db
	// Read the cursor first: a write racing with the load shows up again
	// in the next refresh, and applying an edge twice is harmless.
	if err := db.QueryRow(ctx, `SELECT coalesce((SELECT max(id) FROM graph_changes WHERE campaign_id = $1), 0),
		coalesce((SELECT max(updated_at) FROM chunks WHERE campaign_id = $1), 'epoch')`, c.id).Scan(&cur.Change, &cur.ChunksAt); err != nil {
		return cur, fmt.Errorf("reading the graph cursor: %w", err)
	}
	var e GraphEdge
	rows, err := db.Query(ctx, `SELECT id, source_id, target_id, confidence FROM relationships
		WHERE campaign_id = $1 AND status = 'active'`, c.id)
	if err != nil {
		return cur, fmt.Errorf("loading relationships: %w", err)
	}
	e.Kind = EdgeFact
	if _, err := pgx.ForEachRow(rows, []any{&e.FactID, &e.From, &e.To, &e.Weight}, func() error { return fn(e) }); err != nil {
		return cur, fmt.Errorf("loading relationships: %w", err)
	}
	rows, err = db.Query(ctx, `SELECT entity_id, chunk_id FROM chunk_entities WHERE campaign_id = $1`, c.id)
	if err != nil {
		return cur, fmt.Errorf("loading chunk links: %w", err)
	}
	e = GraphEdge{Kind: EdgeMention, Weight: 1}
	if _, err := pgx.ForEachRow(rows, []any{&e.From, &e.To}, func() error { return fn(e) }); err != nil {
		return cur, fmt.Errorf("loading chunk links: %w", err)
	}
	return cur, nil
}

// GraphChanges streams to fn what changed in the retrieval graph since cur:
// for each changed relationship its current edge, or its removal; for each
// re-indexed chunk the removal of its mention edges followed by the current
// ones. Chunks deleted outright are not reported; readers drop them when
// they fail to load. It returns the new cursor.
func (c *Campaign) GraphChanges(ctx context.Context, cur GraphCursor, fn func(GraphEdge) error) (GraphCursor, error) {
	db := c.l1.db
	next := cur
	rows, err := db.Query(ctx, `SELECT id, ref FROM graph_changes WHERE campaign_id = $1 AND id > $2 AND kind = 'fact' ORDER BY id`,
		c.id, cur.Change)
	if err != nil {
		return cur, fmt.Errorf("reading graph changes: %w", err)
	}
	var facts []int64
	seen := map[int64]bool{}
	var id int64
	var ref string
	if _, err := pgx.ForEachRow(rows, []any{&id, &ref}, func() error {
		next.Change = id
		if f, err := strconv.ParseInt(ref, 10, 64); err == nil && !seen[f] {
			seen[f] = true
			facts = append(facts, f)
		}
		return nil
	}); err != nil {
		return cur, fmt.Errorf("reading graph changes: %w", err)
	}
	if err := db.QueryRow(ctx, `SELECT coalesce(max(id), $2) FROM graph_changes WHERE campaign_id = $1`, c.id, next.Change).
		Scan(&next.Change); err != nil {
		return cur, fmt.Errorf("reading graph changes: %w", err)
	}
	if len(facts) > 0 {
		rows, err := db.Query(ctx, `SELECT f.id, coalesce(r.source_id, ''), coalesce(r.target_id, ''), coalesce(r.confidence, 0),
			coalesce(r.status = 'active', false)
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
	rows, err = db.Query(ctx, `SELECT c.id, c.updated_at, coalesce(array_agg(ce.entity_id) FILTER (WHERE ce.entity_id IS NOT NULL), '{}')
		FROM chunks c LEFT JOIN chunk_entities ce ON ce.campaign_id = c.campaign_id AND ce.chunk_id = c.id
		WHERE c.campaign_id = $1 AND c.updated_at >= $2
		GROUP BY c.id, c.updated_at`, c.id, cur.ChunksAt)
	if err != nil {
		return cur, fmt.Errorf("reading changed chunks: %w", err)
	}
	var chunkID string
	var at time.Time
	var ents []string
	if _, err := pgx.ForEachRow(rows, []any{&chunkID, &at, &ents}, func() error {
		if at.After(next.ChunksAt) {
			next.ChunksAt = at
		}
		if err := fn(GraphEdge{Kind: EdgeMention, To: chunkID, Removed: true}); err != nil {
			return err
		}
		for _, ent := range ents {
			if err := fn(GraphEdge{Kind: EdgeMention, From: ent, To: chunkID, Weight: 1}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return cur, fmt.Errorf("reading changed chunks: %w", err)
	}
	return next, nil
}
