package guard_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// card is a continuity card quoting speaker's line i.
func card(id, speaker string, i int) access.ContinuityCard {
	return access.ContinuityCard{ID: id, SessionID: "s1", SpeakerID: speaker, LineText: said(speaker, i).Text,
		Kind: "place", Card: []byte(`{"id":"` + id + `"}`), CreatedAt: said(speaker, i).At.Add(time.Second)}
}

// deadCampaign is campaign "c" of a store whose pool is closed, and the
// store's ping: every call fails as if the database were gone.
func deadCampaign(t *testing.T, dsn string) (*postgres.Campaign, func(context.Context) error) {
	t.Helper()
	s, err := postgres.NewStore(context.Background(), dsn, 8, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	c := pgtest.Campaign(t, s, "c")
	s.Close()
	return c, s.Ping
}

// storedCards are the ids of campaign c's stored cards.
func storedCards(t *testing.T, c *postgres.Campaign) []string {
	t.Helper()
	cs, err := c.ContinuityCards(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range cs {
		ids = append(ids, x.ID)
	}
	return ids
}

// TestCardDuringOutageOutlivesTheProcess raises a continuity card while
// the database is down and stops the process before it is back (ATTACK2:
// the card was held only in the board, in memory, and lost): the card
// is in the spool, and the next guard on it stores it once, after the
// line it quotes.
func TestCardDuringOutageOutlivesTheProcess(t *testing.T) {
	leakcheck.Check(t)
	store, dsn := pgtest.NewStore(t, 8)
	ctx := context.Background()
	dir := t.TempDir()

	dead, ping := deadCampaign(t, dsn)
	g, err := guard.New(guard.Config{Store: dead.Sessions(), Ping: ping, SpoolDir: dir, Probe: fastProbe(),
		PutCard: dead.PutContinuityCard, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	if err := g.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteEntry(ctx, said("p1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := g.PutCard(ctx, card("card-1", "p1", 1)); err != nil {
		t.Fatalf("a card raised during an outage: %v (want it spooled)", err)
	}
	if st := g.Stats(); st.Pending != 3 {
		t.Fatalf("%d records spooled, want 3 (start, line, card)", st.Pending)
	}
	// The process stops with the database still down.
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	live := pgtest.Campaign(t, store, "c")
	g2, err := guard.New(guard.Config{Store: live.Sessions(), Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(),
		PutCard: live.PutContinuityCard, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	g2.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	if err := g2.WaitHealthy(wctx); err != nil {
		t.Fatal(err)
	}
	if ids := storedCards(t, live); len(ids) != 1 || ids[0] != "card-1" {
		t.Fatalf("stored cards after the replay = %v, want [card-1]", ids)
	}
	// Stored again (a replay repeated after a crash): still one.
	if err := g2.PutCard(ctx, card("card-1", "p1", 1)); err != nil {
		t.Fatal(err)
	}
	if ids := storedCards(t, live); len(ids) != 1 {
		t.Fatalf("stored cards after a second put = %v, want one", ids)
	}
}

// TestForgetTakesSpooledCards forgets a player while a card quoting them
// waits in the spool: the card leaves the spool with their lines, a card
// raised before the forget and put after it is dropped, and the other
// player's card is stored.
func TestForgetTakesSpooledCards(t *testing.T) {
	leakcheck.Check(t)
	store, dsn := pgtest.NewStore(t, 8)
	ctx := context.Background()
	dir := t.TempDir()
	dead, ping := deadCampaign(t, dsn)
	live := pgtest.Campaign(t, store, "c")
	g, err := guard.New(guard.Config{Store: dead.Sessions(), Ping: ping, SpoolDir: dir, Probe: fastProbe(),
		PutCard: dead.PutContinuityCard, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	for _, c := range []access.ContinuityCard{card("card-p1", "p1", 1), card("card-p2", "p2", 2)} {
		if err := g.PutCard(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.Forget(ctx, "p1", t0.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if err := g.PutCard(ctx, card("card-p1-late", "p1", 3)); err != nil {
		t.Fatal(err)
	}
	if st := g.Stats(); st.Pending != 1 {
		t.Fatalf("%d records spooled after the forget, want 1 (p2's card)", st.Pending)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	g2, err := guard.New(guard.Config{Store: live.Sessions(), Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(),
		PutCard: live.PutContinuityCard, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	g2.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	if err := g2.WaitHealthy(wctx); err != nil {
		t.Fatal(err)
	}
	if ids := storedCards(t, live); len(ids) != 1 || ids[0] != "card-p2" {
		t.Fatalf("stored cards = %v, want [card-p2]", ids)
	}
}

// TestPutCardRefusesBadCards: a card without id or time, or a guard with
// no way to store cards, is refused at once, never spooled.
func TestPutCardRefusesBadCards(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewStore(t, 8)
	dead, ping := deadCampaign(t, dsn)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		put  bool
		card access.ContinuityCard
	}{
		{"no PutCard", false, card("c", "p1", 1)},
		{"no id", true, access.ContinuityCard{CreatedAt: t0, Kind: "place", Card: []byte(`{}`)}},
		{"no time", true, access.ContinuityCard{ID: "x", Kind: "place", Card: []byte(`{}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := guard.Config{Store: dead.Sessions(), Ping: ping, SpoolDir: t.TempDir(), Probe: fastProbe(), Logger: quiet()}
			if tc.put {
				cfg.PutCard = dead.PutContinuityCard
			}
			g, err := guard.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if err := g.PutCard(ctx, tc.card); err == nil {
				t.Fatal("accepted")
			}
			if st := g.Stats(); st.Pending != 0 {
				t.Fatalf("%d records spooled", st.Pending)
			}
		})
	}
}
