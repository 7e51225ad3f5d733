package postgres_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSettledCardsArePruned: settling a continuity card deletes the
// settled cards beyond the newest KeepSettledCards (ATTACK2: settled
// cards were never pruned, so the table grew with every contradiction
// of every session); open cards, a claimed card whose settlement is not
// recorded, and other campaigns' cards stay.
func TestSettledCardsArePruned(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	other := pgtest.Campaign(t, s, "other")
	t0 := time.Date(2026, 11, 26, 20, 0, 0, 0, time.UTC)
	put := func(c *postgres.Campaign, id string, i int) {
		t.Helper()
		if err := c.PutContinuityCard(ctx, postgres.ContinuityCard{ID: id, SessionID: "s1", SpeakerID: "u1", Kind: "place",
			Card: []byte(`{}`), CreatedAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	settle := func(c *postgres.Campaign, id string) {
		t.Helper()
		if _, claimed, err := c.ClaimContinuityCard(ctx, id, "dm"); err != nil || !claimed {
			t.Fatalf("claiming %s: %v, %v", id, claimed, err)
		}
		if err := c.FinishContinuityCard(ctx, id, "kept", []byte(`{"status":"kept"}`)); err != nil {
			t.Fatal(err)
		}
	}
	put(other, "elsewhere", 0)
	settle(other, "elsewhere")
	put(c, "open", 0)
	put(c, "claimed", 1)
	if _, _, err := c.ClaimContinuityCard(ctx, "claimed", "dm"); err != nil {
		t.Fatal(err)
	}
	n := postgres.KeepSettledCards + 3
	for i := range n {
		id := fmt.Sprintf("card-%03d", i)
		put(c, id, 2+i)
		settle(c, id)
	}
	cards, err := c.ContinuityCards(ctx, 10*n)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range cards {
		ids = append(ids, x.ID)
	}
	if len(ids) != postgres.KeepSettledCards+2 {
		t.Fatalf("%d cards kept, want %d settled, the open one and the claimed one", len(ids), postgres.KeepSettledCards)
	}
	for _, id := range []string{"open", "claimed", fmt.Sprintf("card-%03d", n-1), "card-003"} {
		if !slices.Contains(ids, id) {
			t.Errorf("card %s was pruned", id)
		}
	}
	for _, id := range []string{"card-000", "card-001", "card-002"} {
		if slices.Contains(ids, id) {
			t.Errorf("card %s, settled first, was kept", id)
		}
	}
	if cs, err := other.ContinuityCards(ctx, 10); err != nil || len(cs) != 1 {
		t.Errorf("the other campaign's cards = %d, %v; want its one", len(cs), err)
	}
	if _, err := c.PruneContinuityCards(ctx, -1); err == nil {
		t.Error("a negative keep was accepted")
	}
	if err := c.FinishContinuityCard(ctx, "claimed", "", []byte(`{}`)); err == nil {
		t.Error("a settlement without an outcome was accepted")
	}
}
