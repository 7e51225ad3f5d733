package guard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
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

// guardOutage is the outage of the guard-level test; the session-level
// test in package session runs a longer one (GLYPHOXA_OUTAGE).
const guardOutage = 5 * time.Second

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestOutageLosesNothing writes steadily through a guard while the database
// is stopped hard and started again: every entry must be stored exactly
// once, in order, and no write may fail.
func TestOutageLosesNothing(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	outage := guardOutage
	// A hang guard, not a budget.
	ctx, cancel := context.WithTimeout(context.Background(), outage+10*time.Minute)
	defer cancel()

	store := pgtest.StoreAt(t, cl.DSN(), 8, postgres.WithLogger(quiet()))
	camp := pgtest.Campaign(t, store, "outage")
	g, err := guard.New(guard.Config{
		Store: camp.Sessions(), Ping: store.Ping, SpoolDir: t.TempDir(),
		Probe:        reconnect.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second},
		WriteTimeout: 2 * time.Second, ProbeTimeout: time.Second,
		Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Start(ctx)

	const session = "s-outage"
	base := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := g.StartSession(ctx, session, base); err != nil {
		t.Fatalf("StartSession: %v", err)
	}

	var (
		written  atomic.Int64
		errs     []error
		errMu    sync.Mutex
		stop     = make(chan struct{})
		finished = make(chan struct{})
	)
	go func() {
		defer close(finished)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			e := memory.TranscriptEntry{SessionID: session, SpeakerID: "p1", SpeakerName: "Ayla",
				Text: fmt.Sprintf("line %06d", i), At: base.Add(time.Duration(i) * time.Millisecond)}
			if _, err := g.WriteEntry(ctx, e); err != nil {
				errMu.Lock()
				errs = append(errs, fmt.Errorf("entry %d: %w", i, err))
				errMu.Unlock()
			}
			written.Store(int64(i + 1))
		}
	}()

	time.Sleep(2 * time.Second)
	if g.IsDegraded() {
		t.Fatal("degraded before the outage")
	}
	beforeOutage := written.Load()
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	// The first write after the stop notices it.
	for !g.IsDegraded() {
		if time.Since(stoppedAt) > 10*time.Second {
			t.Fatal("not degraded 10 s into the outage")
		}
		time.Sleep(10 * time.Millisecond)
	}
	noticed := time.Since(stoppedAt)
	healthyDuring := 0
	for time.Since(stoppedAt) < outage {
		if !g.IsDegraded() {
			healthyDuring++
		}
		if got, _ := g.Entries(ctx, session); got != nil {
			t.Fatalf("a read during the outage returned %d entries, want an empty result", len(got))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if healthyDuring > 0 {
		t.Errorf("IsDegraded was false %d times during the outage", healthyDuring)
	}
	duringOutage := written.Load() - beforeOutage
	spooled := g.Stats().Pending
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	restartedAt := time.Now()
	waitCtx, waitCancel := context.WithTimeout(ctx, 5*time.Minute) // a hang guard, not a budget (2 min ran out at load 60 on 2 cores)
	if err := g.WaitHealthy(waitCtx); err != nil {
		waitCancel()
		t.Fatal(err)
	}
	waitCancel()
	recovered := time.Since(restartedAt)
	time.Sleep(time.Second) // keep writing after recovery
	close(stop)
	<-finished
	if g.IsDegraded() {
		t.Error("still degraded after recovery")
	}

	errMu.Lock()
	for _, err := range errs {
		t.Errorf("the writer saw an error: %v", err)
	}
	errMu.Unlock()

	total := int(written.Load())
	got := checkLines(ctx, t, camp.Sessions(), session, total)
	st := g.Stats()
	t.Logf("outage %v: wrote %d entries (%d before the outage, %d during it, %d spool records at restart), found %d in L1, each once, in order; "+
		"degraded %v after the stop, recovered %v after the restart; stats %+v",
		outage, total, beforeOutage, duringOutage, spooled, len(got), noticed.Round(time.Millisecond), recovered.Round(time.Millisecond), st)
}

// checkLines checks that the session log holds the total lines "line
// 000000", "line 000001", … of session once each, in order, and returns
// them.
func checkLines(ctx context.Context, t *testing.T, l1 memory.SessionStore, session string, total int) []memory.TranscriptEntry {
	t.Helper()
	got, err := l1.Entries(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for i, e := range got {
		if want := fmt.Sprintf("line %06d", i); e.Text != want {
			t.Fatalf("entry %d is %q, want %q (lost, duplicated or out of order)", i, e.Text, want)
		}
		if keys[e.IdempotencyKey] {
			t.Fatalf("idempotency key %q stored twice", e.IdempotencyKey)
		}
		keys[e.IdempotencyKey] = true
	}
	if len(got) != total {
		t.Fatalf("wrote %d entries, found %d", total, len(got))
	}
	return got
}
