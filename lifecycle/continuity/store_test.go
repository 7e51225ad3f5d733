package continuity_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// storedFixture is a campaign with canon, and a card raised and stored by
// a "process" (its own store connection), which is then closed.
func storedFixture(t *testing.T, speaker string) (*postgres.Store, string, continuity.Card) {
	t.Helper()
	ctx := context.Background()
	store, dsn := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	proc, err := postgres.NewStore(ctx, dsn, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer proc.Close()
	dm := pgtest.Open(t, proc, camp.ID(), memory.DMViewer())
	chk, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(dm)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	found := chk.Check("Thorin", "Grimjaw is in Duskwood.")
	if len(found) != 1 {
		t.Fatalf("findings: %+v; want one", found)
	}
	// The line is in the session log (Keep canon marks it there).
	at := time.Date(2026, 11, 26, 14, 0, 0, 0, time.UTC)
	key := "stored-fixture:" + speaker
	if _, err := dm.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: speaker, SpeakerName: "Thorin",
		Text: "Grimjaw is in Duskwood.", RawText: "Grimjaw is in Duskwood.", At: at, IdempotencyKey: key}); err != nil {
		t.Fatal(err)
	}
	board := continuity.NewBoard()
	card := board.Add(continuity.Card{Campaign: camp.ID(), GuildID: "g1", Finding: found[0],
		Line: continuity.Line{SessionID: "s1", SpeakerID: speaker, Speaker: "Thorin", Text: "Grimjaw is in Duskwood.",
			At: at, Key: key}})
	if err := board.Save(ctx, dm); err != nil {
		t.Fatalf("storing the card: %v", err)
	}
	return store, camp.ID(), card
}

// TestCardOutlivesItsProcess: a card raised by a process that stopped is
// listed and settled by new process objects on the same database, once.
func TestCardOutlivesItsProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, campID, card := storedFixture(t, "u-thorin")
	dm := pgtest.Open(t, store, campID, memory.DMViewer())

	var fresh *continuity.Board // the console of a process that runs no table
	cards, err := fresh.Stored(ctx, dm, continuity.MaxCards)
	if err != nil || len(cards) != 1 || cards[0].ID != card.ID || cards[0].Status != continuity.CardOpen ||
		cards[0].Line.Text != card.Line.Text || cards[0].Canon.ID != card.Canon.ID {
		t.Fatalf("stored cards after the restart: %+v, %v; want card %s open", cards, err, card.ID)
	}
	got, err := continuity.NewBoard().Settle(ctx, dm, card.ID, false, "dm-1")
	if err != nil || got.Status != continuity.CardKept || got.SettledBy != "dm-1" || got.SettledAt.IsZero() {
		t.Fatalf("settling after the restart: %+v, %v; want kept by dm-1", got, err)
	}
	// A second press, from yet another process object, is told.
	again, err := continuity.SettleStored(ctx, pgtest.Open(t, store, campID, memory.DMViewer()), card.ID, true, "dm-2")
	if !errors.Is(err, continuity.ErrSettled) || again.Status != continuity.CardKept || again.SettledBy != "dm-1" {
		t.Fatalf("settling twice: %+v, %v; want ErrSettled with the first settlement", again, err)
	}
	cards, err = fresh.Stored(ctx, dm, continuity.MaxCards)
	if err != nil || len(cards) != 1 || cards[0].Status != continuity.CardKept || cards[0].Note == "" {
		t.Fatalf("stored cards after settling: %+v, %v", cards, err)
	}
	// An unknown id, and the card through another campaign's DM, find nothing.
	pgtest.Campaign(t, store, "other")
	otherDM := pgtest.Open(t, store, "other", memory.DMViewer())
	for name, c := range map[string]*access.Campaign{"unknown id": dm, "other campaign": otherDM} {
		id := card.ID
		if name == "unknown id" {
			id = "ffffffffffffffff"
		}
		if _, err := continuity.SettleStored(ctx, c, id, true, "dm"); !errors.Is(err, continuity.ErrNoCard) {
			t.Errorf("%s: %v; want ErrNoCard", name, err)
		}
	}
}

// TestSettleRace: presses of one card from several processes at once
// settle it exactly once; the others are told it was settled.
func TestSettleRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, campID, card := storedFixture(t, "u-thorin")
	const presses = 6
	var wg sync.WaitGroup
	errs := make([]error, presses)
	got := make([]continuity.Card, presses)
	for i := range presses {
		dm := pgtest.Open(t, store, campID, memory.DMViewer())
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = continuity.SettleStored(ctx, dm, card.ID, i%2 == 0, "dm")
		}()
	}
	wg.Wait()
	won, told := -1, 0
	for i, err := range errs {
		switch {
		case err == nil:
			if won >= 0 {
				t.Fatalf("presses %d and %d both settled the card", won, i)
			}
			won = i
		case errors.Is(err, continuity.ErrSettled):
			told++
		default:
			t.Errorf("press %d: %v", i, err)
		}
	}
	if won < 0 || told != presses-1 {
		t.Fatalf("winner %d, told %d of %d; want one winner", won, told, presses)
	}
	for i := range presses {
		if got[i].Status != got[won].Status || got[i].Status == continuity.CardOpen {
			t.Errorf("press %d sees %q; the winner settled %q", i, got[i].Status, got[won].Status)
		}
	}
}

