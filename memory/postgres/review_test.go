package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// reviewWorld is seedWorld with three sessions a week apart and the Sunken
// Vault; Elara is at the Tower (canon, entered outside play).
func reviewWorld(t *testing.T, name string) (*postgres.Campaign, *postgres.Graph) {
	t.Helper()
	ctx := ctxT(t)
	c := pgtest.Campaign(t, newStore(t), name)
	seedWorld(t, c)
	for i, s := range []string{"s1", "s2", "s3"} {
		check(t, c.Sessions().StartSession(ctx, s, t0.Add(time.Duration(i)*7*24*time.Hour)))
	}
	check(t, c.Graph().UpsertEntity(ctx, memory.Entity{ID: "sunken", Type: memory.EntityLocation, Name: "Sunken Vault"}))
	return c, c.Graph()
}

// canonLocations lists where src is, in canon.
func canonLocations(t *testing.T, g *postgres.Graph, src string) []memory.Relationship {
	t.Helper()
	return must[[]memory.Relationship](t)(g.Relationships(ctxT(t), src, memory.TraversalOpts{
		RelTypes: []string{"LOCATED_AT"}, Direction: memory.Outgoing}))
}

func openConflictIDs(t *testing.T, g *postgres.Graph) []int64 {
	t.Helper()
	var out []int64
	for _, c := range must[[]memory.Conflict](t)(g.Conflicts(ctxT(t))) {
		out = append(out, c.ID)
	}
	return out
}

// TestConfirmSettlesTheConflict is the bug of issue 30: confirming a pending
// fact that is in an open conflict left both facts active (Elara at the
// Tower and in the Sunken Vault) and the conflict open.
func TestConfirmSettlesTheConflict(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		session string // of the new fact: s1 contradicts, s2 supersedes (a guess)
		confirm bool   // confirm the pending fact, else reject it
		want    string // Elara's canon location afterwards
		old     memory.FactStatus
		kept    string
	}{
		{"contradiction confirmed", "", true, "sunken", memory.StatusRetired, "kept_new"},
		{"later guess confirmed", "s2", true, "sunken", memory.StatusRetired, "kept_new"},
		{"contradiction rejected", "", false, "tower", memory.StatusActive, "kept_old"},
		{"later guess rejected", "s2", false, "tower", memory.StatusActive, "kept_old"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			_, g := reviewWorld(t, "settle"+string(rune('a'+i)))
			tower := canonLocations(t, g, "elara")
			if len(tower) != 1 || tower[0].TargetID != "tower" {
				t.Fatalf("seed: Elara at %+v", tower)
			}
			// A guess below the review threshold: pending, in a conflict.
			nf, cs, err := g.RecordFact(ctx, memory.Relationship{SourceID: "elara", TargetID: "sunken", Type: "LOCATED_AT",
				Provenance: memory.Provenance{SessionID: tc.session, Confidence: 0.5, Source: memory.SourceInferred}})
			check(t, err)
			if nf.Status != memory.StatusPending || len(cs) != 1 {
				t.Fatalf("new fact %+v, conflicts %+v", nf, cs)
			}
			open := must[map[int64][]int64](t)(g.OpenConflictsOf(ctx, []int64{nf.ID}))
			if len(open[nf.ID]) != 1 || open[nf.ID][0] != cs[0].ID {
				t.Fatalf("the pending fact's open conflicts: %v, want [%d]", open, cs[0].ID)
			}
			if tc.confirm {
				check(t, errOf(g.ConfirmFact(ctx, nf.ID)))
			} else {
				check(t, errOf(g.RejectFact(ctx, nf.ID)))
			}
			where := canonLocations(t, g, "elara")
			if len(where) != 1 || where[0].TargetID != tc.want {
				t.Fatalf("Elara's canon locations: %+v, want only %s", where, tc.want)
			}
			if open := openConflictIDs(t, g); len(open) != 0 {
				t.Fatalf("conflicts still open: %v", open)
			}
			old := must[memory.Relationship](t)(g.Fact(ctx, tower[0].ID))
			if old.Status != tc.old {
				t.Fatalf("the old fact is %s, want %s", old.Status, tc.old)
			}
			ret := must[postgres.Retirement](t)(g.Retirement(ctx, old.ID))
			if tc.old == memory.StatusRetired {
				if ret.At.IsZero() || !strings.Contains(ret.Reason, "superseded by fact") {
					t.Fatalf("retirement of the old fact: %+v, want a time and a reason", ret)
				}
				if tc.session != "" && old.ValidUntilSession != tc.session {
					t.Fatalf("old fact held until %q, want %q", old.ValidUntilSession, tc.session)
				}
			} else if !ret.At.IsZero() {
				t.Fatalf("a canon fact has a retirement: %+v", ret)
			}
			if _, err := g.ResolveConflict(ctx, cs[0].ID, true); !errors.Is(err, memory.ErrInvalid) {
				t.Fatalf("settling the settled conflict again: %v", err)
			}
		})
	}
}

