package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/npc"
)

// Every place that tells what NPCs do without an LLM says the same thing,
// npc.OfflineBehaviour: the README, config.example.yaml, the configuration
// init writes and config check (the demo, chat and serve print the
// constant itself).
func TestOfflineWordingAgrees(t *testing.T) {
	t.Parallel()
	want := npc.OfflineBehaviour
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	comments := regexp.MustCompile(`(?m)^\s*#+`).ReplaceAllString(string(example), "")
	initYAML, err := initConfigYAML("tok", false, "100000000000000001", "c", "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("discord:\n  token: fake-token\n  guilds:\n    - {guild_id: \"100000000000000001\", campaign: c}\n"+
		"lifecycle: {spool_dir: \""+filepath.Join(t.TempDir(), "spool")+"\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, check, cerr := runWithin(t, map[string]string{"GLYPHOXA_DSN": "postgres://glyphoxa@127.0.0.1:1/none?sslmode=disable"},
		"config", "check", "--config", path)
	if code != 0 {
		t.Fatalf("config check: %d %s", code, cerr)
	}
	for place, text := range map[string]string{"README.md": string(readme), "config.example.yaml": comments,
		"glyphoxa init's config.yaml": string(initYAML), "glyphoxa config check": check} {
		if !strings.Contains(flat(text), want) {
			t.Errorf("%s does not say %q", place, want)
		}
		for _, stale := range []string{"NPCs cannot answer", "answer from their memory, without a model"} {
			if strings.Contains(flat(text), stale) {
				t.Errorf("%s still says %q", place, stale)
			}
		}
	}
}
