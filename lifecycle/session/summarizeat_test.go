package session_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSummarizeAt: Config.SummarizeAt (lifecycle.summarize_at) is where
// summarising starts, as a fraction of MaxTokens.
func TestSummarizeAt(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	ctx := context.Background()
	fake := llmtest.New(llmtest.Script(llmtest.Reply{Text: "Ayla bargained with Grimjaw."}))
	defer fake.Close()
	for _, tc := range []struct {
		name string
		at   float64
		want bool
	}{
		{"at 10 % of 2000 tokens, 30 lines are past it", 0.1, true},
		{"at the default 75 %, 30 lines are far from it", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := session.Start(ctx, session.Config{SessionID: "s-" + tc.name[:5], Log: camp.Sessions(), Ping: store.Ping,
				StateDir: t.TempDir(), Summarizer: contextmgr.NewOpenAISummarizer(client(fake), "m"), MaxTokens: 2000,
				SummarizeAt: tc.at, Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			for i := range 30 { // about 10 tokens each
				e := line(i)
				e.SessionID = ""
				if err := s.Record(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.want {
				if n := len(s.Context().Summaries()); n != 0 {
					t.Errorf("%d summaries below the threshold", n)
				}
				return
			}
			deadline := time.Now().Add(time.Minute) // a hang guard: summarising runs in the background
			for len(s.Context().Summaries()) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no summary after passing summarize_at")
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