func errOf[T any](_ T, err error) error { return err }

// TestConfirmingTheOldFactKeepsIt: confirming the canon side of an open
// conflict keeps it and rejects the new one.
func TestConfirmingTheOldFactKeepsIt(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, g := reviewWorld(t, "keepold")
	tower := canonLocations(t, g, "elara")[0]
	nf, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "elara", TargetID: "sunken", Type: "LOCATED_AT",
		Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceStated}})
	check(t, err)
	check(t, errOf(g.ConfirmFact(ctx, tower.ID)))
	if got := must[memory.Relationship](t)(g.Fact(ctx, nf.ID)); got.Status != memory.StatusRejected {
		t.Fatalf("the new fact is %s, want rejected", got.Status)
	}
	if open := openConflictIDs(t, g); len(open) != 0 {
		t.Fatalf("conflicts still open: %v", open)
	}
}

// TestSingleValuedUnderConcurrency: two pending locations of one source
// confirmed at once leave exactly one canon location, whichever wins.
func TestSingleValuedUnderConcurrency(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, g := reviewWorld(t, "single")
	// Two player proposals (no conflict row between them: proposals are
	// apart from canon), then the DM confirms both at once.
	var ids []int64
	for _, dst := range []string{"sunken", "ironhold"} {
		w, err := g.WriteFact(ctx, memory.Writer{Role: memory.WriterPlayer, ID: "p" + dst}, memory.Relationship{
			SourceID: "elara", TargetID: dst, Type: "LOCATED_AT",
			Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceStated}}, "")
		check(t, err)
		ids = append(ids, w.Fact.ID)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Go(func() { errs[i] = errOf(g.ConfirmFact(ctx, id)) })
	}
	wg.Wait()
	for _, err := range errs {
		check(t, err)
	}
	where := canonLocations(t, g, "elara")
	if len(where) != 1 {
		t.Fatalf("Elara is in %d places: %+v", len(where), where)
	}
	// The others are retired with the reason.
	for _, id := range append(ids, 0) {
		if id == 0 || id == where[0].ID {
			continue
		}
		if f := must[memory.Relationship](t)(g.Fact(ctx, id)); f.Status != memory.StatusRetired {
			t.Fatalf("fact %d is %s, want retired", id, f.Status)
		}
	}
	// A non-DM upsert of a second canon location is refused.
	_, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "tower", Type: "LOCATED_AT",
		Provenance: memory.Provenance{Confidence: 0.95, Source: memory.SourceStated}})
	if !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("a second canon location: %v, want ErrInvalid", err)
	}
	if n := len(canonLocations(t, g, "elara")); n != 1 {
		t.Fatalf("after a refused upsert Elara is in %d places", n)
	}
}

// TestFactsAsOfDate: "as of" by date reads the recorded retirement time.
func TestFactsAsOfDate(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, g := reviewWorld(t, "asofdate")
	tower := canonLocations(t, g, "elara")[0]
	before := time.Now()
	// The DM moves her outside play: the Tower held until now.
	w, err := g.WriteFact(ctx, memory.DM(""), memory.Relationship{SourceID: "elara", TargetID: "sunken", Type: "LOCATED_AT"}, "she fled")
	check(t, err)
	after := time.Now()
	at := func(ts time.Time) string {
		var out []string
		for _, f := range must[[]memory.Relationship](t)(g.FactsAsOfTime(ctx, "elara", ts)) {
			if f.Type == "LOCATED_AT" && f.SourceID == "elara" {
				out = append(out, f.TargetID)
			}
		}
		return strings.Join(out, ",")
	}
	if got := at(before.Add(-time.Second)); got != "tower" {
		t.Errorf("before the move Elara is at %q, want tower", got)
	}
	if got := at(after.Add(time.Second)); got != "sunken" {
		t.Errorf("after the move Elara is at %q, want sunken", got)
	}
	ret := must[postgres.Retirement](t)(g.Retirement(ctx, tower.ID))
	if ret.At.Before(before.Add(-time.Minute)) || !strings.Contains(ret.Reason, "she fled") ||
		!strings.Contains(ret.Reason, "superseded by fact") {
		t.Errorf("retirement %+v (new fact %d)", ret, w.Fact.ID)
	}
	if _, err := g.FactsAsOfTime(ctx, "elara", time.Time{}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("as of the zero time: %v", err)
	}
}

