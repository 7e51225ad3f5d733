package postsession_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// countingExtractor is a model that bills each call; its first call
// waits for release (the model is slow).
type countingExtractor struct {
	calls   atomic.Int32
	held    chan struct{} // closed at the first call
	again   chan struct{} // closed at the second
	release chan struct{}
	once    sync.Once
}

func (x *countingExtractor) Extract(ctx context.Context, _ []memory.Entity, _ []memory.TranscriptEntry) (postsession.Extraction, error) {
	switch x.calls.Add(1) {
	case 1:
		close(x.held)
		select {
		case <-x.release:
		case <-ctx.Done():
			return postsession.Extraction{}, ctx.Err()
		}
	case 2:
		x.once.Do(func() { close(x.again) })
	}
	return postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Moonwell", Type: "location"}}}, nil
}

// oneLineSession is a store and its campaign named id, whose session s1,
// one line long, has ended.
func oneLineSession(t *testing.T, id string) (*postgres.Store, *postgres.Campaign) {
	t.Helper()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, id)
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "lyra", SpeakerName: "Lyra",
		Text: "The Moonwell lies past the north gate.", At: t0}); err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return store, camp
}

// TestAttackTwoRunsOfOneSession: two processes run one session's
// processing at once (a session's end in one, serve's sweep in another, or
// `glyphoxa process --extract` by hand). Both paid the model for the same
// windows. The second run waits for the first one's claim on the session
// and then finds the work done.
func TestAttackTwoRunsOfOneSession(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a liveness bound
	defer cancel()
	store, camp := oneLineSession(t, "tworuns")
	x := &countingExtractor{held: make(chan struct{}), again: make(chan struct{}), release: make(chan struct{})}
	// Two processes: two processors, each with its own progress handle.
	run := func() <-chan error {
		done := make(chan error, 1)
		p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: x,
			Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, err := p.Run(ctx, "s1"); done <- err }()
		return done
	}
	first := run()
	select {
	case <-x.held:
	case err := <-first:
		t.Fatalf("the first run ended before the model was asked: %v", err)
	}
	second := run()
	// The second run either asks the model too, or waits for the first.
	waiting := func() bool {
		var n int
		if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND wait_event = 'advisory'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	for !waiting() {
		select {
		case <-x.again:
			close(x.release)
			<-first
			<-second
			t.Fatalf("the second run of s1 asked the model while the first was reading the same window: %d calls, want 1", x.calls.Load())
		case err := <-second:
			t.Fatalf("the second run ended while the first one held the session: %v", err)
		case <-ctx.Done():
			t.Fatal("the second run neither waited nor asked the model")
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(x.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if n := x.calls.Load(); n != 1 {
		t.Errorf("the model was asked %d times for s1's one window; want 1", n)
	}
	if _, done, err := camp.Processing().Load(ctx, "s1", postsession.StageExtract); err != nil || !done {
		t.Errorf("s1's extraction after both runs: done %v, %v", done, err)
	}
}

// TestAttackClaimOfADeadRun: the process running a session's processing
// dies (kill -9) while the model reads a window; the server ends its
// connections, the claim's among them. Another process's run of the
// session must not wait for it for good: it gets the claim and does the
// work.
func TestAttackClaimOfADeadRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a liveness bound
	defer cancel()
	store, camp := oneLineSession(t, "deadrun")
	x := &countingExtractor{held: make(chan struct{}), again: make(chan struct{}), release: make(chan struct{})}
	newProc := func() *postsession.Processor {
		p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: x,
			Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := make(chan error, 1)
	go func() { _, err := newProc().Run(ctx, "s1"); dead <- err }()
	<-x.held
	// The dying process's connections end; its claim goes with them.
	var n int
	if err := store.Pool().QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d advisory locks held while the run reads a window; want its claim, 1", n)
	}
	if _, err := newProc().Run(ctx, "s1"); err != nil {
		t.Fatalf("the run after the first one's process died: %v", err)
	}
	if _, done, err := camp.Processing().Load(ctx, "s1", postsession.StageExtract); err != nil || !done {
		t.Errorf("s1's extraction after the dead run's claim was let go: done %v, %v", done, err)
	}
	close(x.release)
	<-dead
}
