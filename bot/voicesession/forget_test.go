package voicesession_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
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
	t.Parallel()
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
	m, err := voicesession.New(voicesession.Config{Door: pgtest.Door(t, store), Link: failingLink{},
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

// TestCloseWithTheDatabaseDown shuts the manager down (as serve does on
// SIGTERM) while PostgreSQL is down: Close fails with a *guard.PendingError
// naming the campaign's spool, which stays on disk, and the next manager on
// the same state directory replays it once the database is back.
func TestCloseWithTheDatabaseDown(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, cl.DSN(), 16, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	state := t.TempDir()
	// The database never comes back during the wait: its length decides
	// nothing.
	h := newHarnessOn(t, store, table.Settings{StateDir: state, DrainTimeout: 500 * time.Millisecond}, nil)
	h.start()
	st, ok := h.m.Status(guildID)
	if !ok {
		t.Fatal("no session running")
	}
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	err = h.m.Close(ctxFor(t))
	var pe *guard.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("closing with the database down = %v, want a *guard.PendingError", err)
	}
	dir := table.SpoolDir(state, "ironhold-saga")
	if pe.Dir != dir || pe.Records == 0 {
		t.Fatalf("pending %+v, want the session's end waiting in %s", pe, dir)
	}
	if fi, err := os.Stat(filepath.Join(dir, "spool.log")); err != nil || fi.Size() == 0 {
		t.Fatalf("the spool is not on disk: %v", err)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	camp, err := store.Campaign(ctx, "ironhold-saga")
	if err != nil {
		t.Fatal(err)
	}
	g, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: store.Ping, SpoolDir: dir, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Start(ctx)
	if err := g.Drain(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	ss, err := camp.Sessions().Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ended := false
	for _, s := range ss {
		if s.ID == st.SessionID && !s.EndedAt.IsZero() {
			ended = true
		}
	}
	if !ended {
		t.Errorf("the replayed spool did not end session %s: %+v", st.SessionID, ss)
	}
}
