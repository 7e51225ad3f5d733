package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// FactQuery finds facts by the names of their ends, for pickers.
type FactQuery struct {
	// Statuses restricts the facts (default: active and pending).
	Statuses []memory.FactStatus
	// Text matches the source or target name, an alias, the type, or the
	// fact id ("#12" or "12").
	Text string
	// EntityIDs, when not nil, restricts the facts to those with an end
	// among them (found through the indexes of both ends, not by reading
	// the campaign's facts).
	EntityIDs []string
	Limit     int
}

// FactWithNames is a fact with the display names of its ends.
type FactWithNames struct {
	memory.Relationship
	SourceName, TargetName string
}

// FindFacts lists facts matching q, newest first.
func (g *Graph) FindFacts(ctx context.Context, q FactQuery) ([]FactWithNames, error) {
	if err := memory.CheckQuery(q.Text); err != nil {
		return nil, fmt.Errorf("finding facts: %w", err)
	}
	statuses := make([]string, 0, len(q.Statuses))
	for _, s := range q.Statuses {
		statuses = append(statuses, string(s))
	}
	if len(statuses) == 0 {
		statuses = []string{string(memory.StatusActive), string(memory.StatusPending)}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 25
	}
	text := strings.TrimPrefix(strings.TrimSpace(q.Text), "#")
	// By entity: the facts of those ends alone, a query of its own so that
	// its plan is the ends' indexes (a catch-all's generic plan reads
	// every fact).
	ends, args := "", []any{g.campaign, statuses, text, limit}
	if q.EntityIDs != nil {
		ends = `AND r.id IN (SELECT id FROM relationships WHERE campaign_id = $1 AND source_id = ANY($5)
		      UNION SELECT id FROM relationships WHERE campaign_id = $1 AND target_id = ANY($5))`
		args = append(args, q.EntityIDs)
	}
	rows, err := g.db.Query(ctx, `
		SELECT `+g.view.relCols()+`, s.name, t.name
		FROM relationships r
		JOIN entities s ON s.campaign_id = r.campaign_id AND s.id = r.source_id
		JOIN entities t ON t.campaign_id = r.campaign_id AND t.id = r.target_id
		WHERE r.campaign_id = $1 AND r.status = ANY($2) AND `+g.view.factVisible("r")+` `+ends+`
		  AND ($3 = '' OR r.id::text = $3
		       OR strpos(lower(s.name), lower($3)) > 0 OR strpos(lower(t.name), lower($3)) > 0
		       OR strpos(lower(r.rel_type), lower($3)) > 0
		       OR EXISTS (SELECT 1 FROM unnest(s.aliases || t.aliases) a WHERE strpos(lower(a), lower($3)) > 0))
		ORDER BY r.updated_at DESC, r.id DESC
		LIMIT $4`, args...)
	if err != nil {
		return nil, fmt.Errorf("finding facts: %w", err)
	}
	return pgx.CollectRows(rows, scanFactWithNames)
}

// scanFactWithNames scans relColumns and the names of the fact's ends.
func scanFactWithNames(row pgx.CollectableRow) (FactWithNames, error) {
	var f FactWithNames
	r := &f.Relationship
	var src, status string
	err := row.Scan(&r.ID, &r.SourceID, &r.TargetID, &r.Type, &r.Attributes, &r.Provenance.SessionID,
		&r.Provenance.Timestamp, &r.Provenance.Confidence, &src, &r.Provenance.DMConfirmed, &status,
		&r.ValidUntilSession, &r.CreatedAt, &r.UpdatedAt, &f.SourceName, &f.TargetName)
	r.Provenance.Source, r.Status = memory.FactSource(src), memory.FactStatus(status)
	return f, err
}

