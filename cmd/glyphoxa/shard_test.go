package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// Two serve processes configured with the same shard: the second stops
// with an error naming both processes, the first runs on.
func TestServeRefusesATakenShard(t *testing.T) {
	t.Parallel()
	dsn := sampleUnprocessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	cfgPath := filepath.Join(t.TempDir(), "config.yaml")
	// The second serve waits one lease time for the claim to lapse before it
	// gives up: 15 s, so that the first serve, renewing every 5 s, may be
	// late twice on a loaded machine and still hold the shard.
	cfg := fmt.Sprintf("discord:\n  token: fake-token\n  shard_id: 1\n  shard_count: 2\n  guilds:\n    - {guild_id: \"100000000000000001\", campaign: ironhold-saga}\n"+
		"lifecycle:\n  lease_time: 15s\n  spool_dir: %q\nconsole: {listen: \"\"}\n", t.TempDir())
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := discordtest.New()
	defer fake.Close()
	start := func(ctx context.Context, stderr io.Writer) <-chan int {
		sess, err := discordgo.New("Bot fake-token")
		if err != nil {
			t.Fatal(err)
		}
		sess.LogLevel = discordgo.LogError
		fake.Attach(sess)
		t.Cleanup(func() { sess.Close() })
		e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, getenv: func(k string) string { return vars[k] }, discord: sess}
		done := make(chan int, 1)
		go func() { done <- run(ctx, []string{"serve", "--config", cfgPath, "--listen", anyPort}, e) }()
		return done
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first, second syncBuffer
	firstDone := start(ctx, &first)
	if _, err := fake.WaitIdentify(hangGuard); err != nil {
		t.Fatalf("the first serve did not connect: %v\n%s", err, first.String())
	}
	code := <-start(ctx, &second)
	if code == 0 {
		t.Fatalf("the second serve on shard 1 of 2 exited 0:\n%s", second.String())
	}
	owners := regexp.MustCompile(`process (\S+), which is alive .* this process is (\S+)`).FindStringSubmatch(second.String())
	if owners == nil || owners[1] == owners[2] || !strings.Contains(second.String(), "shard/1of2") {
		t.Fatalf("the second serve's error does not name both processes and the shard:\n%s", second.String())
	}
	if !strings.Contains(first.String(), owners[1]) {
		t.Errorf("the holder named, %s, is not the first serve:\n%s", owners[1], first.String())
	}
	select {
	case c := <-firstDone:
		t.Fatalf("the first serve stopped (%d):\n%s", c, first.String())
	default:
	}
	cancel()
	if c := <-firstDone; c != 0 {
		t.Errorf("the first serve exited %d:\n%s", c, first.String())
	}
}
