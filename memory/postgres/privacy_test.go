package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestForgetSpeaker(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	l1, g := c.Sessions(), c.Graph()
	must[int](t)(l1.WriteEntries(ctx, []memory.TranscriptEntry{
		entry("s1", "u1", "Elara hates the guild", time.Minute),
		entry("s1", "u2", "Elara really hates the guild", 2*time.Minute),
		entry("s1", "u1", "The hammer is in the vault", 3*time.Minute),
		entry("s2", "u2", "Unrelated chatter", time.Hour),
	}))
	es := must[[]memory.TranscriptEntry](t)(l1.Entries(ctx, "s1"))
	// A fact resting on u1's line alone, and one also resting on u2's.
	only := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "hammer", TargetID: "vault",
		Type: "LOCATED_AT", Provenance: memory.Provenance{Confidence: 0.8, SessionID: "s1"}}))
	shared := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "guild",
		Type: "HOSTILE_TO", Provenance: memory.Provenance{Confidence: 0.8, SessionID: "s1"}}))
	check(t, g.AddEvidence(ctx, only.ID, []int64{es[2].ID}))
	check(t, g.AddEvidence(ctx, shared.ID, []int64{es[0].ID, es[1].ID}))
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "c1", SessionID: "s1", Content: "Elara hates the guild", SpeakerIDs: []string{"u1", "u2"}, StartAt: t0},
		{ID: "c2", SessionID: "s2", Content: "Unrelated chatter", SpeakerIDs: []string{"u2"}, StartAt: t0},
	}))

	// Derived from s1 as a whole: a running summary and a cached
	// extraction that quote u1; s2's stay.
	check(t, l1.SaveSummary(ctx, "s1", "Elara hates the guild, said u1; the hammer is in the vault."))
	check(t, l1.SaveSummary(ctx, "s2", "Chatter."))
	for _, sid := range []string{"s1", "s2"} {
		if _, err := s.Pool().Exec(ctx, `INSERT INTO extraction_windows (campaign_id, session_id, window_no, lines_hash, extraction)
			VALUES ('camp', $1, 0, 'h', '{"entities":[{"name":"The hammer is in the vault"}]}')`, sid); err != nil {
			t.Fatal(err)
		}
	}

	rep := must[memory.ForgetReport](t)(c.ForgetSpeaker(ctx, "u1"))
	if rep.Entries != 2 || rep.Chunks != 1 || rep.Facts != 1 || len(rep.Sessions) != 1 || rep.Sessions[0] != "s1" {
		t.Fatalf("report %+v", rep)
	}
	left := must[[]memory.TranscriptEntry](t)(l1.Entries(ctx, "s1"))
	if len(left) != 1 || left[0].SpeakerID != "u2" {
		t.Fatalf("lines left: %+v", left)
	}
	if _, err := g.Fact(ctx, only.ID); err == nil {
		t.Fatal("a fact resting only on the forgotten lines survived")
	}
	if _, err := g.Fact(ctx, shared.ID); err != nil {
		t.Fatalf("a fact with other evidence was deleted: %v", err)
	}
	if chunks := must[[]memory.Chunk](t)(c.Index().Chunks(ctx, "")); len(chunks) != 1 || chunks[0].ID != "c2" {
		t.Fatalf("chunks left: %+v", chunks)
	}
	if s1 := must[memory.Session](t)(l1.Session(ctx, "s1")); s1.Summary != "" {
		t.Errorf("s1's summary still quotes the forgotten player: %q", s1.Summary)
	}
	if s2 := must[memory.Session](t)(l1.Session(ctx, "s2")); s2.Summary != "Chatter." {
		t.Errorf("s2's summary changed: %q", s2.Summary)
	}
	var windows []string
	rows, err := s.Pool().Query(ctx, `SELECT session_id FROM extraction_windows WHERE campaign_id = 'camp' ORDER BY 1`)
	check(t, err)
	windows = must[[]string](t)(pgx.CollectRows(rows, pgx.RowTo[string]))
	if len(windows) != 1 || windows[0] != "s2" {
		t.Errorf("cached extractions left: %v; want only s2's", windows)
	}
	// Facts without evidence (the seeded world) are untouched.
	if len(must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))) != 4 {
		t.Fatal("seeded facts changed")
	}
}

