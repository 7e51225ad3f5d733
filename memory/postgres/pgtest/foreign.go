package pgtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Foreign is another campaign of the same database, for attacks from a
// campaign (a Discord server) on it: the ids of each kind of its rows,
// which the attacker types into their own campaign's commands, pages and
// tools, and the words only it holds, which must never reach them.
type Foreign struct {
	Campaign string
	// Facts are its facts of every status; Pending those waiting for
	// review.
	Facts, Pending []int64
	// Entries are its transcript lines.
	Entries []int64
	// Conflicts are its open conflicts; Batches its review batches (not
	// undone); Proposals its pending proposals; Grants its grants.
	Conflicts, Batches, Proposals, Grants []int64
	// Cards are its open continuity cards.
	Cards []string
	// Sessions and Entities are its session and entity ids; Session is
	// one only it has.
	Sessions, Entities []string
	Session            string
	// Words are texts only this campaign holds (names, markers).
	Words []string
}

// ForeignCampaign imports the campaign file at path (the hostile campaign,
// testdata/campaigns/hostile-keep.yaml, whose every secret carries a
// marker) and adds what a campaign file cannot hold: a session of its own,
// an open conflict, a review batch, a pending proposal, a grant and an
// open continuity card. It returns the ids of its rows.
func ForeignCampaign(tb testing.TB, s *postgres.Store, path string) Foreign {
	tb.Helper()
	ctx := context.Background()
	c := Import(tb, s, path)
	f := Foreign{Campaign: c.ID(), Session: "mkf-foreign-session",
		Words: []string{"Aldric", "Brenna", "Undercroft", "mka-", "mkb-", "mkd-", "mkx-", "mkf-"}}
	at := time.Date(2026, 3, 8, 19, 0, 0, 0, time.UTC)
	if _, err := c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
		{SessionID: f.Session, SpeakerID: "u9", SpeakerName: "Mkf Spy", Text: "mkf-foreign-line Brenna hides the ledger in the Undercroft.",
			At: at, IdempotencyKey: "mkf-1"},
		{SessionID: f.Session, SpeakerID: "u9", SpeakerName: "Mkf Spy", Text: "mkf-foreign-promise I owe Aldric ten gold, mkf-debt.",
			At: at.Add(time.Minute), IdempotencyKey: "mkf-2"},
	}); err != nil {
		tb.Fatalf("writing the foreign session: %v", err)
	}
	g := c.Graph()
	// Aldric moves, which conflicts with his canon LOCATED_AT.
	_, cs, err := g.RecordFact(ctx, memory.Relationship{SourceID: "aldric", TargetID: "ledger", Type: "LOCATED_AT",
		Attributes: map[string]any{"extracted": true, "evidence": "mkf-conflict-evidence"},
		Provenance: memory.Provenance{SessionID: f.Session, Confidence: 0.8, Source: memory.SourceInferred}})
	if err != nil || len(cs) != 1 {
		tb.Fatalf("recording the foreign conflict: %+v %v", cs, err)
	}
	// A ledger entry (lifecycle/ledger), DM-confirmed so that players list
	// it too.
	if _, err := g.WriteFact(ctx, memory.DM("mkf-dm"), memory.Relationship{SourceID: "thorin", TargetID: "aldric", Type: "OWES",
		Attributes: map[string]any{"what": "mkf-ten-gold", "evidence": "mkf-foreign-promise", "entry": "mkf-entry"},
		Provenance: memory.Provenance{SessionID: f.Session, Timestamp: at.Add(time.Minute), Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}}, ""); err != nil {
		tb.Fatalf("a foreign ledger entry: %v", err)
	}
	// A review batch of the pending oath's source (Thorin's facts); its
	// undo is left for the attacker to try.
	pend, err := g.PendingFacts(ctx, memory.FactFilter{EntityID: "brenna"})
	if err != nil || len(pend) == 0 {
		tb.Fatalf("the foreign campaign's pending facts of brenna: %+v %v", pend, err)
	}
	if _, err := g.ReviewFacts(ctx, postgres.ReviewConfirm, []int64{pend[0].ID}, "mkf-dm"); err != nil {
		tb.Fatalf("a foreign review batch: %v", err)
	}
	if _, err := c.Propose(ctx, "put_node", map[string]any{"id": "mkf-proposed", "name": "Mkf Proposed"}, "mkf-agent"); err != nil {
		tb.Fatalf("a foreign proposal: %v", err)
	}
	canon, err := g.FindFacts(ctx, postgres.FactQuery{Text: "KNOWS"})
	if err != nil || len(canon) == 0 {
		tb.Fatalf("the foreign campaign's canon KNOWS: %+v %v", canon, err)
	}
	if _, err := c.AddGrant(ctx, "u9", "mkf-grant-whisper", canon[0].ID, f.Session); err != nil {
		tb.Fatalf("a foreign grant: %v", err)
	}
	card := map[string]any{"id": "mkf0000000000001", "campaign": f.Campaign, "kind": "place", "sentence": "mkf-card-sentence",
		"claim": "Aldric is in the mkf-card-place", "canon": map[string]any{"id": canon[0].ID, "text": "mkf-card-canon"},
		"subject": "aldric", "object": "undercroft", "rel": "LOCATED_AT", "status": "open", "raised": at,
		"line": map[string]any{"session_id": f.Session, "speaker_id": "u9", "speaker": "Mkf Spy", "text": "mkf-foreign-line", "at": at, "key": "mkf-1"}}
	raw, _ := json.Marshal(card)
	if err := c.PutContinuityCard(ctx, postgres.ContinuityCard{ID: "mkf0000000000001", SessionID: f.Session, SpeakerID: "u9",
		LineKey: "mkf-1", LineText: "mkf-foreign-line", CanonFactID: canon[0].ID, CanonText: "mkf-card-canon", Kind: "place",
		Card: raw, CreatedAt: at}); err != nil {
		tb.Fatalf("a foreign continuity card: %v", err)
	}
	q := func(dst *[]int64, sql string) {
		tb.Helper()
		rows, err := s.Pool().Query(ctx, sql, f.Campaign)
		if err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			tb.Fatalf("%s: %v %v", sql, ids, err)
		}
		*dst = ids
	}
	q(&f.Facts, `SELECT id FROM relationships WHERE campaign_id = $1 ORDER BY id`)
	q(&f.Pending, `SELECT id FROM relationships WHERE campaign_id = $1 AND status = 'pending' ORDER BY id`)
	q(&f.Entries, `SELECT id FROM transcript_entries WHERE campaign_id = $1 ORDER BY id`)
	q(&f.Conflicts, `SELECT id FROM fact_conflicts WHERE campaign_id = $1 AND resolution = '' ORDER BY id`)
	q(&f.Batches, `SELECT id FROM review_batches WHERE campaign_id = $1 AND undone_at IS NULL ORDER BY id`)
	q(&f.Proposals, `SELECT id FROM proposals WHERE campaign_id = $1 AND status = 'pending' ORDER BY id`)
	q(&f.Grants, `SELECT id FROM player_grants WHERE campaign_id = $1 ORDER BY id`)
	f.Cards = []string{"mkf0000000000001"}
	rows, err := s.Pool().Query(ctx, `SELECT id FROM sessions WHERE campaign_id = $1 UNION ALL
		SELECT '' UNION ALL SELECT id FROM entities WHERE campaign_id = $1`, f.Campaign)
	if err != nil {
		tb.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	for i, id := range ids {
		if id == "" {
			f.Sessions, f.Entities = ids[:i], ids[i+1:]
			break
		}
	}
	return f
}

