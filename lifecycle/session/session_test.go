package session_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

func client(srv *llmtest.Server) *llm.Client {
	// No retries: the tests count the requests their failures send.
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "m", Retries: -1})
	if err != nil {
		panic(err)
	}
	return c
}

// line is utterance i: about 10 tokens.
func line(i int) memory.TranscriptEntry {
	e := memory.TranscriptEntry{SpeakerID: "p1", SpeakerName: "Ayla", Text: fmt.Sprintf("line %06d of the evening", i),
		At: t0.Add(time.Duration(i) * time.Second)}
	if i%3 == 2 {
		e.SpeakerID, e.SpeakerName, e.NPCID = "grimjaw", "Grimjaw", "grimjaw"
	}
	return e
}

// checkExactlyOnce asserts that the session log holds lines 0..n-1 of
// session once each, in order.
func checkExactlyOnce(t *testing.T, l1 memory.SessionStore, sessionID string, n int) {
	t.Helper()
	got, err := l1.Entries(context.Background(), sessionID)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for i, e := range got {
		if want := fmt.Sprintf("line %06d of the evening", i); e.Text != want {
			t.Fatalf("entry %d is %q, want %q (lost, duplicated or out of order)", i, e.Text, want)
		}
		if e.IdempotencyKey == "" || keys[e.IdempotencyKey] {
			t.Fatalf("entry %d has a missing or repeated idempotency key %q", i, e.IdempotencyKey)
		}
		keys[e.IdempotencyKey] = true
	}
	if len(got) != n {
		t.Fatalf("found %d entries, want %d", len(got), n)
	}
}

func TestLifecycle(t *testing.T) {
	// Not parallel: leakcheck counts every goroutine of the process.
	leakcheck.Check(t)
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	ctx := context.Background()

	fake := llmtest.New(func(n int, req llmtest.Request) llmtest.Reply {
		if strings.Contains(req.Messages[0].Content, "knowledge graph") {
			return llmtest.Reply{Text: `{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Sunstone","type":"item"}],
				"relationships":[{"source":"Grimjaw","target":"Sunstone","type":"OWNS","confidence":0.9,"basis":"stated"}]}`}
		}
		return llmtest.Reply{Text: fmt.Sprintf("Summary %d: Ayla bargained with Grimjaw.", n)}
	})
	defer fake.Close()
	var l2runs []string
	proc, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
		L2:        postsession.L2Func(func(_ context.Context, id string) error { l2runs = append(l2runs, id); return nil }),
		Extractor: postsession.NewOpenAIExtractor(client(fake), "m"), Progress: postsession.NewStoredProgress(pgtest.Campaign(t, store, "c").Processing()),
		Window: 10, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping, StateDir: t.TempDir(),
		Summarizer: contextmgr.NewOpenAISummarizer(client(fake), "m"), MaxTokens: 200, PostSession: proc, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(ctx)

	const n = 30
	for i := range n {
		if err := s.Record(ctx, line(i)); err != nil {
			t.Fatalf("Record %d: %v", i, err)
		}
		if i == 24 {
			// Past 75 % of 200 tokens: the oldest half is summarised, and
			// saved to the session log before it leaves the context.
			deadline := time.Now().Add(2 * time.Minute) // a hang guard: a loaded machine may take long
			for len(s.Context().Summaries()) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no summary after passing the threshold")
				}
				time.Sleep(5 * time.Millisecond)
			}
			got, _ := camp.Sessions().Entries(ctx, "s1")
			if len(got) < 11 {
				t.Fatalf("%d entries in the session log after summarising, want the summarised ones saved first", len(got))
			}
		}
	}
	msgs := s.Messages()
	if !msgs[0].Summary || !strings.HasPrefix(msgs[0].Content, contextmgr.SummaryPrefix) {
		t.Errorf("first message %+v is not the summary", msgs[0])
	}
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleAssistant || last.Name != "Grimjaw" {
		t.Errorf("last message %+v: an NPC line should be an assistant message", last)
	}
	if err := s.Record(ctx, memory.TranscriptEntry{SessionID: "other", Text: "x"}); err == nil {
		t.Error("an entry of another session was accepted")
	}

	if err := s.End(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", n)
	sess, err := camp.Sessions().Session(ctx, "s1")
	if err != nil || sess.EndedAt.IsZero() {
		t.Errorf("session %+v, %v: not ended", sess, err)
	}
	rep, err := s.Wait(ctx)
	// Each of the three windows proposes the same fact; it is stored once.
	if err != nil || !rep.L2Done || fmt.Sprint(l2runs) != "[s1]" || rep.Windows != 3 || rep.EntitiesCreated != 2 || rep.Accepted != 3 {
		t.Errorf("post-session report %+v, %v", rep, err)
	}
	if rels, err := camp.Graph().Relationships(ctx, "grimjaw", memory.TraversalOpts{}); err != nil || len(rels) != 1 ||
		rels[0].Provenance.SessionID != "s1" || rels[0].Provenance.Source != memory.SourceStated {
		t.Errorf("grimjaw's facts %+v, %v; want one stated fact from s1", rels, err)
	}
	if err := s.Record(ctx, line(n)); err == nil {
		t.Error("Record after End succeeded")
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStartNeedsItsParts(t *testing.T) {
	t.Parallel()
	_, err := session.Start(context.Background(), session.Config{SessionID: "s"})
	if err == nil || !strings.Contains(err.Error(), "Config.Log") || !strings.Contains(err.Error(), "Config.StateDir") {
		t.Fatalf("Start with a bare config = %v, want an error naming the missing fields", err)
	}
}

// openStore opens the store at dsn for a child process.
func openStore(ctx context.Context, dsn string) (*postgres.Store, *postgres.Campaign, error) {
	store, err := postgres.NewStore(ctx, dsn, 8, postgres.WithLogger(quiet()))
	if err != nil {
		return nil, nil, err
	}
	camp, err := store.Campaign(ctx, "c")
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	return store, camp, nil
}