// TestEditKeepsEvidenceAndHistory: "Save and confirm" of an edited fact
// keeps the transcript evidence of the fact it corrects and records that it
// supersedes it, even when the triple is unchanged.
func TestEditKeepsEvidenceAndHistory(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		dst  string
	}{
		{"triple unchanged", "sunken"},
		{"target corrected", "ironhold"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			c, g := reviewWorld(t, "edit"+string(rune('a'+i)))
			must[int](t)(c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
				entry("s2", "u1", "Elara dove into the Sunken Vault", time.Minute)}))
			es := must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctx, "s2"))
			old, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "elara", TargetID: "sunken", Type: "LOCATED_AT",
				Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.5, Source: memory.SourceInferred}})
			check(t, err)
			check(t, g.AddEvidence(ctx, old.ID, []int64{es[0].ID}))
			nf := must[memory.Relationship](t)(g.ReplaceFact(ctx, old.ID, memory.Relationship{SourceID: "elara", TargetID: tc.dst, Type: "LOCATED_AT"}))
			if nf.ID == old.ID || nf.Status != memory.StatusActive || nf.Provenance.SessionID != "s2" {
				t.Fatalf("corrected fact %+v", nf)
			}
			ev := must[[]memory.TranscriptEntry](t)(g.Evidence(ctx, nf.ID))
			if len(ev) != 1 || ev[0].ID != es[0].ID {
				t.Fatalf("evidence of the corrected fact: %+v, want line %d", ev, es[0].ID)
			}
			var supersedes bool
			for _, l := range must[[]memory.FactLink](t)(g.FactLinks(ctx, nf.ID)) {
				supersedes = supersedes || (l.FromFact == nf.ID && l.ToFact == old.ID && l.Kind == memory.LinkSupersedes)
			}
			if !supersedes {
				t.Fatalf("no supersedes link from %d to the fact it corrects, %d", nf.ID, old.ID)
			}
			if got := must[memory.Relationship](t)(g.Fact(ctx, old.ID)); got.Status != memory.StatusRejected {
				t.Fatalf("the corrected fact is %s, want rejected", got.Status)
			}
			if where := canonLocations(t, g, "elara"); len(where) != 1 || where[0].ID != nf.ID {
				t.Fatalf("Elara's canon locations: %+v", where)
			}
			if open := openConflictIDs(t, g); len(open) != 0 {
				t.Fatalf("conflicts still open: %v", open)
			}
		})
	}
}

// reviewState is everything a review can change about a source's facts.
func reviewState(t *testing.T, g *postgres.Graph, ids ...int64) string {
	t.Helper()
	ctx := ctxT(t)
	var b strings.Builder
	for _, id := range ids {
		f, err := g.Fact(ctx, id)
		if errors.Is(err, memory.ErrNotFound) {
			fmt.Fprintf(&b, "#%d gone\n", id)
			continue
		}
		check(t, err)
		ret := must[postgres.Retirement](t)(g.Retirement(ctx, id))
		ev := must[[]memory.TranscriptEntry](t)(g.Evidence(ctx, id))
		fmt.Fprintf(&b, "#%d %s %s %s %s dm=%v until=%q retired=%v %q ev=%d links=%d\n", id, f.SourceID, f.Type, f.TargetID, f.Status,
			f.Provenance.DMConfirmed, f.ValidUntilSession, ret.At.IsZero(), ret.Reason, len(ev),
			len(must[[]memory.FactLink](t)(g.FactLinks(ctx, id))))
	}
	for _, c := range must[[]memory.Conflict](t)(g.Conflicts(ctx)) {
		fmt.Fprintf(&b, "open conflict %d: %d vs %d\n", c.ID, c.NewFact.ID, c.OldFact.ID)
	}
	return b.String()
}

