package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// anyPort is a listen address on a port the kernel picks when the server
// binds it, for a server whose address the test does not dial: a port
// freeAddr found free can be taken (an outgoing connection's local port)
// before the server binds it, and the server then fails to start.
const anyPort = "127.0.0.1:0"

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestServeRunsTheBotWithHealthAndMetrics(t *testing.T) {
	t.Parallel()
	const guildID = "100000000000000001"
	dsn := migratedDB(t)
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf(`discord:
  token: fake-token
  guilds:
    - guild_id: %q
      campaign: ironhold-saga
lifecycle:
  shutdown_timeout: 5s
console: {listen: ""}
npcs:
  - {id: tilda, campaign: ironhold-saga, name: Tilda, aliases: [the baker], personality: cheerful and nosy,
     voice: {provider: espeak, id: en-gb+f2}}
`, guildID)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
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

	addr := freeAddr(t)
	var stderr syncBuffer
	e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: &stderr,
		getenv: func(k string) string { return map[string]string{"GLYPHOXA_DSN": dsn}[k] }, discord: sess}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfgPath, "--listen", addr}, e) }()

	// The commands are registered once the bot is connected.
	if _, err := fake.WaitCall(hangGuard, discordtest.PathHasPrefix("PUT", "/applications/")); err != nil {
		t.Fatalf("commands were not registered: %v\n%s", err, stderr.String())
	}
	deadline := time.Now().Add(hangGuard)
	for {
		code, body, err := get("http://" + addr + "/readyz")
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz never became ready: %d %q %v\n%s", code, body, err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body, err := get("http://" + addr + "/healthz"); err != nil || code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q %v", code, body, err)
	}
	code, body, err := get("http://" + addr + "/metrics")
	if err != nil || code != 200 || !strings.Contains(body, "glyphoxa_active_sessions") {
		t.Errorf("/metrics: %d %v, body lacks glyphoxa_active_sessions:\n%.500s", code, err, body)
	}

	// The configured NPC was written into its campaign.
	store, err := postgres.NewStore(context.Background(), dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	tilda, err := pgtest.Campaign(t, store, "ironhold-saga").Graph().Entity(context.Background(), "tilda")
	store.Close()
	if err != nil || tilda.Type != memory.EntityNPC || tilda.Attributes["personality"] != "cheerful and nosy" ||
		len(tilda.Aliases) != 1 {
		t.Errorf("the configured NPC in the campaign: %+v %v", tilda, err)
	}

	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("serve exited %d after shutdown:\n%s", code, stderr.String())
		}
	case <-time.After(hangGuard):
		t.Fatal("serve did not stop within its shutdown timeout")
	}
	if _, _, err := get("http://" + addr + "/healthz"); err == nil {
		t.Error("the HTTP server still answers after shutdown")
	}
}

func TestServeNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{"no token, no guilds", "log:\n  level: info\n", []string{"discord.token", "discord.guilds"}},
		{"bad log level", "discord:\n  token: t\n  guilds:\n    - {guild_id: \"1\", campaign: c}\nlog:\n  level: loud\n", []string{"log.level"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCLI(t, map[string]string{}, "serve", "--config", path)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr %q", code, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not name %s", stderr, w)
				}
			}
		})
	}
}
