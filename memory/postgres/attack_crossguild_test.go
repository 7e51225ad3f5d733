package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCrossGuildIDsInTheStore (cross-guild attacker): fact, line,
// conflict, review batch, proposal and card ids are numbered across every
// campaign of the database, and the tables that link them (fact_evidence,
// fact_links, fact_conflicts, entity_evidence, player_grants) are joined
// by those ids alone, without the campaign. The DM of one campaign hands
// the other campaign's ids to every method of their own campaign that
// takes one, reads and writes: no read answers a row of the other
// campaign, no write touches one, and no link row of either campaign
// names a row of the other (which every later join through ids would
// follow into the other campaign). TestCampaignsAreIsolated covers the
// reads by entity and session id, which are per campaign; this covers the
// ids shared by all campaigns.
func TestAttackCrossGuildIDsInTheStore(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	a := pgtest.Import(t, s, "../../testdata/campaigns/ironhold-saga.yaml")
	f := pgtest.ForeignCampaign(t, s, "../../testdata/campaigns/hostile-keep.yaml")
	before := f.State(t, s)
	g, l := a.Graph(), a.Sessions()
	mine := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))[0]
	myLines := must[[]memory.TranscriptEntry](t)(l.Entries(ctx, "s1"))
	fact, pending := f.Facts[0], f.Pending[0]

	// Reads: each must answer nothing of the other campaign.
	var got []string
	saw := func(what string, v any, err error) {
		t.Helper()
		if err != nil && !errors.Is(err, memory.ErrNotFound) && !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("%s: %v", what, err)
		}
		got = append(got, fmt.Sprintf("%s: %+v", what, v))
	}
	r, err := g.Fact(ctx, fact)
	saw("Fact", r, err)
	rs, err := g.Facts(ctx, f.Facts)
	saw("Facts", rs, err)
	ev, err := g.Evidence(ctx, fact)
	saw("Evidence", ev, err)
	links, err := g.FactLinks(ctx, fact)
	saw("FactLinks", links, err)
	ret, err := g.Retirement(ctx, fact)
	saw("Retirement", ret, err)
	oc, err := g.OpenConflictsOf(ctx, f.Facts)
	saw("OpenConflictsOf", oc, err)
	fw, err := g.FindFacts(ctx, postgres.FactQuery{IDs: f.Facts, Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending,
		memory.StatusRetired, memory.StatusRejected}})
	saw("FindFacts by id", fw, err)
	fw, err = g.FindFacts(ctx, postgres.FactQuery{Text: fmt.Sprint(pending)})
	saw("FindFacts by number", fw, err)
	split, err := l.SplitLines(ctx, f.Session, f.Entries)
	saw("SplitLines", split, err)
	split, err = l.SplitLines(ctx, "s1", f.Entries)
	saw("SplitLines s1", split, err)
	canon, err := l.StillCanon(ctx, "s1", f.Entries)
	saw("StillCanon", canon, err)
	if canon {
		t.Errorf("StillCanon says the other campaign's lines are canon lines of this campaign's session s1")
	}
	for _, read := range got {
		for _, w := range f.Words {
			if strings.Contains(strings.ToLower(read), strings.ToLower(w)) {
				t.Errorf("%s answers %q of the other campaign", read, w)
			}
		}
	}
	for _, n := range []int{len(rs), len(oc), len(fw), len(split), len(ev), len(links)} {
		if n != 0 {
			t.Errorf("a read by the other campaign's ids answered rows: %v", got)
			break
		}
	}

	// Writes naming the other campaign's rows: each fails or does nothing.
	_, err = g.ConfirmFact(ctx, pending)
	refused(t, "ConfirmFact", err)
	_, err = g.RejectFact(ctx, pending)
	refused(t, "RejectFact", err)
	_, err = g.RetireFact(ctx, fact, "s1")
	refused(t, "RetireFact", err)
	_, err = g.ReplaceFact(ctx, fact, memory.Relationship{SourceID: "grimjaw", TargetID: "elara", Type: "KNOWS"})
	refused(t, "ReplaceFact", err)
	_, err = g.ResolveConflict(ctx, f.Conflicts[0], true)
	refused(t, "ResolveConflict", err)
	_, err = g.ReviewFacts(ctx, postgres.ReviewConfirm, []int64{pending}, "attacker")
	refused(t, "ReviewFacts", err)
	_, err = g.UndoReview(ctx, f.Batches[0])
	refused(t, "UndoReview", err)
	_, err = a.ResolveProposal(ctx, f.Proposals[0], true)
	refused(t, "ResolveProposal", err)
	_, _, err = a.ClaimContinuityCard(ctx, f.Cards[0], "attacker")
	refused(t, "ClaimContinuityCard", err)
	_, err = a.AddGrant(ctx, "u1", "", fact, "")
	refused(t, "AddGrant", err)
	refused(t, "LinkFacts to theirs", g.LinkFacts(ctx, memory.FactLink{FromFact: mine.ID, ToFact: fact, Kind: memory.LinkSupports, Weight: 1}))
	refused(t, "LinkFacts from theirs", g.LinkFacts(ctx, memory.FactLink{FromFact: fact, ToFact: mine.ID, Kind: memory.LinkSupports, Weight: 1}))
	// Writes of this campaign's own rows resting on the other's lines:
	// they may succeed, but link nothing of the other campaign.
	check(t, g.AddEvidence(ctx, mine.ID, f.Entries))
	check(t, g.AddEvidence(ctx, fact, []int64{myLines[0].ID}))
	_, _, err = g.RecordFactOn(ctx, memory.Relationship{SourceID: "brannoc", TargetID: "tower", Type: "VISITED",
		Provenance: memory.Provenance{SessionID: "s1", Timestamp: time.Now(), Confidence: 0.9, Source: memory.SourceStated}}, f.Entries)
	check(t, err)
	check(t, g.AddSceneEntity(ctx, memory.Entity{ID: "mkf-heard-there", Type: memory.EntityNPC, Name: "Heard There"}, f.Entries))
	check(t, g.AddEntityEvidence(ctx, map[string][]int64{"mkf-heard-there": f.Entries, "grimjaw": f.Entries}))

	if after := f.State(t, s); after != before {
		t.Errorf("the other campaign changed:\nbefore %s\nafter  %s", before, after)
	}
	var crossing string
	if err := s.Pool().QueryRow(context.Background(), crossingLinksSQL).Scan(&crossing); err != nil {
		t.Fatal(err)
	}
	if crossing != "" {
		t.Errorf("link rows join two campaigns: %s", crossing)
	}
}

