package config_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestExampleConfigIsValidAndDocumentsEveryKey(t *testing.T) {
	cfg, err := config.Load("../../../../config.example.yaml", env(map[string]string{"DISCORD_TOKEN": "tok"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Memory.EmbeddingDimensions != 384 || cfg.Discord.Token != "tok" {
		t.Fatalf("%+v", cfg)
	}
	// Every key of the schema appears in the example, so nothing is undocumented.
	raw, _ := os.ReadFile("../../../../config.example.yaml")
	for _, key := range []string{"token", "shard_id", "shard_count", "leave_when_empty_after", "max_session_length", "guilds",
		"guild_id", "campaign", "dm_role_ids", "dm_user_ids", "narrator_npc", "text_channel_id", "kg_token_limit",
		"postgres_dsn", "embedding_dimensions", "review_threshold", "recent_window", "hot_context_tokens",
		"phonetic_threshold", "fuzzy_threshold", "low_confidence", "llm",
		"max_context_tokens", "summarize_at", "consolidate_every", "spool_dir", "spool_max_bytes", "shutdown_timeout",
		"reconnect", "initial", "max", "attempts", "end_of_turn", "max_utterance", "barge_in",
		"base_url", "api_key", "model", "temperature", "timeout", "provider", "language", "voice",
		"npcs", "knowledge_scope", "secret_knowledge", "listen", "mcp_token", "mcp_dm_token", "level", "format"} {
		if !strings.Contains(string(raw), key+":") {
			t.Errorf("config.example.yaml does not document %q", key)
		}
	}
}

func TestDefaultsAndOverrides(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader(""), "empty.yaml", env(map[string]string{
		"GLYPHOXA_DSN": "postgres://x", "GLYPHOXA_DISCORD_TOKEN": "t", "GLYPHOXA_LLM_BASE_URL": "http://llm/v1"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Memory.PostgresDSN != "postgres://x" || cfg.Discord.Token != "t" || cfg.Providers.LLM.Model != "gpt-4o-mini" ||
		cfg.Lifecycle.ConsolidateEvery.Std() != 30*time.Minute || cfg.Voice.EndOfTurn.Std() != 600*time.Millisecond ||
		cfg.Providers.STT.Provider != "pocketsphinx" {
		t.Fatalf("%+v", cfg)
	}
	if err := cfg.Require(config.NeedDSN, config.NeedLLM); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"unknown key", "memory:\n  embedding_dimension: 384\n", "memory.embedding_dimension (line 2): unknown key; did you mean embedding_dimensions?"},
		{"unknown section", "memroy:\n  postgres_dsn: x\n", "memroy (line 1): unknown key; did you mean memory?"},
		{"wrong type", "memory:\n  embedding_dimensions: lots\n", `memory.embedding_dimensions (line 2): expected a whole number, got "lots"`},
		{"bad duration", "lifecycle:\n  consolidate_every: half an hour\n", `lifecycle.consolidate_every (line 2): "half an hour" is not a duration`},
		{"bad bool", "correction:\n  llm: maybe\n", `correction.llm (line 2): expected true or false`},
		{"list expected", "discord:\n  guilds: 123\n", "discord.guilds (line 2): expected a list"},
		{"nested unknown", "discord:\n  guilds:\n    - guild_id: \"123456\"\n      campain: x\n", "discord.guilds[0].campain (line 4): unknown key; did you mean campaign?"},
		{"out of range", "memory:\n  review_threshold: 2\n", "memory.review_threshold: must be between 0 and 1, got 2"},
		{"bad provider", "providers:\n  stt:\n    provider: siri\n", `providers.stt.provider: must be one of pocketsphinx, deepgram, openai, got "siri"`},
		{"missing key", "providers:\n  stt:\n    provider: deepgram\n", "providers.stt.api_key: is required with provider deepgram (or set GLYPHOXA_STT_API_KEY)"},
		{"bad guild", "discord:\n  guilds:\n    - {guild_id: abc, campaign: c}\n", `discord.guilds[0].guild_id: must be a Discord guild id`},
		{"npc without name", "npcs:\n  - {id: grimjaw}\n", "npcs[0]: invalid persona: NPC \"grimjaw\" needs a name"},
		{"negative kg limit", "discord:\n  guilds:\n    - {guild_id: \"123456\", campaign: c, kg_token_limit: -5}\n", "discord.guilds[0].kg_token_limit: must be positive"},
		{"not yaml", "memory: [\n", "invalid configuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(tc.yaml), "c.yaml", env(nil))
			if err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "config.") && !strings.Contains(tc.want, "config.") {
				t.Errorf("the message names Go types: %v", err)
			}
		})
	}
}

func TestRequire(t *testing.T) {
	err := config.Default().Require(config.NeedDSN, config.NeedDiscord, config.NeedLLM)
	for _, want := range []string{"memory.postgres_dsn: is required", "discord.token: is required", "GLYPHOXA_DISCORD_TOKEN",
		"discord.guilds", "providers.llm.base_url"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	raw, _ := os.ReadFile("../../../../config.example.yaml")
	f.Add(string(raw))
	f.Add("memory:\n  embedding_dimensions: 12\n")
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := config.Parse(strings.NewReader(s), "fuzz.yaml", env(nil))
		if err == nil {
			if verr := cfg.Validate(); verr != nil {
				t.Fatalf("Parse accepted a configuration Validate rejects: %v", verr)
			}
		}
	})
}
