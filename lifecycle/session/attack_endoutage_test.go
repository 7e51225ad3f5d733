package session_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
)

// TestAttackEndDuringOutageIsProcessedLater ends a session (/session end)
// while PostgreSQL is down. The end and the last lines wait in the outage
// spool (End says so), and the database comes back afterwards. README:
// "Extraction after /session end can be interrupted (shutdown, crash,
// outage, LLM failure): glyphoxa serve finishes it at its next start."
//
// The test then does what the next runs do: serve's start-up resumption
// (postsession.ResumePending → RunInterrupted), a next session on the same
// state directory (which replays the spool: s1's lines and its end reach
// the log), and serve's start-up resumption again. s1 must be processed
// by then.
func TestAttackEndDuringOutageIsProcessedLater(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	store, camp := outageCampaign(t, cl)
	var extractCalls atomic.Int64
	fake := llmtest.New(func(n int, req llmtest.Request) llmtest.Reply {
		if strings.Contains(req.Messages[0].Content, "knowledge graph") {
			extractCalls.Add(1)
			return llmtest.Reply{Text: `{"entities":[{"name":"Grimjaw","type":"npc"}],"relationships":[]}`}
		}
		return llmtest.Reply{Text: "Summary."}
	})
	defer fake.Close()
	progress := postsession.NewStoredProgress(camp.Processing())
	proc, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: postsession.NewOpenAIExtractor(client(fake), "m"), Progress: progress, Window: 10, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cfg := func(id string) session.Config {
		return session.Config{SessionID: id, Log: camp.Sessions(), Ping: store.Ping, StateDir: state,
			Summarizer: noSummary, MaxTokens: 1 << 30, ConsolidateEvery: time.Hour, PostSession: proc,
			Probe:        reconnect.Backoff{Initial: 100 * time.Millisecond, Max: 500 * time.Millisecond},
			WriteTimeout: 2 * time.Second, DrainTimeout: 500 * time.Millisecond, Logger: quiet()}
	}
	s1, err := session.Start(ctx, cfg("s1"))
	if err != nil {
		t.Fatal(err)
	}
	const before, during = 12, 8
	for i := range before {
		if err := s1.Record(ctx, line(i)); err != nil {
			t.Fatalf("Record %d: %v", i, err)
		}
	}
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	for i := before; i < before+during; i++ {
		if err := s1.Record(ctx, line(i)); err != nil {
			t.Fatalf("Record %d during the outage: %v", i, err)
		}
	}
	// /session end while the database is down: the drain cannot succeed
	// (the server is stopped until the restart below), whatever the time.
	endErr := s1.End(ctx)
	var pe *guard.PendingError
	if !errors.As(endErr, &pe) {
		t.Fatalf("End during the outage: %v, want a *guard.PendingError", endErr)
	}
	if err := s1.Close(ctx); err != nil && !errors.As(err, &pe) {
		t.Fatalf("Close: %v", err)
	}
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}

	// The next serve start: resume what was interrupted.
	if err := postsession.ResumePending(ctx, quiet(), map[string]*postsession.Processor{"c": proc}); err != nil {
		t.Fatal(err)
	}
	// The next session in the campaign, on the same state directory,
	// replays the spool.
	s2, err := session.Start(ctx, cfg("s2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Memory().WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", before+during)
	if sess, err := camp.Sessions().Session(ctx, "s1"); err != nil || sess.EndedAt.IsZero() {
		t.Fatalf("s1 after the replay: %+v, %v; want it ended", sess, err)
	}
	if err := s2.End(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s2.Close(ctx)
	// And serve starts again.
	_ = postsession.ResumePending(ctx, quiet(), map[string]*postsession.Processor{"c": proc})

	_, done, err := progress.Load(ctx, "s1", postsession.StageExtract)
	if err != nil {
		t.Fatal(err)
	}
	_, s2done, _ := progress.Load(ctx, "s2", postsession.StageExtract)
	if !done {
		left, _ := progress.Unfinished(ctx)
		interrupted, _ := progress.Interrupted(ctx)
		t.Fatalf("session s1, ended during an outage, was never processed (extraction done: %v; s2's: %v; "+
			"unfinished sessions %v, interrupted (what serve resumes) %v; extractor calls %d)",
			done, s2done, left, interrupted, extractCalls.Load())
	}
}