// TestPlayerCannotReachCards: a player's handle neither lists nor settles
// the DM's cards, nor stores one.
func TestPlayerCannotReachCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, campID, card := storedFixture(t, "u-thorin")
	player := pgtest.Open(t, store, campID, memory.Viewer{Role: memory.RolePlayer, PlayerID: "u-thorin"})
	if cards, err := (*continuity.Board)(nil).Stored(ctx, player, 10); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player listed the cards: %+v, %v", cards, err)
	}
	if cards, err := player.ContinuityCards(ctx, 10); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player read the stored cards: %+v, %v", cards, err)
	}
	if c, err := continuity.SettleStored(ctx, player, card.ID, true, "u-thorin"); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player settled a card: %+v, %v", c, err)
	}
	if err := continuity.NewBoard().Save(ctx, player); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player's handle stored cards: %v", err)
	}
	dm := pgtest.Open(t, store, campID, memory.DMViewer())
	cards, err := (*continuity.Board)(nil).Stored(ctx, dm, 10)
	if err != nil || len(cards) != 1 || cards[0].Status != continuity.CardOpen {
		t.Fatalf("after the player's tries: %+v, %v; want the card open", cards, err)
	}
}

// TestForgetMeRemovesCards: forgetting a player removes the cards quoting
// their lines, and leaves the others.
func TestForgetMeRemovesCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, campID, card := storedFixture(t, "u-thorin")
	dm := pgtest.Open(t, store, campID, memory.DMViewer())
	board := continuity.NewBoard()
	kept := board.Add(continuity.Card{Campaign: campID, Finding: card.Finding,
		Line: continuity.Line{SessionID: "s1", SpeakerID: "u-lyra", Speaker: "Lyra", Text: "Grimjaw is in Duskwood."}})
	if err := board.Save(ctx, dm); err != nil {
		t.Fatal(err)
	}
	if _, err := dm.ForgetSpeaker(ctx, "u-thorin"); err != nil {
		t.Fatalf("forget-me: %v", err)
	}
	// The process's board drops its copies too (the table's live report).
	mine := board.Add(continuity.Card{Campaign: campID, Finding: card.Finding,
		Line: continuity.Line{SessionID: "s1", SpeakerID: "u-thorin", Speaker: "Thorin", Text: "Grimjaw is in Duskwood."}})
	board.ForgetSpeaker(campID, "u-thorin")
	if _, ok := board.Get(mine.ID); ok {
		t.Error("the board kept a card quoting the forgotten player")
	}
	if _, ok := board.Get(kept.ID); !ok {
		t.Error("the board dropped another player's card")
	}
	cards, err := board.Stored(ctx, dm, 10)
	if err != nil || len(cards) != 1 || cards[0].ID != kept.ID {
		t.Fatalf("cards after forgetting u-thorin: %+v, %v; want only %s", cards, err, kept.ID)
	}
	if _, err := continuity.SettleStored(ctx, dm, card.ID, false, "dm"); !errors.Is(err, continuity.ErrNoCard) {
		t.Errorf("settling the forgotten card: %v; want ErrNoCard", err)
	}
}

// TestPressOnACardStillInTheSpool: a card raised while the database was
// down is saved into the session's outage spool (SaveThrough through the
// guard; here a put that keeps it, as the spool does). A DM pressing its
// button before the spool is replayed is told the card waits for the
// database and to press again, and gets the card back open (ATTACK3: the
// press was answered "no such card", as if it were forgotten); once the
// row lands the same press settles it.
func TestPressOnACardStillInTheSpool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, campID, stored := storedFixture(t, "u-thorin")
	dm := pgtest.Open(t, store, campID, memory.DMViewer())
	board := continuity.NewBoard()
	card := board.Add(continuity.Card{Campaign: campID, GuildID: "g1", Finding: stored.Finding, Line: stored.Line})
	var spooled []access.ContinuityCard
	if err := board.SaveThrough(ctx, campID, func(_ context.Context, c access.ContinuityCard) error {
		spooled = append(spooled, c)
		return nil
	}); err != nil || len(spooled) != 1 {
		t.Fatalf("saving into the spool: %v, %d cards", err, len(spooled))
	}
	got, err := board.Settle(ctx, dm, card.ID, false, "dm-1")
	if !errors.Is(err, continuity.ErrCardPending) || errors.Is(err, continuity.ErrNoCard) || got.ID != card.ID ||
		got.Status != continuity.CardOpen {
		t.Fatalf("pressing a card waiting in the spool: %+v, %v; want it back open with ErrCardPending", got, err)
	}
	// Another board (another process) does not know the card: it is told
	// the card may still wait in a spool.
	if _, err := continuity.NewBoard().Settle(ctx, dm, card.ID, false, "dm-1"); !errors.Is(err, continuity.ErrNoCard) {
		t.Fatalf("another process pressing it: %v; want ErrNoCard", err)
	}
	// The spool is replayed: the row lands, and the press settles it.
	if err := dm.PutContinuityCard(ctx, spooled[0]); err != nil {
		t.Fatal(err)
	}
	got, err = board.Settle(ctx, dm, card.ID, false, "dm-1")
	if err != nil || got.Status != continuity.CardKept {
		t.Fatalf("pressing it once stored: %+v, %v; want it kept", got, err)
	}
}
