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

// SemanticIndex is the L2 semantic index of one campaign: transcript chunks
// with embeddings in an HNSW cosine index.
type SemanticIndex struct {
	db       querier
	campaign string
	dims     int
	// exactChunks is the largest campaign searched exactly (nearest).
	exactChunks int
	view        view // who reads: a player reads only the chunks whose every line they may read (view.chunkVisible)
}

// VisibleChunks returns the ids of the chunks the handle's viewer may read,
// in id order, or nil when it reads every chunk (the DM, the system, an
// NPC, a player of a campaign whose party was never split) (see
// [view.chunkVisible]). The searches do not list them: they leave out the
// few a player may not read (view.deniedCTEs).
func (x *SemanticIndex) VisibleChunks(ctx context.Context) ([]string, error) {
	if x.view.v.Role != memory.RolePlayer {
		return nil, nil
	}
	var split bool
	if err := x.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM session_presence WHERE campaign_id = $1 AND split)`,
		x.campaign).Scan(&split); err != nil {
		return nil, fmt.Errorf("listing the chunks %s may read: %w", x.view.v, err)
	}
	if !split {
		return nil, nil
	}
	rows, err := x.db.Query(ctx, x.view.visibleChunksSQL(), x.campaign, nil)
	if err != nil {
		return nil, fmt.Errorf("listing the chunks %s may read: %w", x.view.v, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if ids == nil && err == nil {
		ids = []string{}
	}
	return ids, err
}

// Dimensions is the embedding dimension of the index.
func (x *SemanticIndex) Dimensions() int { return x.dims }

func (x *SemanticIndex) checkEmbedding(v []float32, what string) error {
	if v != nil && len(v) != x.dims {
		return fmt.Errorf("%w: %s has %d dimensions, the index has %d", memory.ErrInvalid, what, len(v), x.dims)
	}
	return nil
}

// IndexChunks upserts chunks by id, creating their sessions if needed and
// replacing their entity links, in one transaction. A chunk listed twice
// is written as its last listing. The chunks go in as one statement per
// table for up to indexBatch chunks at a time, not one per chunk, so the
// statistics and postings triggers on chunks (migrations 0008, 0013, 0027)
// run once per batch: a session's chunks cost a few trigger runs, not one
// per chunk, and no statement grows with the session.
func (x *SemanticIndex) IndexChunks(ctx context.Context, cs []memory.Chunk) error {
	for i, c := range cs {
		if strings.TrimSpace(c.ID) == "" || strings.TrimSpace(c.SessionID) == "" {
			return fmt.Errorf("%w: chunk %d needs an id and a session id", memory.ErrInvalid, i)
		}
		if err := x.checkEmbedding(c.Embedding, fmt.Sprintf("the embedding of chunk %q", c.ID)); err != nil {
			return err
		}
	}
	if len(cs) == 0 {
		return nil
	}
	// Sessions are created in the order of their first chunk, from that
	// chunk's start (or now), as writing the chunks one by one did.
	var sessIDs []string
	var sessStarts []time.Time
	seenSession := map[string]bool{}
	last := map[string]int{}
	for i, c := range cs {
		last[c.ID] = i
		if !seenSession[c.SessionID] {
			seenSession[c.SessionID] = true
			start := c.StartAt
			if start.IsZero() {
				start = time.Now()
			}
			sessIDs = append(sessIDs, c.SessionID)
			sessStarts = append(sessStarts, start)
		}
	}
	// One row per chunk id (its last listing), in the order given.
	uniq := make([]memory.Chunk, 0, len(last))
	for i, c := range cs {
		if last[c.ID] == i {
			uniq = append(uniq, c)
		}
	}
	return pgx.BeginFunc(ctx, x.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO sessions (campaign_id, id, started_at)
			SELECT $1, u.id, u.started_at FROM unnest($2::text[], $3::timestamptz[]) WITH ORDINALITY AS u(id, started_at, ord)
			ORDER BY u.ord
			ON CONFLICT (campaign_id, id) DO NOTHING`, x.campaign, sessIDs, sessStarts); err != nil {
			return fmt.Errorf("indexing %d chunks (their sessions): %w", len(uniq), err)
		}
		for from := 0; from < len(uniq); from += indexBatch {
			if err := x.writeBatch(ctx, tx, uniq[from:min(from+indexBatch, len(uniq))]); err != nil {
				return err
			}
		}
		return nil
	})
}