// TestBulkReviewAndUndo: a bulk confirm settles each fact as ConfirmFact
// does, in one transaction; undo restores every previous state.
func TestBulkReviewAndUndo(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	c, g := reviewWorld(t, "bulk")
	must[int](t)(c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
		entry("s2", "u1", "Elara hid in the Sunken Vault", time.Minute),
		entry("s2", "u1", "Grimjaw knows Elara", 2*time.Minute)}))
	es := must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctx, "s2"))
	tower := canonLocations(t, g, "elara")[0]
	// A pending location in a conflict with the Tower.
	moved, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "elara", TargetID: "sunken", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.5, Source: memory.SourceInferred}})
	check(t, err)
	check(t, g.AddEvidence(ctx, moved.ID, []int64{es[0].ID}))
	// A plain pending fact.
	knows, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "elara", Type: "HOSTILE_TO",
		Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.5, Source: memory.SourceInferred}})
	check(t, err)
	// A player's proposal of the Tower fact canon already holds (dropped
	// on confirm; undo brings it back with its evidence).
	prop, err := g.WriteFact(ctx, memory.Writer{Role: memory.WriterPlayer, ID: "u9"}, memory.Relationship{SourceID: "elara",
		TargetID: "tower", Type: "LOCATED_AT", Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceStated}}, "")
	check(t, err)
	check(t, g.AddEvidence(ctx, prop.Fact.ID, []int64{es[1].ID}))
	all := []int64{tower.ID, moved.ID, knows.ID, prop.Fact.ID}
	before := reviewState(t, g, all...)

	b := must[postgres.ReviewBatch](t)(g.ReviewFacts(ctx, postgres.ReviewConfirm, []int64{moved.ID, knows.ID, prop.Fact.ID}, "dm1"))
	if len(b.Done) != 3 || b.ID == 0 {
		t.Fatalf("batch %+v", b)
	}
	// The move was confirmed first (the Tower retired), then the Tower
	// proposal: it confirms the Tower fact, which retires the Vault. In
	// any order, Elara is in one place.
	if where := canonLocations(t, g, "elara"); len(where) != 1 {
		t.Fatalf("after the bulk confirm Elara is in %d places: %+v", len(where), where)
	}
	if open := openConflictIDs(t, g); len(open) != 0 {
		t.Fatalf("conflicts still open: %v", open)
	}
	last, ok, err := g.LastReviewBatch(ctx)
	check(t, err)
	if !ok || last.ID != b.ID || len(last.Facts) != 3 {
		t.Fatalf("last batch %+v %v", last, ok)
	}
	mid := reviewState(t, g, all...)
	if mid == before {
		t.Fatal("the bulk confirm changed nothing")
	}

	must[postgres.ReviewBatch](t)(g.UndoReview(ctx, b.ID))
	if got := reviewState(t, g, all...); got != before {
		t.Fatalf("after undo:\n%s\nwant:\n%s", got, before)
	}
	if _, err := g.UndoReview(ctx, b.ID); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("undoing twice: %v", err)
	}
	if _, ok, _ := g.LastReviewBatch(ctx); ok {
		t.Fatal("an undone batch is still offered for undo")
	}

	// A bulk reject, then a change by hand: undo refuses and changes nothing.
	rb := must[postgres.ReviewBatch](t)(g.ReviewFacts(ctx, postgres.ReviewReject, []int64{knows.ID}, "dm1"))
	check(t, errOf(g.ConfirmFact(ctx, knows.ID)))
	changed := reviewState(t, g, all...)
	if _, err := g.UndoReview(ctx, rb.ID); !errors.Is(err, memory.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprint(knows.ID)) {
		t.Fatalf("undo after a later change: %v", err)
	}
	if got := reviewState(t, g, all...); got != changed {
		t.Fatalf("a refused undo changed:\n%s\nwant:\n%s", got, changed)
	}
}

