package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PrecedingChunks returns, for each of the chunks ids, the id of the
// nearest chunk before it in its session (by start time, then id) that
// other speakers speak in: the lines its turn answers, when a chunk
// boundary fell between a line and its reply. The chunks of one long turn,
// cut apart by the chunker, all have the same speaker, so each part of the
// turn gets the chunk before the turn began. Chunks without an earlier
// chunk of other speakers, and ids that do not exist, are left out.
func (x *SemanticIndex) PrecedingChunks(ctx context.Context, ids []string) (map[string]string, error) {
	if len(ids) == 0 {
		return map[string]string{}, nil
	}
	rows, err := x.db.Query(ctx, `
		SELECT c.id, p.id FROM chunks c
		CROSS JOIN LATERAL (
		    SELECT p.id FROM chunks p
		    WHERE p.campaign_id = c.campaign_id AND p.session_id = c.session_id
		      AND (p.start_at < c.start_at OR (p.start_at = c.start_at AND p.id < c.id))
		      AND p.speaker_ids IS DISTINCT FROM c.speaker_ids
		    ORDER BY p.start_at DESC, p.id DESC LIMIT 1) p
		WHERE c.campaign_id = $1 AND c.id = ANY($2)`, x.campaign, ids)
	return readPreceding(rows, err, len(ids))
}

// readPreceding reads the (chunk, chunk before it) rows of a query over n
// chunks into a map.
func readPreceding(rows pgx.Rows, err error, n int) (map[string]string, error) {
	if err != nil {
		return nil, fmt.Errorf("reading the chunks before %d chunks: %w", n, err)
	}
	out := make(map[string]string, n)
	var id, prev string
	if _, err := pgx.ForEachRow(rows, []any{&id, &prev}, func() error {
		out[id] = prev
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading the chunks before %d chunks: %w", n, err)
	}
	return out, nil
}

// PrecedingAmong is [SemanticIndex.PrecedingChunks] for readers that use
// a chunk's predecessor only when it is itself one of ids (a ranking's
// chunks, each inheriting from the one before its turn): for each of
// ids, the nearest chunk before it in its session that other speakers
// speak in, when that chunk is among ids; otherwise the id is left out.
// The answer equals PrecedingChunks' restricted to predecessors in ids.
//
// It costs what the ranking holds, not what the session holds: the
// nearest earlier chunk of other speakers among ids is found within ids,
// and a lookup of the chunks between the two in the session index
// (chunks_session) confirms that none of other speakers lies between.
// PrecedingChunks walks back through the session until it meets another
// speaker, which in a session of one speaker set (or a long monologue)
// is the whole session before the chunk: 270 rows read per chunk, 13 ms
// of the database's time per hybrid question, in the 100k bench campaign.
func (x *SemanticIndex) PrecedingAmong(ctx context.Context, ids []string) (map[string]string, error) {
	if len(ids) < 2 {
		return map[string]string{}, nil
	}
	rows, err := x.db.Query(ctx, `
		WITH d AS MATERIALIZED (
		    SELECT c.id, c.session_id, c.start_at, c.speaker_ids FROM chunks c
		    WHERE c.campaign_id = $1 AND c.id = ANY($2) AND c.start_at IS NOT NULL
		)
		SELECT c.id, p.id FROM d c
		CROSS JOIN LATERAL (
		    SELECT p.id, p.start_at FROM d p
		    WHERE p.session_id = c.session_id
		      AND (p.start_at < c.start_at OR (p.start_at = c.start_at AND p.id < c.id))
		      AND p.speaker_ids IS DISTINCT FROM c.speaker_ids
		    ORDER BY p.start_at DESC, p.id DESC LIMIT 1) p
		WHERE NOT EXISTS (
		    SELECT 1 FROM chunks b
		    WHERE b.campaign_id = $1 AND b.session_id = c.session_id
		      AND b.start_at >= p.start_at AND b.start_at <= c.start_at
		      AND (b.start_at > p.start_at OR b.id > p.id)
		      AND (b.start_at < c.start_at OR b.id < c.id)
		      AND b.speaker_ids IS DISTINCT FROM c.speaker_ids)`, x.campaign, ids)
	return readPreceding(rows, err, len(ids))
}