// indexBatch is how many chunks one statement of IndexChunks writes. A
// statement is bounded by the door's statement timeout, and its time grows
// with its chunks (the HNSW index and the postings triggers work per row):
// a whole five-hour session in one statement, as a first chunking of an
// imported session writes it, came near the 10 s bound on a loaded machine
// (2,500 chunks took 14 s). At that rate 250 chunks take about a second
// and a half, and a session still costs few trigger runs.
const indexBatch = 250

// writeBatch writes cs, each chunk id once, within tx: the chunks, then
// their entity links, one batch of statements.
func (x *SemanticIndex) writeBatch(ctx context.Context, tx pgx.Tx, cs []memory.Chunk) error {
	// A chunk's speakers and entities are slices [from:to] (1-based,
	// inclusive; from > to: none) of one flat array each, since SQL arrays
	// of arrays must be rectangular.
	n := len(cs)
	ids := make([]string, 0, n)
	sessions := make([]string, 0, n)
	contents := make([]string, 0, n)
	embs := make([]*pgvector.Vector, 0, n)
	starts := make([]*time.Time, 0, n)
	ends := make([]*time.Time, 0, n)
	var speakers, entities []string
	var spFrom, spTo, entFrom, entTo []int32
	for _, c := range cs {
		ids = append(ids, c.ID)
		sessions = append(sessions, c.SessionID)
		contents = append(contents, c.Content)
		var emb *pgvector.Vector
		if c.Embedding != nil {
			v := pgvector.NewVector(c.Embedding)
			emb = &v
		}
		embs = append(embs, emb)
		starts = append(starts, nullTime(c.StartAt))
		ends = append(ends, nullTime(c.EndAt))
		spFrom = append(spFrom, int32(len(speakers)+1))
		speakers = append(speakers, c.SpeakerIDs...)
		spTo = append(spTo, int32(len(speakers)))
		entFrom = append(entFrom, int32(len(entities)+1))
		entities = append(entities, c.EntityIDs...)
		entTo = append(entTo, int32(len(entities)))
	}
	speakers, entities = nonNil(speakers), nonNil(entities)
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO chunks (campaign_id, id, session_id, content, embedding, speaker_ids, start_at, end_at)
		SELECT $1, u.id, u.session_id, u.content, u.embedding, ($6::text[])[u.sp_from:u.sp_to], u.start_at, u.end_at
		FROM unnest($2::text[], $3::text[], $4::text[], $5::vector[], $7::int[], $8::int[], $9::timestamptz[], $10::timestamptz[])
		    WITH ORDINALITY AS u(id, session_id, content, embedding, sp_from, sp_to, start_at, end_at, ord)
		ORDER BY u.ord
		ON CONFLICT (campaign_id, id) DO UPDATE SET
		    session_id = excluded.session_id, content = excluded.content, embedding = excluded.embedding,
		    speaker_ids = excluded.speaker_ids, start_at = excluded.start_at, end_at = excluded.end_at,
		    updated_at = now()`,
		x.campaign, ids, sessions, contents, embs, speakers, spFrom, spTo, starts, ends)
	b.Queue(`DELETE FROM chunk_entities ce USING unnest($2::text[], $4::int[], $5::int[]) AS u(id, ent_from, ent_to)
		WHERE ce.campaign_id = $1 AND ce.chunk_id = u.id AND ce.entity_id <> ALL(($3::text[])[u.ent_from:u.ent_to])`,
		x.campaign, ids, entities, entFrom, entTo)
	b.Queue(`INSERT INTO chunk_entities (campaign_id, chunk_id, entity_id)
		SELECT $1, u.id, e.id FROM unnest($2::text[], $4::int[], $5::int[]) WITH ORDINALITY AS u(id, ent_from, ent_to, ord)
		JOIN entities e ON e.campaign_id = $1 AND e.id = ANY(($3::text[])[u.ent_from:u.ent_to])
		ORDER BY u.ord, e.id
		ON CONFLICT DO NOTHING`, x.campaign, ids, entities, entFrom, entTo)
	br := tx.SendBatch(ctx, b)
	for _, what := range []string{"the chunks", "their old entity links", "their entity links"} {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return fmt.Errorf("indexing %d chunks (%s): %w", n, what, err)
		}
	}
	return br.Close()
}

// SetEmbeddings stores embeddings for existing chunks (by id).
func (x *SemanticIndex) SetEmbeddings(ctx context.Context, embeddings map[string][]float32) error {
	b := &pgx.Batch{}
	ids := make([]string, 0, len(embeddings))
	for id, v := range embeddings {
		if err := x.checkEmbedding(v, fmt.Sprintf("the embedding of chunk %q", id)); err != nil {
			return err
		}
		b.Queue(`UPDATE chunks SET embedding = $3, updated_at = now() WHERE campaign_id = $1 AND id = $2`,
			x.campaign, id, pgvector.NewVector(v))
		ids = append(ids, id)
	}
	return pgx.BeginFunc(ctx, x.db, func(tx pgx.Tx) error {
		br := tx.SendBatch(ctx, b)
		for _, id := range ids {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return fmt.Errorf("storing the embedding of chunk %q: %w", id, err)
			}
			if tag.RowsAffected() == 0 {
				br.Close()
				return fmt.Errorf("storing the embedding of chunk %q: %w", id, memory.ErrNotFound)
			}
		}
		return br.Close()
	})
}

// Chunks returns the chunks of a session in time order, with their entity
// links the viewer may see (embeddings are not loaded).
func (x *SemanticIndex) Chunks(ctx context.Context, sessionID string) ([]memory.Chunk, error) {
	rows, err := x.db.Query(ctx, `
		SELECT c.id, c.session_id, c.content, NULL::vector, c.speaker_ids, c.start_at, c.end_at,
		       `+x.view.chunkEntityIDs("c")+`
		FROM chunks c WHERE c.campaign_id = $1 AND ($2 = '' OR c.session_id = $2) AND `+x.view.chunkVisible("c")+`
		ORDER BY c.start_at, c.id`, x.campaign, sessionID)
	if err != nil {
		return nil, fmt.Errorf("listing chunks: %w", err)
	}
	return pgx.CollectRows(rows, scanChunk)
}

// EmbeddedChunkIDs returns the ids of a session's chunks that have an
// embedding, in no order.
func (x *SemanticIndex) EmbeddedChunkIDs(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := x.db.Query(ctx, `SELECT id FROM chunks WHERE campaign_id = $1 AND session_id = $2 AND embedding IS NOT NULL`,
		x.campaign, sessionID)
	if err != nil {
		return nil, fmt.Errorf("listing the embedded chunks of session %q: %w", sessionID, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ChunkIDs returns the ids of a session's chunks, in no order.
func (x *SemanticIndex) ChunkIDs(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := x.db.Query(ctx, `SELECT id FROM chunks WHERE campaign_id = $1 AND session_id = $2`, x.campaign, sessionID)
	if err != nil {
		return nil, fmt.Errorf("listing the chunks of session %q: %w", sessionID, err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// UnembeddedChunks returns up to limit chunks that have no embedding yet.
func (x *SemanticIndex) UnembeddedChunks(ctx context.Context, limit int) ([]memory.Chunk, error) {
	rows, err := x.db.Query(ctx, `
		SELECT c.id, c.session_id, c.content, NULL::vector, c.speaker_ids, c.start_at, c.end_at, '{}'::text[]
		FROM chunks c WHERE c.campaign_id = $1 AND c.embedding IS NULL
		ORDER BY c.session_id, c.start_at, c.id LIMIT $2`, x.campaign, limit)
	if err != nil {
		return nil, fmt.Errorf("listing chunks without embeddings: %w", err)
	}
	return pgx.CollectRows(rows, scanChunk)
}

// deleteSessionChunksSQL deletes the chunks of session $2 not in $3. The
// ids kept are joined as a set (a hash anti join): `id <> ALL($3)` compared
// every chunk of the session with every id kept, which the live chunker
// sends on every beat, so each beat's delete grew with the square of the
// session's length (150 ms at 2,500 chunks).
const deleteSessionChunksSQL = `DELETE FROM chunks c WHERE c.campaign_id = $1 AND c.session_id = $2
	AND NOT EXISTS (SELECT 1 FROM unnest($3::text[]) AS k(id) WHERE k.id = c.id)`

// DeleteSessionChunks removes every chunk of a session except those in keep,
// and reports how many it removed.
func (x *SemanticIndex) DeleteSessionChunks(ctx context.Context, sessionID string, keep []string) (int64, error) {
	tag, err := x.db.Exec(ctx, deleteSessionChunksSQL, x.campaign, sessionID, nonNil(keep))
	if err != nil {
		return 0, fmt.Errorf("deleting chunks of session %q: %w", sessionID, err)
	}
	return tag.RowsAffected(), nil
}

func scanChunk(row pgx.CollectableRow) (memory.Chunk, error) {
	var c memory.Chunk
	var emb *pgvector.Vector
	var start, end *time.Time
	err := row.Scan(&c.ID, &c.SessionID, &c.Content, &emb, &c.SpeakerIDs, &start, &end, &c.EntityIDs)
	if emb != nil {
		c.Embedding = emb.Slice()
	}
	if start != nil {
		c.StartAt = *start
	}
	if end != nil {
		c.EndAt = *end
	}
	return c, err
}

// chunkFilterSQL is the WHERE clause of a filtered L2 search; $1 is the
// campaign and $3..$7 the filter fields.
const chunkFilterSQL = `c.campaign_id = $1 AND c.embedding IS NOT NULL
	AND ($3 = '' OR c.session_id = $3)
	AND ($4 = '' OR $4 = ANY(c.speaker_ids))
	AND ($5 = '' OR EXISTS (SELECT 1 FROM chunk_entities ce WHERE ce.campaign_id = c.campaign_id AND ce.chunk_id = c.id AND ce.entity_id = $5))
	AND ($6::timestamptz IS NULL OR c.start_at > $6)
	AND ($7::timestamptz IS NULL OR c.start_at < $7)`

// Search returns up to topK chunks nearest to embedding by cosine distance.
// A search by an entity the viewer may not see ([view.entityVisible])
// finds nothing, as one by an unknown id, and a chunk lists only the
// entities the viewer may see ([view.chunkEntityIDs]).
//
// The HNSW index is scanned with pgvector's iterative scan, so a filter that
// matches few chunks (one session among hundreds, or one campaign among
// many) keeps scanning until topK matches are found. If the iterative scan
// still comes back short (it gives up after hnsw.max_scan_tuples), an exact
// search over the filtered rows fills in (see [nearest]).
func (x *SemanticIndex) Search(ctx context.Context, embedding []float32, topK int, f memory.ChunkFilter) ([]memory.ChunkResult, error) {
	if err := x.checkEmbedding(embedding, "the query embedding"); err != nil {
		return nil, err
	}
	if embedding == nil {
		return nil, fmt.Errorf("%w: empty query embedding", memory.ErrInvalid)
	}
	if topK <= 0 {
		return nil, nil
	}
	selectSQL := `SELECT c.id, c.session_id, c.content, c.embedding, c.speaker_ids, c.start_at, c.end_at,
		       ` + x.view.chunkEntityIDs("c") + `,
		       (c.embedding <=> $2) + 0 AS distance
		FROM chunks c WHERE ` + chunkFilterSQL + ` AND ` + x.view.chunkVisible("c") + `
		  AND ($5 = '' OR EXISTS (SELECT 1 FROM entities fe WHERE fe.campaign_id = c.campaign_id AND fe.id = $5 AND ` +
		x.view.entityVisible("fe") + `))`
	results, err := nearest(ctx, x.db, x.exactChunks, selectSQL, "distance", []any{x.campaign, pgvector.NewVector(embedding), f.SessionID, f.SpeakerID,
		f.EntityID, nullTime(f.After), nullTime(f.Before)}, topK, scanChunkResult)
	if err != nil {
		return nil, fmt.Errorf("searching the semantic index: %w", err)
	}
	return results, nil
}

// nearest returns up to limit rows of selectSQL, a query over chunks c
// whose $1 is the campaign and $2 the query vector, nearest to it first:
// the one nearest-chunk search of [SemanticIndex.Search] and
// [SemanticIndex.VectorSearch]. limit becomes the argument after args.
//
// Exact while the campaign has at most exactChunks chunks
// ([WithExactSearch]; by default [exactSearchFloats] embedding
// components): every chunk's distance, ties by chunk id, so the same data
// and question give the same chunks in the same order. The HNSW graph
// cannot promise that: its levels are drawn at random as rows are indexed,
// so two imports of one file build two graphs, and on the offline
// embedder's vectors (hashed words, near-orthogonal) its search misses
// many true neighbours. On the held-out epic corpus (4,026 chunks, 478
// questions) a search of 30 with pgvector's default ef_search of 40
// missed 2,700–2,800 of the 14,340 exact neighbours; in some builds the
// vector mode lost a quarter of its recall@10 (.40 to .31), and two
// imports side by side ranked differently.
//
// Larger campaigns are searched approximately: the HNSW index with
// pgvector's iterative scan (0.8 or newer) in strict order, so a filter
// that matches few of the chunks the index holds together (one session
// among hundreds, one campaign among many) keeps scanning until limit rows
// match, with ef_search at least 100 and twice limit (pgvector returns at
// most ef_search rows a scan; on epic 100 missed a third as many
// neighbours as 40, for twice the time). The settings are made local to
// the batch's implicit transaction by set_config, in the round trip of the
// query, rather than by BEGIN, SET LOCAL and COMMIT (inside a caller's
// transaction they last to that transaction's end, as SET LOCAL in a
// savepoint does); the approximate query is gated on the campaign's size
// in the same statement. Exact when that returns short (a small campaign;
// or the scan gave up after hnsw.max_scan_tuples, or fewer rows match):
// ordering by an expression the index cannot serve forces a scan of the
// filtered rows through the btree indexes. The exact search orders by
// exactOrder, an output column of selectSQL that holds the distance
// (ascending, or "score DESC" for a similarity 1 - distance) in an
// expression the index cannot serve, so the distance is computed once a
// row rather than again for ORDER BY.
func nearest[T any](ctx context.Context, db querier, exactChunks int, selectSQL, exactOrder string, args []any, limit int,
	scan pgx.RowToFunc[T]) ([]T, error) {
	args = append(args, limit)
	limitArg := fmt.Sprintf(" LIMIT $%d", len(args))
	large := fmt.Sprintf(` AND (SELECT coalesce(max(chunks), 0) FROM chunk_counts WHERE campaign_id = $1) > %d`, exactChunks)
	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('hnsw.iterative_scan', 'strict_order', true), set_config('hnsw.ef_search', $1, true)`,
		strconv.Itoa(min(max(100, 2*limit), 1000)))
	b.Queue(selectSQL+large+` ORDER BY c.embedding <=> $2`+limitArg, args...)
	res := db.SendBatch(ctx, b)
	var setting, ef string
	if err := res.QueryRow().Scan(&setting, &ef); err != nil {
		res.Close()
		return nil, fmt.Errorf("enabling iterative index scans (pgvector 0.8 or newer is required): %w", err)
	}
	rows, err := res.Query()
	if err != nil {
		res.Close()
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scan)
	if cerr := res.Close(); err == nil {
		err = cerr
	}
	if err != nil || len(out) >= limit {
		return out, err
	}
	rows, err = db.Query(ctx, selectSQL+` ORDER BY `+exactOrder+`, c.id`+limitArg, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scan)
}

