package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// HeardWindow is how long before and after its own lines an NPC is taken to
// have been listening.
const HeardWindow = 10 * time.Minute

// npcSpokeCTE is the common table spoke: the session and time of each
// canon line NPC $2 of campaign $1 spoke (transcript_entries_npc,
// migration 0034). What an NPC heard is what was said in the same session
// within HeardWindow of one of these: [SessionLog.SearchHeard] and
// [SemanticIndex.HeardChunks] both start from them. A line the DM struck
// from the record (non-canon) did not happen, and neither did the NPC's
// presence it implied.
const npcSpokeCTE = `spoke AS MATERIALIZED (
		    SELECT session_id, at FROM transcript_entries
		    WHERE campaign_id = $1 AND npc_id = $2 AND npc_id <> '' AND NOT noncanon
		)`

// SearchHeard searches, by full text, only the transcript lines an NPC
// heard: its own canon lines and what was said in the same session within
// HeardWindow of them (npcSpokeCTE). Best ranked first.
//
// Of those, only the lines any player may read (publicLineSQL): not one
// said while the DM had split the party, its own included. The window
// cannot tell which scene the NPC was in, and what the NPC's model is
// given the player talking to it hears; an NPC that was in the scene has
// what it witnessed there from its witness log (lifecycle/witness) while
// the session lasts.
func (l *SessionLog) SearchHeard(ctx context.Context, npcID, query string, limit int) ([]memory.EntryHit, error) {
	if err := memory.CheckQuery(query); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty search query", memory.ErrInvalid)
	}
	if limit <= 0 {
		limit = 10
	}
	rows, err := l.db.Query(ctx, `
		WITH q AS (SELECT websearch_to_tsquery(coalesce((SELECT text_config FROM campaigns WHERE id = $1), 'english'::regconfig), $3) AS q),
		`+npcSpokeCTE+`
		SELECT t.id, t.session_id, t.speaker_id, t.speaker_name, t.npc_id, t.text, t.raw_text, t.at, t.duration_ms,
		       coalesce(t.idempotency_key, ''), t.noncanon, ts_rank(t.tsv, q.q)
		FROM transcript_entries t, q
		WHERE t.campaign_id = $1 AND t.tsv @@ q.q AND NOT t.noncanon AND `+publicLineSQL+`
		  AND EXISTS (SELECT 1 FROM spoke s WHERE s.session_id = t.session_id
		              AND t.at BETWEEN s.at - $4::interval AND s.at + $4::interval)
		ORDER BY 12 DESC, t.at DESC
		LIMIT $5`, l.campaign, npcID, query, HeardWindow, limit)
	if err != nil {
		return nil, fmt.Errorf("searching what %q heard: %w", npcID, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.EntryHit, error) {
		var h memory.EntryHit
		var ms int32
		var rank float32
		err := row.Scan(&h.Entry.ID, &h.Entry.SessionID, &h.Entry.SpeakerID, &h.Entry.SpeakerName, &h.Entry.NPCID,
			&h.Entry.Text, &h.Entry.RawText, &h.Entry.At, &ms, &h.Entry.IdempotencyKey, &h.Entry.NonCanon, &rank)
		h.Entry.Duration = time.Duration(ms) * time.Millisecond
		h.Rank = float64(rank)
		return h, err
	})
}
