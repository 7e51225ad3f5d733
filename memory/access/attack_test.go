package access_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestGrantOfARejectedFact: a fact the DM granted a player and then
// rejected (it was wrong: not canon) no longer reaches the player as
// something their character knows, neither through Grants nor through
// KnowledgeOf ("what you missed"); a handout's text given with it stays.
func TestGrantOfARejectedFact(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	loadKnowledgeCorpus(t, s, "rejgrant", "testdata/knowledge/split-party.yaml")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()
	dm, err := d.Open(ctx, "rejgrant", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	p3, err := d.Open(ctx, "rejgrant", memory.PlayerViewerOf("p3"))
	if err != nil {
		t.Fatal(err)
	}
	fact := func(target string) int64 {
		t.Helper()
		w, err := dm.Graph().WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "grimjaw", TargetID: target,
			Type: "MEMBER_OF_SECRET_ORDER", Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}, "")
		if err != nil {
			t.Fatal(err)
		}
		return w.Fact.ID
	}
	bare, withText := fact("tower"), fact("circle")
	if bare == withText {
		t.Fatalf("the two writes made one fact %d", bare)
	}
	if _, err := dm.Grant(ctx, "p3", "", bare, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := dm.Grant(ctx, "p3", "HANDOUT-MARKER: a torn letter", withText, "s1"); err != nil {
		t.Fatal(err)
	}
	if gs, err := p3.Grants(ctx, "p3", time.Time{}); err != nil || len(gs) != 2 || gs[0].Fact == "" {
		t.Fatalf("before the rejection: %+v, %v", gs, err)
	}
	for _, id := range []int64{bare, withText} {
		if _, err := dm.Graph().RejectFact(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	gs, err := p3.Grants(ctx, "p3", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	k, err := p3.KnowledgeOf(ctx, "p3", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]int{"Grants": len(gs), "KnowledgeOf": len(k.Grants)} {
		if got != 1 {
			t.Errorf("%s: %d grants after the rejection, want the handout alone", name, got)
		}
	}
	for _, g := range append(gs, k.Grants...) {
		if strings.Contains(g.Fact, "MEMBER_OF_SECRET_ORDER") || g.FactID != 0 {
			t.Errorf("a rejected fact reaches the player as granted: %+v", g)
		}
		if !strings.Contains(g.Text, "HANDOUT-MARKER") {
			t.Errorf("the handout's text is gone: %+v", g)
		}
	}
}