func TestBulkReviewBadInput(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	c, g := reviewWorld(t, "bulkbad")
	knows, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "elara", Type: "HOSTILE_TO",
		Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.5, Source: memory.SourceInferred}})
	check(t, err)
	cases := []struct {
		name   string
		action postgres.ReviewAction
		ids    []int64
		want   error
	}{
		{"no facts", postgres.ReviewConfirm, nil, memory.ErrInvalid},
		{"twice", postgres.ReviewConfirm, []int64{knows.ID, knows.ID}, memory.ErrInvalid},
		{"unknown action", "approve", []int64{knows.ID}, memory.ErrInvalid},
		{"missing fact", postgres.ReviewConfirm, []int64{knows.ID, 99999999}, memory.ErrNotFound},
	}
	for _, tc := range cases {
		if _, err := g.ReviewFacts(ctx, tc.action, tc.ids, ""); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// The failed batch left nothing half-done.
	if f := must[memory.Relationship](t)(g.Fact(ctx, knows.ID)); f.Status != memory.StatusPending {
		t.Fatalf("fact %d is %s after failed batches", knows.ID, f.Status)
	}
	// A player can neither review nor undo.
	pg := must[*postgres.Campaign](t)(c.As(memory.PlayerViewer())).Graph()
	if _, err := pg.ReviewFacts(ctx, postgres.ReviewConfirm, []int64{knows.ID}, "u1"); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("a player's bulk confirm: %v", err)
	}
	if _, err := pg.UndoReview(ctx, 1); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("a player's undo: %v", err)
	}
	if _, _, err := pg.LastReviewBatch(ctx); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("a player's last batch: %v", err)
	}
	if _, err := pg.OpenConflictsOf(ctx, []int64{knows.ID}); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("a player's open conflicts: %v", err)
	}
	if _, err := pg.Retirement(ctx, knows.ID); !errors.Is(err, memory.ErrForbidden) {
		t.Fatalf("a player's retirement reasons: %v", err)
	}
}

// TestSessionFactsAsTheCampaignStoodThen: a recap of an old session gets
// the facts it established as they stood at its end, whatever happened
// since and however many facts the campaign has gained.
func TestSessionFactsAsTheCampaignStoodThen(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	c, g := reviewWorld(t, "sessfacts")
	// In s2 Elara goes to the Sunken Vault; in s3 she leaves for Ironhold.
	vault, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "elara", TargetID: "sunken", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.9, Source: memory.SourceStated}})
	check(t, err)
	// A fact of s2 the same session took back: not part of how s2 ended.
	oops, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "tower", Type: "VISITED",
		Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.9, Source: memory.SourceStated}})
	check(t, err)
	check(t, errOf(g.RetireFact(ctx, oops.ID, "s2")))
	_, _, err = g.RecordFact(ctx, memory.Relationship{SourceID: "elara", TargetID: "ironhold", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s3", Confidence: 0.9, Source: memory.SourceStated}})
	check(t, err)
	// The campaign gains 600 newer facts in s3 (written in one
	// transaction: how they were written is not what this test is about,
	// and 1200 commits were most of its time).
	var extras []memory.Entity
	for i := range 600 {
		id := fmt.Sprintf("npc%d", i)
		extras = append(extras, memory.Entity{ID: id, Type: memory.EntityNPC, Name: "Extra " + id})
	}
	check(t, g.UpsertEntities(ctx, extras))
	check(t, c.InTx(ctx, "", func(c *postgres.Campaign) error {
		for _, e := range extras {
			if _, _, err := c.Graph().RecordFact(ctx, memory.Relationship{SourceID: e.ID, TargetID: "ironhold", Type: "VISITED",
				Provenance: memory.Provenance{SessionID: "s3", Confidence: 0.9, Source: memory.SourceStated}}); err != nil {
				return err
			}
		}
		return nil
	}))
	got := must[[]postgres.FactWithNames](t)(g.SessionFacts(ctx, "s2", true))
	if len(got) != 1 || got[0].ID != vault.ID || got[0].SourceName != "Elara" || got[0].TargetName != "Sunken Vault" {
		t.Fatalf("s2's facts: %+v, want only Elara in the Sunken Vault (since retired)", got)
	}
	if got[0].Status != memory.StatusRetired {
		t.Fatalf("Elara in the Vault is %s now, want retired (she left in s3)", got[0].Status)
	}
	if s3 := must[[]postgres.FactWithNames](t)(g.SessionFacts(ctx, "s3", true)); len(s3) != 601 {
		t.Fatalf("s3 established %d facts, want 601 (no cap)", len(s3))
	}
	if _, err := g.SessionFacts(ctx, "nope", true); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("facts of an unknown session: %v", err)
	}
}