// exactSearchFloats is how many embedding components (chunks times
// dimensions) an exact nearest-chunk search reads at most: 10,416 chunks
// at the offline embedder's 384 dimensions (about six months of weekly
// four-hour sessions), 2,604 at 1,536. Read from rows that hold their
// embedding inline (migration 0043), an exact search of 4,000 chunks of
// 384 dimensions took 3 ms here, so this bounds the DM's near 8 ms, about
// what the approximate search costs at 100,000 chunks with its ef_search
// of 100 (7 ms). A player's costs more where the party was split: every
// chunk's visibility is checked, not only the nearest ones' (10,000
// chunks, a split scene in every session: 33 ms for a player not bound
// to a user, 7 ms through the index; a bound player's is 90–100 ms
// either way).
const exactSearchFloats = 4_000_000

// search runs a search's query sql and passes its rows to fn. (The
// store's connections run without JIT compilation, see [NewStore]: a
// player's filter of the chunks they may not read, view.deniedCTEs, is
// estimated dear in a campaign with many split scenes, and compiling took
// 30 to 290 ms of queries that ran in 40 to 450 ms.)
func (x *SemanticIndex) search(ctx context.Context, sql string, args []any, fn func(pgx.Rows) error) error {
	rows, err := x.db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := fn(rows); err != nil {
		return err
	}
	return rows.Err()
}

// searchHits is search collecting chunk hits.
func (x *SemanticIndex) searchHits(ctx context.Context, sql string, args ...any) ([]ChunkHit, error) {
	var hits []ChunkHit
	err := x.search(ctx, sql, args, func(rows pgx.Rows) error {
		var err error
		hits, err = pgx.CollectRows(rows, scanHit)
		return err
	})
	return hits, err
}

func scanChunkResult(row pgx.CollectableRow) (memory.ChunkResult, error) {
	var r memory.ChunkResult
	var emb *pgvector.Vector
	var start, end *time.Time
	err := row.Scan(&r.Chunk.ID, &r.Chunk.SessionID, &r.Chunk.Content, &emb, &r.Chunk.SpeakerIDs, &start, &end,
		&r.Chunk.EntityIDs, &r.Distance)
	if emb != nil {
		r.Chunk.Embedding = emb.Slice()
	}
	if start != nil {
		r.Chunk.StartAt = *start
	}
	if end != nil {
		r.Chunk.EndAt = *end
	}
	return r, err
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
