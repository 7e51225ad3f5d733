package session_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestAttackKilledDuringOutageThenTakenOver: process A runs session s1 and
// records lines while PostgreSQL is down (they are acknowledged: in A's
// fsynced outage spool); A is killed (SIGKILL); the database comes back and
// process B, with its own state directory (as README advises and the Helm
// chart does), takes the guild over, goes on with s1, and ends it
// (/session end): post-session processing runs on s1.
//
// README: "a line that was acknowledged is stored once". Every line A
// acknowledged must be in s1's log by the time s1 is ended and processed;
// otherwise extraction and chunking never see it (they do not run again
// when the lines turn up later).
func TestAttackKilledDuringOutageThenTakenOver(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard
	defer cancel()
	store, err := postgres.NewStore(ctx, cl.DSN(), 8, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	camp, err := store.Campaign(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}

	// Process A.
	dirA := t.TempDir()
	a := startChild(t, cl.DSN(), dirA)
	a.waitRecorded(t, 100)
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	// A keeps recording through the outage: its lines go to its spool.
	stoppedAt := a.acked + 1
	a.waitRecorded(t, stoppedAt+200)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	a.cmd.Wait()
	for l := range a.lines {
		a.note(l)
	}
	acked := a.acked + 1
	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}

	// Process B takes s1 over with its own state directory and ends it.
	fake := llmtest.New(func(n int, req llmtest.Request) llmtest.Reply {
		if strings.Contains(req.Messages[0].Content, "knowledge graph") {
			return llmtest.Reply{Text: `{"entities":[],"relationships":[]}`}
		}
		return llmtest.Reply{Text: "Summary."}
	})
	defer fake.Close()
	proc, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: postsession.NewOpenAIExtractor(client(fake), "m"),
		Progress:  postsession.NewStoredProgress(camp.Processing()), Window: 1000, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping, StateDir: t.TempDir(),
		Summarizer: noSummary, MaxTokens: 1 << 30, ConsolidateEvery: time.Hour, PostSession: proc, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	const more = 5
	for i := acked; i < acked+more; i++ {
		if err := b.Record(ctx, line(i)); err != nil {
			t.Fatalf("B records line %d: %v", i, err)
		}
	}
	if err := b.End(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := b.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b.Close(ctx)

	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != acked+more {
		t.Fatalf("s1 was ended and processed (%d extraction windows) with %d lines in its log; A acknowledged %d "+
			"(%d of them during the outage) and B %d: %d acknowledged lines are missing (they wait in the dead "+
			"process's spool %s, which nothing replays until a session of the campaign starts there again)",
			rep.Windows, len(got), acked, acked-stoppedAt, more, acked+more-len(got), dirA)
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", acked+more)
}
