package table_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestForgetDuringAnOutageHandsBackTheDeletedCards: a player asks to be
// forgotten while PostgreSQL is down, so the erase waits in the outage
// spool. When the spool is replayed, the table hands what the erase
// deleted to Config.OnForgotten: the continuity cards quoting the player
// that another process raised and stored (the bot takes their direct
// messages to the DMs down by these ids) and the sessions to rebuild
// (ATTACK3: the replay dropped the report, so only the answering
// process's own cards left the DMs' messages).
func TestForgetDuringAnOutageHandsBackTheDeletedCards(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	cl, store := outageStore(t)
	type forgotten struct {
		speaker string
		rep     memory.ForgetReport
	}
	got := make(chan forgotten, 4)
	r := newRigOn(t, store, 0, nil, func(c *table.Config) {
		c.Settings.Probe = outageProbe()
		c.OnForgotten = func(speaker string, rep memory.ForgetReport) { got <- forgotten{speaker, rep} }
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard, not a budget
	defer cancel()
	if _, err := r.turn(ctx); err != nil {
		t.Fatal(err)
	}
	// Another process raised a card on the player's line and stored it.
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	card := postgres.ContinuityCard{ID: "c-elsewhere", SessionID: "bench", SpeakerID: player, LineText: "Grimjaw is in Duskwood.",
		Kind: "place", Card: []byte(`{}`), CreatedAt: at}
	if err := r.camp.PutContinuityCard(ctx, card); err != nil {
		t.Fatal(err)
	}
	other := card
	other.ID, other.SpeakerID = "c-other", "someone-else"
	if err := r.camp.PutContinuityCard(ctx, other); err != nil {
		t.Fatal(err)
	}

	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	rep, err := r.s.Forget(ctx, player, func(ctx context.Context) error {
		_, err := r.camp.ForgetSpeaker(ctx, player)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Deferred {
		t.Fatalf("forget-me while the database is down: %+v, want it deferred", rep)
	}
	select {
	case f := <-got:
		t.Fatalf("OnForgotten ran before the database was back: %+v", f)
	default:
	}
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	var f forgotten
	select {
	case f = <-got:
	case <-ctx.Done():
		t.Fatal("the replayed forget-me handed nothing back")
	}
	if f.speaker != player || !slices.Equal(f.rep.Cards, []string{"c-elsewhere"}) || !slices.Contains(f.rep.Sessions, "bench") {
		t.Fatalf("the replayed forget-me handed back speaker %q, cards %v, sessions %v; want %s, [c-elsewhere], [bench]",
			f.speaker, f.rep.Cards, f.rep.Sessions, player)
	}
	cards, err := r.camp.ContinuityCards(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(cards) != 1 || cards[0].ID != "c-other" {
		t.Fatalf("cards left after the replayed forget-me: %+v, want only c-other", cards)
	}
}