// SessionFacts returns the facts a session established as the campaign
// stood at its end (when it ended, else when the next one started, else
// now), oldest first: canon then, whether canon still or since retired,
// and, with withPending, those still waiting for review. A fact retired in
// the session itself is left out. What a recap of that session tells.
func (g *Graph) SessionFacts(ctx context.Context, sessionID string, withPending bool) ([]FactWithNames, error) {
	var at time.Time
	err := g.db.QueryRow(ctx, `SELECT coalesce(x.ended_at, (SELECT min(n.started_at) FROM sessions n
		WHERE n.campaign_id = x.campaign_id AND n.started_at > x.started_at), now())
		FROM sessions x WHERE x.campaign_id = $1 AND x.id = $2`, g.campaign, sessionID).Scan(&at)
	if isNoRows(err) {
		return nil, fmt.Errorf("facts of session %q: %w", sessionID, memory.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("facts of session %q: %w", sessionID, err)
	}
	rows, err := g.db.Query(ctx, `
		SELECT `+g.view.relCols()+`, s.name, t.name
		FROM relationships r
		JOIN entities s ON s.campaign_id = r.campaign_id AND s.id = r.source_id
		JOIN entities t ON t.campaign_id = r.campaign_id AND t.id = r.target_id
		LEFT JOIN sessions us ON us.campaign_id = r.campaign_id AND us.id = r.valid_until_session
		WHERE r.campaign_id = $1 AND r.session_id = $2 AND `+g.view.factVisible("r")+`
		  AND (r.status = 'active' OR ($4 AND r.status = 'pending')
		       OR (r.status = 'retired' AND r.valid_until_session <> $2
		           AND ((r.valid_until_session <> '' AND us.started_at >= $3)
		                OR (r.valid_until_session = '' AND coalesce(r.retired_at, r.updated_at) > $3))))
		ORDER BY r.established_at, r.id`, g.campaign, sessionID, at, withPending)
	if err != nil {
		return nil, fmt.Errorf("facts of session %q: %w", sessionID, err)
	}
	return pgx.CollectRows(rows, scanFactWithNames)
}

// Evidence returns the transcript lines a fact was extracted from, in order;
// a player's handle, those of them the player may read (see
// [view.lineVisible]).
func (g *Graph) Evidence(ctx context.Context, factID int64) ([]memory.TranscriptEntry, error) {
	rows, err := g.db.Query(ctx, `
		SELECT t.id, t.session_id, t.speaker_id, t.speaker_name, t.npc_id, t.text, t.raw_text, t.at, t.duration_ms,
		       coalesce(t.idempotency_key, ''), t.noncanon
		FROM fact_evidence fe
		JOIN transcript_entries t ON t.id = fe.entry_id
		JOIN relationships r ON r.id = fe.fact_id
		WHERE r.campaign_id = $1 AND fe.fact_id = $2 AND `+g.view.factVisible("r")+` AND `+g.view.lineVisible()+`
		ORDER BY t.at, t.id`, g.campaign, factID)
	if err != nil {
		return nil, fmt.Errorf("reading the evidence of fact %d: %w", factID, err)
	}
	return pgx.CollectRows(rows, scanEntry)
}

// ledgerKeys are the attributes of a ledger entry (lifecycle/ledger) a
// correction keeps: what, by when, the quoted line, when, and the entry key
// that keeps it apart from another between the same two (migration 0025).
var ledgerKeys = []string{"what", "due", "evidence", "said_at", "entry"}

// ReplaceFact records the DM's correction of a fact in one transaction: the
// old fact is rejected (kept for the audit trail) and the corrected one is
// stored as DM canon with the old one's provenance session, the transcript
// evidence it rests on, and a supersedes link to it saying it corrects it
// (even when the triple is unchanged).
func (g *Graph) ReplaceFact(ctx context.Context, oldID int64, corrected memory.Relationship) (memory.Relationship, error) {
	if err := g.dmOnly("correcting a fact"); err != nil {
		return memory.Relationship{}, err
	}
	var out memory.Relationship
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := &Graph{db: tx, campaign: g.campaign, threshold: g.threshold}
		old, err := tg.Fact(ctx, oldID)
		if err != nil {
			return err
		}
		if _, err := tg.RejectFact(ctx, oldID); err != nil {
			return err
		}
		if corrected.Attributes == nil {
			corrected.Attributes = map[string]any{}
		}
		// A ledger entry keeps what it is about, its quote and its key
		// (lifecycle/ledger) unless the correction says otherwise: an edit
		// of who owes whom is still that debt, apart from any other.
		for _, k := range ledgerKeys {
			if v, ok := old.Attributes[k]; ok {
				if _, set := corrected.Attributes[k]; !set {
					corrected.Attributes[k] = v
				}
			}
		}
		corrected.Attributes["corrects_fact"] = oldID
		corrected.Provenance.SessionID = old.Provenance.SessionID
		corrected.Provenance.Timestamp = old.Provenance.Timestamp
		corrected.Provenance.Confidence = 1
		corrected.Provenance.DMConfirmed = true
		if corrected.Provenance.Source == "" {
			corrected.Provenance.Source = old.Provenance.Source
		}
		reason := fmt.Sprintf("corrects fact %d", oldID)
		w, err := tg.WriteFact(ctx, memory.DM(""), corrected, reason)
		if err != nil {
			return err
		}
		out = w.Fact
		if out.ID == oldID {
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO fact_evidence (fact_id, entry_id)
			SELECT $2, entry_id FROM fact_evidence WHERE fact_id = $1 ON CONFLICT DO NOTHING`, oldID, out.ID); err != nil {
			return fmt.Errorf("keeping the evidence of fact %d: %w", oldID, err)
		}
		return tg.linkFacts(ctx, memory.FactLink{FromFact: out.ID, ToFact: oldID, Kind: memory.LinkSupersedes, Weight: 1}, reason)
	})
	if err != nil {
		return memory.Relationship{}, fmt.Errorf("correcting fact %d: %w", oldID, err)
	}
	return out, nil
}
