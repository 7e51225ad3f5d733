package guard_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackRestartsDuringReplay stops PostgreSQL again and again, by fast
// and by immediate shutdown, each time while the guard is replaying its
// spool, and keeps writing throughout. Every entry must end in the log
// once, in order, and no write may fail.
func TestAttackRestartsDuringReplay(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a hang guard
	defer cancel()
	store := pgtest.StoreAt(t, cl.DSN(), 8, postgres.WithLogger(quiet()))
	camp := pgtest.Campaign(t, store, "restarts")
	g, err := guard.New(guard.Config{
		Store: camp.Sessions(), Ping: store.Ping, SpoolDir: t.TempDir(),
		Probe:        reconnect.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond},
		WriteTimeout: 2 * time.Second, ProbeTimeout: time.Second, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Start(ctx)
	const session = "s-restarts"
	base := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := g.StartSession(ctx, session, base); err != nil {
		t.Fatal(err)
	}

	var (
		written atomic.Int64
		errMu   sync.Mutex
		errs    []error
		stop    = make(chan struct{})
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e := memory.TranscriptEntry{SessionID: session, SpeakerID: "p1", SpeakerName: "Ayla",
				Text: fmt.Sprintf("line %06d", i), At: base.Add(time.Duration(i) * time.Millisecond)}
			if _, err := g.WriteEntry(ctx, e); err != nil {
				errMu.Lock()
				errs = append(errs, fmt.Errorf("entry %d: %w", i, err))
				errMu.Unlock()
			}
			written.Store(int64(i + 1))
			time.Sleep(time.Millisecond)
		}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("hang guard: still waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the first lines", func() bool { return written.Load() > 50 })
	midReplay := 0
	for round := range 6 {
		stopDB := cl.StopImmediate
		mode := "immediate"
		if round%2 == 1 {
			stopDB, mode = cl.StopFast, "fast"
		}
		if err := stopDB(); err != nil {
			t.Fatal(err)
		}
		waitFor("degraded", g.IsDegraded)
		// Let a backlog build up so the replay takes a while.
		waitFor("a backlog", func() bool { return g.Stats().Pending >= 400 })
		replayed := g.Stats().Replayed
		if err := cl.Restart(); err != nil {
			t.Fatal(err)
		}
		// Stop again as soon as the replay is under way.
		waitFor("the replay to start", func() bool { s := g.Stats(); return s.Replayed > replayed || s.Pending == 0 })
		if g.Stats().Pending > 0 {
			midReplay++
		}
		t.Logf("round %d (%s): stopping again with %d records pending", round, mode, g.Stats().Pending)
	}
	if err := cl.StopFast(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := g.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-done
	if err := g.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	errMu.Lock()
	for _, err := range errs {
		t.Errorf("the writer saw an error: %v", err)
	}
	errMu.Unlock()
	got := checkLines(ctx, t, camp.Sessions(), session, int(written.Load()))
	t.Logf("%d entries once each, in order; %d of 6 stops came mid-replay; stats %+v", len(got), midReplay, g.Stats())
}
