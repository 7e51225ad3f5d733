package session_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// flakyLog is a session log whose writes fail as in an outage while down
// is set (its Ping fails too), so that lines go to the outage spool.
type flakyLog struct {
	memory.SessionStore
	down atomic.Bool
}

func (f *flakyLog) ping(ctx context.Context, real func(context.Context) error) error {
	if f.down.Load() {
		return fmt.Errorf("test outage: %w", memory.ErrUnavailable)
	}
	return real(ctx)
}

func (f *flakyLog) WriteEntry(ctx context.Context, e memory.TranscriptEntry) (bool, error) {
	if f.down.Load() {
		return false, fmt.Errorf("test outage: %w", memory.ErrUnavailable)
	}
	return f.SessionStore.WriteEntry(ctx, e)
}

func (f *flakyLog) WriteEntries(ctx context.Context, es []memory.TranscriptEntry) (int, error) {
	if f.down.Load() {
		return 0, fmt.Errorf("test outage: %w", memory.ErrUnavailable)
	}
	return f.SessionStore.WriteEntries(ctx, es)
}

// countingPost counts post-session processing runs.
type countingPost struct {
	mu   sync.Mutex
	runs []string
}

func (p *countingPost) Run(_ context.Context, id string) (postsession.Report, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runs = append(p.runs, id)
	return postsession.Report{}, nil
}

func (p *countingPost) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.runs)
}

// A session handed over to another process (its claim was lost) is
// released, not ended: every line Record acknowledged is in the session
// log, the spooled ones included; the session is not marked ended; no
// post-session processing runs; nothing more is written. The new owner
// resumes the same session id and ends it.
func TestReleaseHandsTheSessionOver(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	ctx := context.Background()
	log := &flakyLog{SessionStore: camp.Sessions()}
	oldPost := &countingPost{}
	old, err := session.Start(ctx, session.Config{SessionID: "s1", Log: log,
		Ping: func(ctx context.Context) error { return log.ping(ctx, store.Ping) }, StateDir: t.TempDir(),
		Summarizer: noSummary, MaxTokens: 1 << 30, PostSession: oldPost,
		Probe:        reconnect.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond},
		DrainTimeout: time.Minute, Logger: quiet()}) // a hang guard: the database answers
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(ctx)

	// Lines 0-4 reach the database; 5-9 the outage spool.
	for i := range 10 {
		if i == 5 {
			log.down.Store(true)
		}
		if err := old.Record(ctx, line(i)); err != nil {
			t.Fatalf("Record %d: %v", i, err)
		}
	}
	if old.Pending() == 0 {
		t.Fatal("no line waits in the outage spool: the test does not test the drain")
	}
	log.down.Store(false)

	if err := old.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", 10)
	sess, err := camp.Sessions().Session(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if !sess.EndedAt.IsZero() {
		t.Errorf("a released session is marked ended: %+v", sess)
	}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"Record", old.Record(ctx, line(10))},
		{"End", old.End(ctx)},
		{"Wait", func() error { _, err := old.Wait(ctx); return err }()},
	} {
		if !errors.Is(tc.err, session.ErrReleased) {
			t.Errorf("%s after Release = %v, want ErrReleased", tc.name, tc.err)
		}
	}
	if _, err := old.Amend(ctx, "s1/any", "text"); !errors.Is(err, session.ErrReleased) {
		t.Errorf("Amend after Release = %v, want ErrReleased", err)
	}
	if err := old.Release(ctx); err != nil {
		t.Errorf("Release again = %v, want the first result", err)
	}
	if err := old.Close(ctx); err != nil {
		t.Errorf("Close after Release: %v", err)
	}
	if sess, _ := camp.Sessions().Session(ctx, "s1"); !sess.EndedAt.IsZero() || oldPost.count() != 0 {
		t.Errorf("after End and Close of the released session: ended at %v, %d post-session runs; want neither",
			sess.EndedAt, oldPost.count())
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", 10)

	// The new owner resumes the same session and ends it.
	newPost := &countingPost{}
	resumed, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping,
		StateDir: t.TempDir(), Summarizer: noSummary, MaxTokens: 1 << 30, PostSession: newPost, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close(ctx)
	for i := 10; i < 13; i++ {
		if err := resumed.Record(ctx, line(i)); err != nil {
			t.Fatalf("Record %d in the resumed session: %v", i, err)
		}
	}
	if err := resumed.End(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := resumed.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", 13)
	if sess, _ := camp.Sessions().Session(ctx, "s1"); sess.EndedAt.IsZero() {
		t.Error("the resumed session is not marked ended after its End")
	}
	if newPost.count() != 1 || oldPost.count() != 0 {
		t.Errorf("post-session processing ran %d times in the new owner and %d in the old one, want 1 and 0",
			newPost.count(), oldPost.count())
	}
}

// Release after End is refused: the session ended.
func TestReleaseAfterEnd(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	ctx := context.Background()
	s, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping,
		StateDir: t.TempDir(), Summarizer: noSummary, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)
	if err := s.End(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx); !errors.Is(err, session.ErrEnded) {
		t.Errorf("Release after End = %v, want ErrEnded", err)
	}
}
