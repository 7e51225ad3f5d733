package table_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/table"
)

// TestReplaySpoolOfAKilledRun: a run records a session's start, its lines
// and its end while PostgreSQL is down, all acknowledged (in the fsynced
// outage spool), and stops without storing them (killed: its guard is
// closed with the records on disk). The database comes back, and the next
// serve replays the campaign's spool at start (table.ReplaySpool): every
// line is stored once, in order, and the session is ended, so that the
// extraction resumed next sees all of it. A spool another process has open
// is left to it, and a campaign without one is nothing to do.
func TestReplaySpoolOfAKilledRun(t *testing.T) {
	t.Parallel()
	cl, store := outageStore(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard, not a budget
	defer cancel()
	door, err := access.New(access.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	camp, err := door.Open(ctx, "killed-run", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	if err := table.ReplaySpool(ctx, camp, stateDir, time.Minute, quiet()); err != nil {
		t.Fatalf("replaying a campaign that has no spool: %v", err)
	}

	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	killed, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: camp.Ping, SpoolDir: table.SpoolDir(stateDir, camp.ID()),
		Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)
	const n = 12
	if err := killed.StartSession(ctx, "s1", start); err != nil {
		t.Fatalf("starting the session during the outage: %v", err)
	}
	var lines []memory.TranscriptEntry
	for i := range n {
		lines = append(lines, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "p1", SpeakerName: "Ayla",
			Text: fmt.Sprintf("line %d of the night", i), At: start.Add(time.Duration(i+1) * time.Second),
			IdempotencyKey: fmt.Sprintf("s1:%d", i)})
	}
	if _, err := killed.WriteEntries(ctx, lines); err != nil {
		t.Fatalf("recording the lines during the outage: %v", err)
	}
	if err := killed.EndSession(ctx, "s1", start.Add(time.Hour)); err != nil {
		t.Fatalf("ending the session during the outage: %v", err)
	}
	if killed.Stats().Pending == 0 {
		t.Fatal("nothing was spooled: the attack proves nothing")
	}
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}

	// While another process has the spool open, it is left to that one.
	if err := table.ReplaySpool(ctx, camp, stateDir, time.Minute, quiet()); !errors.Is(err, spool.ErrLocked) {
		t.Fatalf("replaying a spool another run has open: %v, want spool.ErrLocked", err)
	}
	killed.Close() // the run is gone; its records stay on disk

	if err := table.ReplaySpool(ctx, camp, stateDir, time.Minute, quiet()); err != nil {
		t.Fatalf("replaying the killed run's spool: %v", err)
	}
	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("the session log holds %d lines after the replay, want the %d the killed run acknowledged", len(got), n)
	}
	for i, e := range got {
		if want := fmt.Sprintf("line %d of the night", i); e.Text != want {
			t.Fatalf("line %d is %q, want %q (lost, duplicated or out of order)", i, e.Text, want)
		}
	}
	s, err := camp.Sessions().Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !s.EndedAt.Equal(start.Add(time.Hour)) {
		t.Fatalf("session s1 ended at %v after the replay, want %v", s.EndedAt, start.Add(time.Hour))
	}
	// A second start replays nothing more.
	if err := table.ReplaySpool(ctx, camp, stateDir, time.Minute, quiet()); err != nil {
		t.Fatal(err)
	}
	if again, _ := camp.Sessions().Entries(ctx, "s1"); len(again) != n {
		t.Fatalf("a second replay left %d lines, want %d", len(again), n)
	}
}
