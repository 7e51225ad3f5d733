package voicesession_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
)

// TestForgetSpooledWithoutASession forgets a player when no session runs
// but an ended one left its outage spool (the database was down when it
// ended): the player's spooled lines are taken out and counted, and when
// the spool is replayed the other players' lines arrive and none of the
// player's.
func TestForgetSpooledWithoutASession(t *testing.T) {
	store, dsn := pgtest.NewStore(t, 16)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	ctx := context.Background()
	state := t.TempDir()
	dir := table.SpoolDir(state, camp.ID())

	// The session that ended with the database down.
	dead, err := postgres.NewStore(ctx, dsn, 16, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	deadCamp, err := dead.Campaign(ctx, camp.ID())
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	g, err := guard.New(guard.Config{Store: deadCamp.Sessions(), Ping: dead.Ping, SpoolDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := g.StartSession(ctx, "ended-down", at); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		who := []string{playerID, "444444444444444444"}[i%2]
		e := memory.TranscriptEntry{SessionID: "ended-down", SpeakerID: who, SpeakerName: who,
			Text: fmt.Sprintf("line %d", i), At: at.Add(time.Duration(i) * time.Second)}
		if _, err := g.WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	emb, err := embed.NewOffline(16)
	if err != nil {
		t.Fatal(err)
	}
	m, err := voicesession.New(voicesession.Config{Store: store, Link: failingLink{},
		Providers: table.Providers{STT: &scriptedSTT{}, Embedder: emb}, Settings: table.Settings{StateDir: state},
		Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	erased := false
	live, err := m.ForgetSpooled(ctx, camp.ID(), playerID, func(ctx context.Context) error {
		erased = true
		_, err := camp.ForgetSpeaker(ctx, playerID)
		return err
	})
	if err != nil || live.Spooled != 3 || live.Deferred || !erased {
		t.Fatalf("ForgetSpooled = %+v, %v (erased %v); want 3 spooled lines out and the erase run", live, err, erased)
	}

	// The next session of the campaign replays the spool.
	g2, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: store.Ping, SpoolDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	g2.Start(ctx)
	dctx, cancel := context.WithTimeout(ctx, time.Minute) // a hang guard: the database answers, Drain replays at once
	defer cancel()
	if err := g2.Drain(dctx); err != nil {
		t.Fatal(err)
	}
	es := entries(t, camp, "ended-down")
	if len(es) != 3 {
		t.Fatalf("the replayed session holds %d lines, want the other player's 3: %+v", len(es), es)
	}
	for _, e := range es {
		if e.SpeakerID == playerID {
			t.Errorf("a forgotten line came back: %+v", e)
		}
	}
}
