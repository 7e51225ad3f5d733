package continuity_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestDatabaseDownMidSession: when the process loses PostgreSQL, lines are
// still checked against the canon held (a refresh fails with an error, no
// panic); a card pressed while the database is down stays open, with the
// error, and is settled once the database answers again.
func TestDatabaseDownMidSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, dsn := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	// This process's connection to the database, which goes away.
	mine, err := postgres.NewStore(ctx, dsn, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	dm := pgtest.Open(t, mine, camp.ID(), memory.DMViewer())
	chk, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(dm)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	mine.Close()

	if _, err := chk.Refresh(ctx); err == nil {
		t.Fatal("refreshing canon with the database gone succeeded")
	}
	found := chk.Check("Thorin", "Grimjaw is in Duskwood.")
	if len(found) != 1 || found[0].Kind != continuity.KindPlace {
		t.Fatalf("with the database gone: %+v; want the card from the canon held", found)
	}
	board := continuity.NewBoard()
	card := board.Add(continuity.Card{Campaign: camp.ID(), Finding: found[0],
		Line: continuity.Line{SessionID: "s1", Speaker: "Thorin", Text: "Grimjaw is in Duskwood.", At: time.Now()}})
	for _, retcon := range []bool{true, false} {
		if _, err := board.Settle(ctx, dm, card.ID, retcon, "dm"); err == nil {
			t.Fatalf("settling (retcon %v) with the database gone succeeded", retcon)
		}
		if c, _ := board.Get(card.ID); c.Status != continuity.CardOpen {
			t.Fatalf("after a failed settlement the card is %s; want it open", c.Status)
		}
	}
	// The database answers again (here: through a connection that works).
	back := pgtest.Open(t, store, camp.ID(), memory.DMViewer())
	c, err := board.Settle(ctx, back, card.ID, true, "dm")
	if err != nil || c.Status != continuity.CardRetconned {
		t.Fatalf("settling once the database is back: %+v, %v", c, err)
	}
	// A player's handle settles nothing.
	other := board.Add(continuity.Card{Campaign: camp.ID(), Finding: found[0]})
	if _, err := board.Settle(ctx, pgtest.Open(t, store, camp.ID(), memory.PlayerViewer()), other.ID, true, "u1"); err == nil {
		t.Error("a player's handle settled a card")
	}
}
