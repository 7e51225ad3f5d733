package session_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// outageLength is how long the outage test keeps PostgreSQL down:
// GLYPHOXA_OUTAGE (a Go duration), 8 s by default: long enough for the
// guard's probe to back off to its longest interval (2 s) and for
// hundreds of lines to wait in the spool; GLYPHOXA_OUTAGE=30s runs the
// longer outage the test once ran by default.
func outageLength(t *testing.T) time.Duration {
	if s := os.Getenv("GLYPHOXA_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("GLYPHOXA_OUTAGE=%q is not a positive duration: %v", s, err)
		}
		return d
	}
	return 8 * time.Second
}

// TestOutage runs a session that records steadily while its PostgreSQL (a
// private cluster) is stopped hard and started again. Every line must end
// up in the session log once, in order; Record never fails; IsDegraded is
// true throughout the outage and false after it.
func TestOutage(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	outage := outageLength(t)
	// A hang guard, not a budget: outage+90 s ran out at load 20 on 2
	// cores while the guard was still draining the spool.
	ctx, cancel := context.WithTimeout(context.Background(), outage+10*time.Minute)
	defer cancel()
	store, camp := outageCampaign(t, cl)
	s, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping, StateDir: t.TempDir(),
		Summarizer: noSummary, MaxTokens: 1 << 30, ConsolidateEvery: 100 * time.Millisecond,
		Probe:        reconnect.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second},
		WriteTimeout: 2 * time.Second, DrainTimeout: 30 * time.Second, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)

	var (
		recorded atomic.Int64
		errMu    sync.Mutex
		errs     []error
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
			if err := s.Record(ctx, line(i)); err != nil {
				errMu.Lock()
				errs = append(errs, fmt.Errorf("line %d: %w", i, err))
				errMu.Unlock()
			}
			recorded.Store(int64(i + 1))
		}
	}()

	time.Sleep(2 * time.Second)
	if s.IsDegraded() {
		t.Fatal("degraded before the outage")
	}
	before := recorded.Load()
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	for !s.IsDegraded() {
		if time.Since(stoppedAt) > 10*time.Second {
			t.Fatal("not degraded 10 s into the outage")
		}
		time.Sleep(5 * time.Millisecond)
	}
	noticed := time.Since(stoppedAt)
	var healthy, nonEmpty int
	for time.Since(stoppedAt) < outage {
		if !s.IsDegraded() {
			healthy++
		}
		if es, err := s.Memory().Entries(ctx, "s1"); err != nil || es != nil {
			nonEmpty++
		}
		time.Sleep(100 * time.Millisecond)
	}
	if healthy > 0 {
		t.Errorf("IsDegraded was false %d times during the outage", healthy)
	}
	if nonEmpty > 0 {
		t.Errorf("%d reads during the outage returned data or an error, want empty results", nonEmpty)
	}
	during := recorded.Load() - before
	spooled := s.Memory().Stats().Pending
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute) // a hang guard, not a budget (2 min ran out at load 60 on 2 cores)
	err = s.Memory().WaitHealthy(wctx)
	wcancel()
	if err != nil {
		t.Fatal(err)
	}
	recovered := time.Since(restarted)
	time.Sleep(time.Second)
	close(stop)
	<-finished
	if s.IsDegraded() {
		t.Error("still degraded after the recovery")
	}
	stats := s.Memory().Stats()
	if err := s.End(ctx); err != nil {
		t.Fatalf("End: %v", err)
	}
	errMu.Lock()
	for _, err := range errs {
		t.Errorf("Record returned an error: %v", err)
	}
	errMu.Unlock()

	total := int(recorded.Load())
	checkExactlyOnce(t, camp.Sessions(), "s1", total)
	t.Logf("outage %v: recorded %d lines (%d before the stop, %d during the outage; %d spool records at the restart); "+
		"found %d in L1, each once, in order; degraded %v after the stop, healthy %v after the restart; guard %+v",
		outage, total, before, during, spooled, total, noticed.Round(time.Millisecond), recovered.Round(time.Millisecond), stats)
}

// outageCampaign opens a store on the test's own cluster cl (closed when
// the test ends) and its campaign "c".
func outageCampaign(t *testing.T, cl *pgcluster.Cluster) (*postgres.Store, *postgres.Campaign) {
	t.Helper()
	store := pgtest.StoreAt(t, cl.DSN(), 8, postgres.WithLogger(quiet()))
	return store, pgtest.Campaign(t, store, "c")
}
