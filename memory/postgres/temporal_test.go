package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestFactsOverTime(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	c := pgtest.Campaign(t, newStore(t), "timeline")
	seedWorld(t, c)
	g := c.Graph()
	for i, s := range []string{"s1", "s2", "s3"} {
		check(t, c.Sessions().StartSession(ctx, s, t0.Add(time.Duration(i)*7*24*time.Hour)))
	}
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "duskwood", Type: memory.EntityLocation, Name: "Duskwood"}))
	fact := func(src, dst, typ, session string) memory.Relationship {
		return memory.Relationship{SourceID: src, TargetID: dst, Type: typ,
			Provenance: memory.Provenance{SessionID: session, Confidence: 0.9, Source: memory.SourceStated}}
	}
	located := func(session string) []string {
		t.Helper()
		rs := must[[]memory.Relationship](t)(g.FactsAsOf(ctx, "grimjaw", session))
		var out []string
		for _, r := range rs {
			if r.Type == "LOCATED_AT" && r.SourceID == "grimjaw" {
				out = append(out, r.TargetID)
			}
		}
		return out
	}

	// Grimjaw moves to the tower in s2: the new fact supersedes the old,
	// which held until s2.
	moved, cs, err := g.RecordFact(ctx, fact("grimjaw", "tower", "LOCATED_AT", "s2"))
	check(t, err)
	if len(cs) != 1 || cs[0].Kind != memory.LinkSupersedes || moved.Status != memory.StatusActive {
		t.Fatalf("move: %+v, conflicts %+v", moved, cs)
	}
	old := must[memory.Relationship](t)(g.Fact(ctx, cs[0].OldFact.ID))
	if old.TargetID != "ironhold" || old.Status != memory.StatusRetired || old.ValidUntilSession != "s2" {
		t.Errorf("old fact %+v, want retired until s2", old)
	}
	for s, want := range map[string]string{"s1": "[ironhold]", "s2": "[tower]", "s3": "[tower]"} {
		if got := located(s); fmtSlice(got) != want {
			t.Errorf("as of %s Grimjaw is at %v, want %s", s, got, want)
		}
	}
	links := must[[]memory.FactLink](t)(g.FactLinks(ctx, moved.ID))
	if len(links) != 1 || links[0].ToFact != old.ID || links[0].Kind != memory.LinkSupersedes || links[0].Weight != 0.9 {
		t.Errorf("links %+v", links)
	}
	// Recording it again changes nothing.
	if _, cs, err := g.RecordFact(ctx, fact("grimjaw", "tower", "LOCATED_AT", "s2")); err != nil || len(cs) != 0 {
		t.Errorf("again: %v, %+v", err, cs)
	}

	// In the same session he is also said to be in Duskwood: that
	// contradicts the canon fact, which stays; the new one waits.
	odd, cs, err := g.RecordFact(ctx, fact("grimjaw", "duskwood", "LOCATED_AT", "s2"))
	check(t, err)
	if len(cs) != 1 || cs[0].Kind != memory.LinkContradicts || odd.Status != memory.StatusPending || cs[0].OldFact.ID != moved.ID {
		t.Fatalf("contradiction: %+v, conflicts %+v", odd, cs)
	}
	if got := located("s2"); fmtSlice(got) != "[tower]" {
		t.Errorf("pending contradiction is visible: %v", got)
	}

	// An explicit negation.
	neg, cs, err := g.RecordFact(ctx, fact("grimjaw", "guild", "NOT_MEMBER_OF", "s3"))
	check(t, err)
	if len(cs) != 1 || cs[0].Kind != memory.LinkContradicts || neg.Status != memory.StatusPending {
		t.Fatalf("negation: %+v, conflicts %+v", neg, cs)
	}

	open := must[[]memory.Conflict](t)(g.Conflicts(ctx))
	if len(open) != 3 || open[0].NewFact.ID != moved.ID || open[2].NewFact.ID != neg.ID {
		t.Fatalf("open conflicts %+v", open)
	}

	// The DM keeps the old fact against Duskwood, and the negation against
	// the membership.
	r := must[memory.Conflict](t)(g.ResolveConflict(ctx, open[1].ID, false))
	if r.Resolution != "kept_old" || r.NewFact.Status != memory.StatusRejected || r.OldFact.Status != memory.StatusActive {
		t.Errorf("keep old: %+v", r)
	}
	r = must[memory.Conflict](t)(g.ResolveConflict(ctx, open[2].ID, true))
	if r.NewFact.Status != memory.StatusActive || !r.NewFact.Provenance.DMConfirmed || r.OldFact.Status != memory.StatusRetired ||
		r.OldFact.ValidUntilSession != "s3" {
		t.Errorf("keep new: %+v", r)
	}
	// Undoing the move brings Ironhold back.
	r = must[memory.Conflict](t)(g.ResolveConflict(ctx, open[0].ID, false))
	if r.OldFact.Status != memory.StatusActive || r.OldFact.ValidUntilSession != "" {
		t.Errorf("undo move: %+v", r)
	}
	if got := located("s3"); fmtSlice(got) != "[ironhold]" {
		t.Errorf("after undo Grimjaw is at %v", got)
	}
	if len(must[[]memory.Conflict](t)(g.Conflicts(ctx))) != 0 {
		t.Error("conflicts still open")
	}
	if _, err := g.ResolveConflict(ctx, open[0].ID, true); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("resolving twice: %v", err)
	}
	if _, err := g.ResolveConflict(ctx, 99999, true); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("unknown conflict: %v", err)
	}
	if _, err := g.FactsAsOf(ctx, "grimjaw", "s9"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
}

func TestLinkFactsErrors(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	c := pgtest.Campaign(t, newStore(t), "links")
	seedWorld(t, c)
	g := c.Graph()
	rels := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))
	a, b := rels[0].ID, rels[1].ID
	cases := []struct {
		name string
		l    memory.FactLink
		want error
	}{
		{"ok", memory.FactLink{FromFact: a, ToFact: b, Kind: memory.LinkSupports, Weight: 0.5}, nil},
		{"bad kind", memory.FactLink{FromFact: a, ToFact: b, Kind: "loves", Weight: 0.5}, memory.ErrInvalid},
		{"bad weight", memory.FactLink{FromFact: a, ToFact: b, Kind: memory.LinkSimilarTo, Weight: 1.5}, memory.ErrInvalid},
		{"self", memory.FactLink{FromFact: a, ToFact: a, Kind: memory.LinkRelatesTo, Weight: 1}, memory.ErrInvalid},
		{"unknown fact", memory.FactLink{FromFact: a, ToFact: 987654, Kind: memory.LinkDerivedFrom, Weight: 1}, memory.ErrNotFound},
	}
	for _, tc := range cases {
		if err := g.LinkFacts(ctx, tc.l); (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func fmtSlice(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