func TestOptOutAndNonCanon(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	check(t, c.OptOut(ctx, "u9"))
	check(t, c.OptOut(ctx, "u9"))
	if m := must[map[string]time.Time](t)(c.OptedOut(ctx)); len(m) != 1 {
		t.Fatalf("opt-outs %v", m)
	}
	check(t, c.OptIn(ctx, "u9"))
	if m := must[map[string]time.Time](t)(c.OptedOut(ctx)); len(m) != 0 {
		t.Fatalf("opt-outs after opt-in %v", m)
	}

	l1 := c.Sessions()
	must[int](t)(l1.WriteEntries(ctx, []memory.TranscriptEntry{
		entry("s1", "u1", "The dragon is dead", time.Minute),
		entry("s1", "u1", "Just kidding, the dragon lives", 2*time.Minute),
	}))
	if n := must[int64](t)(l1.MarkNonCanon(ctx, "s1", t0.Add(time.Minute), t0.Add(time.Minute))); n != 1 {
		t.Fatalf("marked %d", n)
	}
	hits := must[[]memory.EntryHit](t)(l1.Search(ctx, "dragon", memory.SearchOpts{}))
	if len(hits) != 1 || hits[0].Entry.Text != "Just kidding, the dragon lives" {
		t.Fatalf("search saw a non-canon line: %+v", hits)
	}
	if rec := must[[]memory.TranscriptEntry](t)(l1.GetRecent(ctx, "s1", time.Hour)); len(rec) != 1 {
		t.Fatalf("recent saw a non-canon line: %+v", rec)
	}
	all := must[[]memory.TranscriptEntry](t)(l1.Entries(ctx, "s1"))
	if len(all) != 2 || !all[0].NonCanon {
		t.Fatalf("the record must keep the non-canon line, flagged: %+v", all)
	}
}

// Extracted facts and ledger entries keep the line they rest on in their
// "evidence" attribute, without evidence links: forgetting the speaker
// deletes the facts that quote one of their lines (the line, the ledger's
// "speaker: line", or a long line inside a longer quote, in its session),
// and keeps those quoting someone else, a short common line, or a line
// of another session.
func TestForgetSpeakerDropsFactsQuotingTheirLines(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	must[int](t)(c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
		entry("s1", "u1", "I promise to pay the ferryman ten gold", time.Minute),
		entry("s1", "u1", "yes", 2*time.Minute),
		entry("s1", "u2", "Grimjaw owes the guild a hammer", 3*time.Minute),
		entry("s2", "u2", "Chatter in another session, long enough", time.Hour),
	}))
	cases := []struct {
		typ, session, evidence string
		gone                   bool
	}{
		{"PROMISED", "s1", "u1: I promise to pay the ferryman ten gold", true}, // the ledger's quote
		{"SAID_EXACTLY", "s1", "I promise to pay the ferryman ten gold", true}, // the line itself
		{"PARTLY_QUOTED", "s1", `Lyra said "I promise to pay the ferryman ten gold" at the dock`, true},
		{"OTHER_SESSION", "s2", "u1: I promise to pay the ferryman ten gold", false}, // not said in s2
		{"OWES", "s1", "u2: Grimjaw owes the guild a hammer", false},                 // another speaker's line
		{"SHORT_LINE", "s1", "they all said yes", false},                             // "yes" is nobody's
		{"NO_QUOTE", "s1", "", false},
	}
	ids := make([]int64, len(cases))
	for i, tc := range cases {
		attrs := map[string]any{"extracted": true}
		if tc.evidence != "" {
			attrs["evidence"] = tc.evidence
		}
		ids[i] = must[memory.Relationship](t)(c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw",
			TargetID: "guild", Type: tc.typ, Attributes: attrs,
			Provenance: memory.Provenance{Confidence: 0.95, SessionID: tc.session, Source: memory.SourceStated, Timestamp: t0}})).ID
	}
	// Two bulk reviews: one of a fact of Grimjaw's (its undo snapshot
	// holds every fact of Grimjaw, the quotes with them), one of Elara's.
	low := memory.Provenance{Confidence: 0.1, SessionID: "s1", Source: memory.SourceInferred, Timestamp: t0}
	for _, src := range []string{"grimjaw", "elara"} {
		p := must[memory.Relationship](t)(c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: "tower",
			Type: "VISITED", Provenance: low}))
		if p.Status != memory.StatusPending {
			t.Fatalf("a low-confidence fact is %s, want pending", p.Status)
		}
		must[postgres.ReviewBatch](t)(c.Graph().ReviewFacts(ctx, postgres.ReviewConfirm, []int64{p.ID}, "dm1"))
	}
	batches := func(text string) int {
		var n int
		check(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM review_batches WHERE campaign_id = 'camp'
			AND strpos(before::text || after::text, $1) > 0`, text).Scan(&n))
		return n
	}
	if batches("ferryman") != 1 || batches("elara") == 0 {
		t.Fatalf("the review batches do not hold what this test expects: %d with the quote", batches("ferryman"))
	}
	rep := must[memory.ForgetReport](t)(c.ForgetSpeaker(ctx, "u1"))
	if n := batches("ferryman"); n != 0 {
		t.Errorf("%d review batches still hold the forgotten line", n)
	}
	if batches("elara") == 0 {
		t.Error("forget-me dropped a review batch that held nothing of the player's")
	}
	if rep.Facts != 3 {
		t.Errorf("report %+v, want 3 facts deleted", rep)
	}
	for i, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			_, err := c.Graph().Fact(ctx, ids[i])
			if gone := errors.Is(err, memory.ErrNotFound); gone != tc.gone {
				t.Errorf("fact quoting %q: deleted %v (err %v), want %v", tc.evidence, gone, err, tc.gone)
			}
		})
	}
}
