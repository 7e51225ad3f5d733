package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// FactQuery finds facts by the names of their ends, for pickers. Its
// fields narrow the facts together.
type FactQuery struct {
	// Statuses restricts the facts (default: active and pending).
	Statuses []memory.FactStatus
	// Text matches the source or target name, an alias, the type, or the
	// fact id ("#12" or "12"), as a part of any of them, in any case.
	Text string
	// Types, when not nil, restricts the facts to these relation types,
	// spelled exactly (the ledger's PROMISED, OWES and GAVE).
	Types []string
	// EntityIDs, when not nil, restricts the facts to those with an end
	// among them.
	EntityIDs []string
	// IDs, when not nil, restricts the facts to these ids.
	IDs   []int64
	Limit int
}

// FactWithNames is a fact with the display names of its ends.
type FactWithNames struct {
	memory.Relationship
	SourceName, TargetName string
}

// textDenseEntities is how many entities may match a FactQuery's Text for
// FindFacts to read their facts by their ends; when more do, it reads the
// campaign's facts newest first instead, until Limit of them match. Both
// are correct and only their cost differs. The n entities matched have
// about M = n·d facts (d = 2F/E facts per entity, F facts and E entities
// in the campaign): reading them costs M rows, and scanning the newest
// costs about Limit·F/M rows until Limit match. The two meet at M =
// sqrt(Limit·F), n = E·sqrt(Limit/F)/2: 350 for a picker's 25 at the 100k
// bench's density (100,000 entities, 500,000 facts).
const textDenseEntities = 350

// FindFacts lists facts matching q, newest first. It starts from what an
// index can find: the facts q names by id, of q's ends, of its types, or of the entities
// and types whose names hold q's Text (and the fact it names by id);
// otherwise, or when Text is too common to be worth that
// (textDenseEntities), the campaign's facts newest first.
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
	// $1 campaign, $2 statuses, $3 text, $4 limit, $5 types (NULL: any),
	// $6 ends (NULL: any); a driver adds its own after them (arg).
	args := []any{g.campaign, statuses, text, limit, q.Types, q.EntityIDs}
	if q.Types != nil {
		args[4] = nonNil(q.Types)
	}
	if q.EntityIDs != nil {
		args[5] = nonNil(q.EntityIDs)
	}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var driver string
	switch {
	case q.IDs != nil:
		driver = `SELECT DISTINCT unnest(` + arg(nonNil(q.IDs)) + `::bigint[]) AS id`
	case q.EntityIDs != nil:
		driver = g.factsOf("$6")
	case q.Types != nil && text == "":
		driver = g.newestOfTypes("$5")
	case text != "":
		ids, types, err := g.textCandidates(ctx, text)
		if err != nil {
			return nil, fmt.Errorf("finding facts: %w", err)
		}
		if len(ids) <= textDenseEntities {
			driver = g.factsOf(arg(ids)) + ` UNION ` + g.newestOfTypes(arg(types))
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				driver += ` UNION SELECT id FROM relationships WHERE campaign_id = $1 AND id = ` + arg(n)
			}
		}
	}
	// A driver's ids are read once (MATERIALIZED) and looked up: as an IN
	// of the filter, the plan could read them again for every fact.
	with, from := ``, `relationships r`
	if driver != "" {
		with, from = `WITH hit AS MATERIALIZED (`+driver+`)`, `hit JOIN relationships r ON r.id = hit.id`
	}
	// Without a driver the plan reads the campaign's facts newest first
	// (relationships_newest, migration 0036) until $4 pass. The names of
	// the ends are joined to the $4 found, not to the campaign's facts (a
	// join planned for every fact hashed a cache of every entity: 25 ms).
	// Each call is planned for its arguments (pgx.QueryExecModeExec): a
	// cached generic plan cannot tell the empty arrays from the full ones.
	rows, err := g.db.Query(ctx, with+`
		SELECT `+g.view.relCols()+`, s.name, t.name
		FROM (SELECT r.* FROM `+from+`
		      WHERE r.campaign_id = $1 AND `+g.factFilter("r")+`
		        AND ($6::text[] IS NULL OR r.source_id = ANY($6) OR r.target_id = ANY($6))
		        AND ($3 = '' OR r.id::text = $3 OR strpos(lower(r.rel_type), lower($3)) > 0
		             OR EXISTS (SELECT 1 FROM entities e WHERE e.campaign_id = r.campaign_id AND e.id IN (r.source_id, r.target_id)
		                        AND `+nameHoldsExactlySQL("e", "$3")+`))
		      ORDER BY `+g.view.updatedCol("r")+` DESC, r.id DESC
		      LIMIT $4) r
		JOIN entities s ON s.campaign_id = r.campaign_id AND s.id = r.source_id
		JOIN entities t ON t.campaign_id = r.campaign_id AND t.id = r.target_id
		ORDER BY `+g.view.updatedCol("r")+` DESC, r.id DESC`, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("finding facts: %w", err)
	}
	return pgx.CollectRows(rows, scanFactWithNames)
}

