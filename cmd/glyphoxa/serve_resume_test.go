package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

// serve finishes, by itself, the extraction a crash cut short (session s1
// here), and leaves sessions never processed (s2) to process --extract.
func TestServeResumesInterruptedExtraction(t *testing.T) {
	t.Parallel()
	const guildID = "100000000000000001"
	dsn := sampleUnprocessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The crash: s1's processing began and never finished.
	if _, err := conn.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage) VALUES ('ironhold-saga', 's1', 'started')`); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: `{"entities":[{"name":"Moonwell","type":"location"}],"relationships":[]}`}
	})
	defer srv.Close()
	vars["GLYPHOXA_LLM_BASE_URL"], vars["GLYPHOXA_LLM_MODEL"] = srv.URL(), "fake"

	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf("discord:\n  token: fake-token\n  guilds:\n    - {guild_id: %q, campaign: ironhold-saga}\nlifecycle:\n  shutdown_timeout: 5s\nconsole: {listen: \"\"}\n", guildID)), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.AddGuild(&discordgo.Guild{ID: guildID, Name: "The Table"})
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	fake.Attach(sess)
	t.Cleanup(func() { sess.Close() })
	var stderr syncBuffer
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr, getenv: func(k string) string { return vars[k] }, discord: sess}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(sctx, []string{"serve", "--config", cfgPath, "--listen", anyPort}, e) }()

	// A liveness bound, not a timing target.
	deadline := time.Now().Add(hangGuard)
	for {
		var finished bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga'
			AND session_id = 's1' AND stage = 'extract' AND done)`).Scan(&finished); err != nil {
			t.Fatal(err)
		}
		if finished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not resume s1's extraction:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exited %d:\n%s", code, stderr.String())
	}
	var moonwell int
	var s2 bool
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM entities WHERE campaign_id = 'ironhold-saga' AND name = 'Moonwell'),
		EXISTS (SELECT 1 FROM session_processing WHERE campaign_id = 'ironhold-saga' AND session_id = 's2')`).Scan(&moonwell, &s2); err != nil {
		t.Fatal(err)
	}
	if moonwell != 1 || s2 {
		t.Errorf("after the resume: %d Moonwell entities (want 1), s2 touched: %v", moonwell, s2)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || !strings.Contains(stderr.String(), "interrupted session processing resumed") {
		t.Errorf("serve did not say it resumed s1 (%d requests):\n%s", len(reqs), stderr.String())
	}
	for _, r := range reqs {
		if strings.Contains(r.Messages[1].Content, "Previously: the stolen steel") {
			t.Errorf("serve extracted s2, which was never started: %.200s", r.Messages[1].Content)
		}
	}
}
