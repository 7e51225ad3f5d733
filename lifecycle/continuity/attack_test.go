package continuity_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestKeepCanonOfALineNotStoredYet: Keep canon pressed while the card's
// line still waits in the outage spool (PostgreSQL is back, the replay
// not done) cannot mark it; the card stays open, to be pressed again,
// rather than settling "kept" and letting the line arrive as canon with
// the DM's choice lost. Once the line is stored, Keep canon marks it; a
// line the DM had already declared non-canon settles the card at once.
func TestKeepCanonOfALineNotStoredYet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	dm := pgtest.Open(t, store, camp.ID(), memory.DMViewer())
	board := continuity.NewBoard()
	at := time.Date(2026, 3, 1, 21, 0, 0, 0, time.UTC)
	line := memory.TranscriptEntry{SessionID: "s1", SpeakerID: "u1", SpeakerName: "Thorin", Text: "Grimjaw is in Duskwood.",
		RawText: "Grimjaw is in Duskwood.", At: at, IdempotencyKey: "attack:keep:1"}
	card := board.Add(continuity.Card{Campaign: camp.ID(), Finding: continuity.Finding{Kind: continuity.KindPlace},
		Line: continuity.Line{SessionID: "s1", SpeakerID: "u1", Speaker: "Thorin", Text: line.Text, At: at, Key: line.IdempotencyKey}})

	c, err := board.Settle(ctx, dm, card.ID, false, "dm")
	if err == nil || !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("Keep canon of a line not stored yet: %+v, %v; want an error wrapping ErrUnavailable", c, err)
	}
	if c, _ := board.Get(card.ID); c.Status != continuity.CardOpen {
		t.Fatalf("the card is %s; want it open, to be pressed again", c.Status)
	}
	// The replay stores the line; Keep canon now marks it.
	if _, err := dm.Sessions().WriteEntry(ctx, line); err != nil {
		t.Fatal(err)
	}
	if c, err = board.Settle(ctx, dm, card.ID, false, "dm"); err != nil || c.Status != continuity.CardKept {
		t.Fatalf("Keep canon once stored: %+v, %v", c, err)
	}
	es, err := dm.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	marked := false
	for _, e := range es {
		if e.IdempotencyKey == line.IdempotencyKey {
			marked = e.NonCanon
		}
	}
	if !marked {
		t.Error("the line was not marked non-canon")
	}
	// A second card on the same line, already non-canon: kept at once,
	// whether the card knows the line by its key or (without one) by its
	// time, given to the nanosecond where the database keeps microseconds.
	for _, l := range []continuity.Line{
		{SessionID: "s1", SpeakerID: "u1", Speaker: "Thorin", Text: line.Text, At: at, Key: line.IdempotencyKey},
		{SessionID: "s1", SpeakerID: "u1", Speaker: "Thorin", Text: line.Text, At: at.Add(300 * time.Nanosecond)},
	} {
		again := board.Add(continuity.Card{Campaign: camp.ID(), Finding: continuity.Finding{Kind: continuity.KindPlace}, Line: l})
		if c, err := board.Settle(ctx, dm, again.ID, false, "dm"); err != nil || c.Status != continuity.CardKept {
			t.Fatalf("Keep canon of a line already non-canon (key %q): %+v, %v", l.Key, c, err)
		}
	}
}