// State is a digest of every row of the campaign that an attack from
// another campaign could change: compare it before and after.
func (f Foreign) State(tb testing.TB, s *postgres.Store) string {
	tb.Helper()
	var out string
	err := s.Pool().QueryRow(context.Background(), `SELECT concat_ws('|',
		(SELECT string_agg(id || ':' || status || ':' || rel_type || ':' || attributes::text, ',' ORDER BY id) FROM relationships WHERE campaign_id = $1),
		(SELECT string_agg(id || ':' || name || ':' || attributes::text || ':' || coalesce(kg_archived_at::text, ''), ',' ORDER BY id) FROM entities WHERE campaign_id = $1),
		(SELECT string_agg(id || ':' || resolution, ',' ORDER BY id) FROM fact_conflicts WHERE campaign_id = $1),
		(SELECT string_agg(id || ':' || coalesce(undone_at::text, ''), ',' ORDER BY id) FROM review_batches WHERE campaign_id = $1),
		(SELECT string_agg(id || ':' || status, ',' ORDER BY id) FROM proposals WHERE campaign_id = $1),
		(SELECT string_agg(id::text, ',' ORDER BY id) FROM player_grants WHERE campaign_id = $1),
		(SELECT string_agg(id || ':' || coalesce(settled_at::text, ''), ',' ORDER BY id) FROM continuity_cards WHERE campaign_id = $1),
		(SELECT string_agg(id || ':' || noncanon || ':' || text, ',' ORDER BY id) FROM transcript_entries WHERE campaign_id = $1),
		(SELECT string_agg(id || ':' || coalesce(game_date, ''), ',' ORDER BY id) FROM sessions WHERE campaign_id = $1),
		(SELECT string_agg(user_id || ':' || entity_id, ',' ORDER BY user_id) FROM player_characters WHERE campaign_id = $1))`,
		f.Campaign).Scan(&out)
	if err != nil {
		tb.Fatalf("reading the foreign campaign's state: %v", err)
	}
	return out
}