// factFilter is FindFacts' SQL predicate of relationship alias that needs
// no other table but the viewer's own: its status among $2, its type among
// $5 (when not NULL), and the viewer may see it.
func (g *Graph) factFilter(alias string) string {
	return alias + `.status = ANY($2) AND ($5::text[] IS NULL OR ` + alias + `.rel_type = ANY($5)) AND ` + g.view.factVisible(alias)
}

// factsOf is the SQL of the ids of the facts with an end among ids (an
// SQL text[]), found through the indexes of either end.
func (g *Graph) factsOf(ids string) string {
	return `SELECT id FROM relationships WHERE campaign_id = $1 AND source_id = ANY(` + ids + `)
		UNION SELECT id FROM relationships WHERE campaign_id = $1 AND target_id = ANY(` + ids + `)`
}

// newestOfTypes is the SQL of the ids of the newest facts of each type in
// types (an SQL text[]), at most $4 of each that pass factFilter: read
// from relationships_type (migration 0036) a type at a time, so a type of
// 50,000 facts costs the $4 newest.
func (g *Graph) newestOfTypes(types string) string {
	return `SELECT x.id FROM unnest(` + types + `::text[]) ty(rel_type), LATERAL (
			SELECT f.id FROM relationships f WHERE f.campaign_id = $1 AND f.rel_type = ty.rel_type AND ` + g.factFilter("f") + `
			ORDER BY ` + g.view.updatedCol("f") + ` DESC, f.id DESC LIMIT $4) x`
}

// textCandidates returns what a FindFacts Text names: the ids of the
// entities whose name or an alias holds text (at most
// textDenseEntities+1: more says the text is too common to start from),
// found as FindEntities finds them (nameHoldsSQL), and the
// campaign's relation types that hold it, read from relationships_type one
// distinct type at a time. A fact's ends are matched whatever the viewer
// may see of them: the facts are filtered for the viewer afterwards.
func (g *Graph) textCandidates(ctx context.Context, text string) (ids, types []string, err error) {
	err = g.db.QueryRow(ctx, `
		SELECT ARRAY(SELECT e.id FROM entities e WHERE e.campaign_id = $1 AND `+nameHoldsSQL("e", "$2", "$3")+`
		         LIMIT $4),
		       ARRAY(WITH RECURSIVE ty(rel_type) AS (
		           SELECT min(rel_type) FROM relationships WHERE campaign_id = $1
		           UNION ALL
		           SELECT (SELECT min(f.rel_type) FROM relationships f WHERE f.campaign_id = $1 AND f.rel_type > ty.rel_type)
		           FROM ty WHERE ty.rel_type IS NOT NULL)
		         SELECT rel_type FROM ty WHERE strpos(lower(rel_type), lower($2)) > 0)`,
		pgx.QueryExecModeExec, g.campaign, text, likeLiteral(text), textDenseEntities+1).Scan(&ids, &types)
	return ids, types, err
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
		                OR (r.valid_until_session = '' AND coalesce(r.retired_at, `+g.view.updatedCol("r")+`) > $3))))
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
