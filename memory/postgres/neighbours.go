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
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
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
	if err != nil {
		return nil, fmt.Errorf("reading the chunks before %d chunks: %w", len(ids), err)
	}
	var id, prev string
	if _, err := pgx.ForEachRow(rows, []any{&id, &prev}, func() error {
		out[id] = prev
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading the chunks before %d chunks: %w", len(ids), err)
	}
	return out, nil
}
