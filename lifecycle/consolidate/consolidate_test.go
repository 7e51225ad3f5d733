package consolidate_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/lifecycle/consolidate"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

// steps records the calls of each step; fail makes a step fail.
type steps struct {
	mu       sync.Mutex
	index    int
	extract  int
	saved    []string
	summary  string
	failNext bool
	called   chan string
}

func newSteps() *steps { return &steps{called: make(chan string, 64)} }

func (s *steps) config(clk *clocktest.Fake) consolidate.Config {
	return consolidate.Config{
		Index: func(context.Context) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.called <- "index"
			if s.failNext {
				s.failNext = false
				return errors.New("database unreachable")
			}
			s.index++
			return nil
		},
		Extract: func(context.Context) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.extract++
			s.called <- "extract"
			return nil
		},
		Summary: func() string { s.mu.Lock(); defer s.mu.Unlock(); return s.summary },
		SaveSummary: func(_ context.Context, text string) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.saved = append(s.saved, text)
			return nil
		},
		IndexEvery: 10 * time.Second,
		Interval:   30 * time.Minute,
		Clock:      clk,
		Logger:     quiet(),
	}
}

func (s *steps) wait(t *testing.T, what string) {
	t.Helper()
	select {
	case got := <-s.called:
		if got != what {
			t.Fatalf("step %q ran, want %q", got, what)
		}
	case <-time.After(hangGuard):
		t.Fatalf("step %q did not run", what)
	}
}

func TestBeatsIndexOnlyWhenLinesWereNoted(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	s := newSteps()
	c, err := consolidate.New(s.config(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Start(ctx)
	defer c.Close(ctx)

	// No line yet: the index beat does nothing.
	clk.WaitTimers(ctx, 2)
	clk.Advance(10 * time.Second)
	clk.WaitTimers(ctx, 2)
	c.Noted()
	clk.Advance(10 * time.Second)
	s.wait(t, "index")
	clk.WaitTimers(ctx, 2)
	// Nothing new: no second pass.
	clk.Advance(10 * time.Second)
	clk.WaitTimers(ctx, 2)
	s.mu.Lock()
	s.summary = "The party met Brannoc."
	s.mu.Unlock()
	c.Noted()
	clk.Advance(10 * time.Second)
	s.wait(t, "index")
	clk.WaitTimers(ctx, 2)
	if st := c.Stats(); st.Indexed != 2 || st.Extractions != 0 || st.SummariesSaved != 1 {
		t.Fatalf("stats %+v, want 2 index passes, 1 summary saved, no extraction", st)
	}
	// The extraction beat runs on its own interval.
	clk.Advance(30 * time.Minute)
	s.wait(t, "extract")
}

func TestFailedIndexIsRetriedOnTheNextBeat(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	s := newSteps()
	s.failNext = true
	c, err := consolidate.New(s.config(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Start(ctx)
	c.Noted()
	clk.WaitTimers(ctx, 2)
	clk.Advance(10 * time.Second)
	s.wait(t, "index")
	clk.WaitTimers(ctx, 2)
	clk.Advance(10 * time.Second)
	s.wait(t, "index")
	clk.WaitTimers(ctx, 2)
	if st := c.Stats(); st.Indexed != 1 || st.Failures != 1 {
		t.Fatalf("stats %+v, want one failure then one index pass", st)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestCloseFinishesEverything(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	s := newSteps()
	c, err := consolidate.New(s.config(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Start(ctx)
	c.Noted()
	s.mu.Lock()
	s.summary = "summary one"
	s.mu.Unlock()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Extraction of the tail is post-session processing's.
	if s.index != 1 || s.extract != 0 || len(s.saved) != 1 || s.saved[0] != "summary one" {
		t.Fatalf("close ran index %d, extract %d, saved %q; want index and summary once, no extraction", s.index, s.extract, s.saved)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestConsolidateNowRunsEveryStep(t *testing.T) {
	clk := clocktest.NewFake(t0)
	s := newSteps()
	c, err := consolidate.New(s.config(clk))
	if err != nil {
		t.Fatal(err)
	}
	c.Noted()
	if err := c.ConsolidateNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Indexed != 1 || st.Extractions != 1 {
		t.Fatalf("stats %+v, want one index pass and one extraction", st)
	}
	// Nothing new since: a second call does no work.
	if err := c.ConsolidateNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st.Indexed != 1 || st.Extractions != 1 {
		t.Fatalf("stats %+v after a pass with nothing new, want unchanged", st)
	}
}

func TestSummaryStepsGoTogether(t *testing.T) {
	_, err := consolidate.New(consolidate.Config{Summary: func() string { return "" }})
	if err == nil {
		t.Fatal("a summary source without a saver was accepted")
	}
}

// Stop (a session handed over to another process) stops the beats with no
// last pass, unlike Close; Close after Stop does nothing.
func TestStopRunsNoLastPass(t *testing.T) {
	leakcheck.Check(t)
	clk := clocktest.NewFake(t0)
	s := newSteps()
	c, err := consolidate.New(s.config(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Start(ctx)
	clk.WaitTimers(ctx, 2)
	c.Noted()
	s.mu.Lock()
	s.summary = "The party met Brannoc."
	s.mu.Unlock()
	c.Stop()
	c.Stop()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // no beat runs either
	if st := c.Stats(); st.Indexed != 0 || st.SummariesSaved != 0 || st.Extractions != 0 || len(s.called) != 0 {
		t.Errorf("stats %+v, %d steps called after Stop; want none", st, len(s.called))
	}
}
