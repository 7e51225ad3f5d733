package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/glyphoxa/glyphoxa/memory"
)

// scopeCTE expands the scope's seed entities ($2) the viewer may see by $3
// hops along active
// edges of the types in $4 (any type when empty), and collects the chunks
// that mention an entity in scope. $1 is the campaign. The entities in
// scope are gathered into one array: the planner guesses a recursive
// CTE's rows high (hundreds), and joined to it, chunk_entities was read
// whole; an array it probes through the primary key.
func (g *Graph) scopeCTE() string {
	return `
WITH RECURSIVE scope(id, depth) AS (
    SELECT e.id, 0 FROM entities e WHERE e.campaign_id = $1 AND e.id = ANY($2::text[]) AND ` + g.view.entityVisible("e") + `
    UNION
    SELECT nb.id, s.depth + 1
    FROM scope s
    CROSS JOIN LATERAL (
        SELECT r.target_id AS id FROM relationships r
        WHERE r.campaign_id = $1 AND r.source_id = s.id AND r.status = 'active' AND ` + g.view.factVisible("r") + `
          AND (cardinality($4::text[]) = 0 OR r.rel_type = ANY($4))
        UNION
        SELECT r.source_id FROM relationships r
        WHERE r.campaign_id = $1 AND r.target_id = s.id AND r.status = 'active' AND ` + g.view.factVisible("r") + `
          AND (cardinality($4::text[]) = 0 OR r.rel_type = ANY($4))
    ) nb
    WHERE s.depth < $3
), ids AS (
    SELECT array_agg(DISTINCT id) AS a FROM scope
), candidates AS (
    SELECT DISTINCT ce.chunk_id FROM chunk_entities ce
    WHERE ce.campaign_id = $1 AND ce.entity_id = ANY((SELECT a FROM ids)::text[])
)`
}

// hitColumns are selected from the ranked hits h, with the in-scope
// entities each hit mentions.
const hitColumns = `h.id, h.session_id, h.content, h.speaker_ids, h.start_at, h.end_at, h.score,
    (SELECT coalesce(jsonb_agg(jsonb_build_object('id', e.id, 'type', e.type, 'name', e.name, 'aliases', e.aliases,
                     'attributes', ` + "glyphoxa_public_attributes(e.attributes)" + `, 'created_at', e.created_at, 'updated_at', e.public_updated_at)
                     ORDER BY e.id), '[]')
     FROM chunk_entities ce JOIN entities e ON e.campaign_id = ce.campaign_id AND e.id = ce.entity_id
     WHERE ce.campaign_id = $1 AND ce.chunk_id = h.id AND ce.entity_id = ANY((SELECT a FROM ids)::text[]))`

// scopeArgs are the parameters of scopeCTE. They begin with
// pgx.QueryExecModeExec: a GraphRAG query's best plan depends on its
// arguments (a small neighbourhood with common words, or a large one with a
// rare word), and a cached generic plan costs ten times as much at 100k
// chunks, so every call is planned for its own arguments.
func scopeArgs(campaign string, s memory.GraphScope) []any {
	return []any{pgx.QueryExecModeExec, campaign, nonNil(s.EntityIDs), max(s.Depth, 0), nonNil(s.RelTypes)}
}

// QueryWithContext finds chunks that mention an entity in the scope's
// neighbourhood and match query by full text, best ranked first, in one
// round trip.
func (g *Graph) QueryWithContext(ctx context.Context, query string, s memory.GraphScope) ([]memory.ContextResult, error) {
	if err := memory.CheckQuery(query); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty query", memory.ErrInvalid)
	}
	limit := s.Limit
	if limit <= 0 {
		limit = 10
	}
	args := append(scopeArgs(g.campaign, s), query, s.SessionID, limit)
	rows, err := g.db.Query(ctx, g.scopeCTE()+`, hits AS (
		    SELECT c.id, c.session_id, c.content, c.speaker_ids, c.start_at, c.end_at, ts_rank(c.tsv, q.q)::float8 AS score
		    FROM chunks c JOIN candidates k ON c.campaign_id = $1 AND c.id = k.chunk_id,
		         websearch_to_tsquery(coalesce((SELECT text_config FROM campaigns WHERE id = $1), 'english'::regconfig), $5) AS q(q)
		    WHERE c.tsv @@ q.q AND ($6 = '' OR c.session_id = $6) AND `+g.view.chunkVisible("c")+`
		    ORDER BY score DESC, c.start_at DESC, c.id
		    LIMIT $7
		)
		SELECT `+hitColumns+` FROM hits h ORDER BY h.score DESC, h.start_at DESC, h.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("GraphRAG text query: %w", err)
	}
	return collectContextResults(rows)
}

// QueryWithEmbedding finds the topK chunks nearest to embedding among those
// that mention an entity in the scope's neighbourhood, in one round trip.
// Score is 1 - cosine distance.
func (g *Graph) QueryWithEmbedding(ctx context.Context, embedding []float32, topK int, s memory.GraphScope) ([]memory.ContextResult, error) {
	if len(embedding) == 0 {
		return nil, fmt.Errorf("%w: empty query embedding", memory.ErrInvalid)
	}
	if topK <= 0 {
		topK = 10
	}
	args := append(scopeArgs(g.campaign, s), pgvector.NewVector(embedding), s.SessionID, topK)
	rows, err := g.db.Query(ctx, g.scopeCTE()+`, hits AS (
		    SELECT c.id, c.session_id, c.content, c.speaker_ids, c.start_at, c.end_at,
		           1 - (c.embedding <=> $5) AS score
		    FROM chunks c JOIN candidates k ON c.campaign_id = $1 AND c.id = k.chunk_id
		    WHERE c.embedding IS NOT NULL AND ($6 = '' OR c.session_id = $6) AND `+g.view.chunkVisible("c")+`
		    ORDER BY c.embedding <=> $5, c.id
		    LIMIT $7
		)
		SELECT `+hitColumns+` FROM hits h ORDER BY h.score DESC, h.id`, args...)
	if err != nil {
		if pgErr := asPgError(err); pgErr != nil && pgErr.Code == "22000" {
			return nil, fmt.Errorf("%w: GraphRAG embedding query: %v", memory.ErrInvalid, pgErr.Message)
		}
		return nil, fmt.Errorf("GraphRAG embedding query: %w", err)
	}
	return collectContextResults(rows)
}

func collectContextResults(rows pgx.Rows) ([]memory.ContextResult, error) {
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.ContextResult, error) {
		var r memory.ContextResult
		var start, end *time.Time
		var ents []byte
		c := &r.Chunk
		if err := row.Scan(&c.ID, &c.SessionID, &c.Content, &c.SpeakerIDs, &start, &end, &r.Score, &ents); err != nil {
			return r, err
		}
		if start != nil {
			c.StartAt = *start
		}
		if end != nil {
			c.EndAt = *end
		}
		ej, err := decodeJSON[[]entityJSON](ents, "GraphRAG entities")
		if err != nil {
			return r, err
		}
		for _, e := range ej {
			r.Entities = append(r.Entities, e.entity())
			c.EntityIDs = append(c.EntityIDs, e.ID)
		}
		return r, nil
	})
}