// refused checks that a write naming another campaign's row failed as
// not found (or invalid), without touching it.
func refused(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, memory.ErrNotFound) && !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("%s of the other campaign's row: %v, want not found", what, err)
	}
}

// crossingLinksSQL lists the link rows whose ends are of two campaigns.
const crossingLinksSQL = `SELECT concat_ws(', ',
	(SELECT string_agg('fact_evidence ' || fe.fact_id || '/' || fe.entry_id, ' ') FROM fact_evidence fe
	 JOIN relationships r ON r.id = fe.fact_id JOIN transcript_entries t ON t.id = fe.entry_id WHERE r.campaign_id <> t.campaign_id),
	(SELECT string_agg('fact_links ' || l.from_fact || '/' || l.to_fact, ' ') FROM fact_links l
	 JOIN relationships a ON a.id = l.from_fact JOIN relationships b ON b.id = l.to_fact
	 WHERE a.campaign_id <> l.campaign_id OR b.campaign_id <> l.campaign_id),
	(SELECT string_agg('fact_conflicts ' || c.id, ' ') FROM fact_conflicts c
	 JOIN relationships a ON a.id = c.new_fact JOIN relationships b ON b.id = c.old_fact
	 WHERE a.campaign_id <> c.campaign_id OR b.campaign_id <> c.campaign_id),
	(SELECT string_agg('entity_evidence ' || ee.entity_id || '/' || ee.entry_id, ' ') FROM entity_evidence ee
	 JOIN transcript_entries t ON t.id = ee.entry_id WHERE t.campaign_id <> ee.campaign_id),
	(SELECT string_agg('player_grants ' || g.id, ' ') FROM player_grants g
	 JOIN relationships r ON r.id = g.fact_id WHERE r.campaign_id <> g.campaign_id),
	(SELECT string_agg('review_batches ' || b.id, ' ') FROM review_batches b, unnest(b.facts) f(id)
	 JOIN relationships r ON r.id = f.id WHERE r.campaign_id <> b.campaign_id))`
