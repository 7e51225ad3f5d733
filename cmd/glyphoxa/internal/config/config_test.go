package config_test

import (
	"errors"
	"fmt"
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
		"postgres_dsn", "embedding_dimensions", "review_threshold", "recent_window", "hot_context_tokens", "tool_time",
		"phonetic_threshold", "fuzzy_threshold", "low_confidence", "llm",
		"max_context_tokens", "summarize_at", "consolidate_every", "spool_dir", "spool_max_bytes", "shutdown_timeout", "drain_timeout",
		"reconnect", "initial", "max", "attempts", "end_of_turn", "max_utterance", "barge_in", "merge_wait",
		"digest_every", "digest_lines",
		"base_url", "api_key", "model", "temperature", "timeout", "provider", "language", "streaming", "voice",
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
		cfg.Providers.STT.Provider != "pocketsphinx" || cfg.Voice.MergeWait.Std() != 2*time.Second ||
		cfg.Lifecycle.DigestEvery.Std() != 3*time.Minute || cfg.Lifecycle.DigestLines != 12 {
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
		{"bad duration", "lifecycle:\n  consolidate_every: half an hour\n", `lifecycle.consolidate_every (line 2): not a duration (write 600ms, 30s, 5m or 1h30m), got "half an hour"`},
		{"bad bool", "correction:\n  llm: maybe\n", `correction.llm (line 2): expected true or false`},
		{"list expected", "discord:\n  guilds: 123\n", "discord.guilds (line 2): expected a list"},
		{"nested unknown", "discord:\n  guilds:\n    - guild_id: \"123456\"\n      campain: x\n", "discord.guilds[0].campain (line 4): unknown key; did you mean campaign?"},
		{"out of range", "memory:\n  review_threshold: 2\n", "memory.review_threshold: must be between 0 and 1, got 2"},
		{"bad provider", "providers:\n  stt:\n    provider: siri\n", `providers.stt.provider: must be one of pocketsphinx, deepgram, openai, got "siri"`},
		{"streaming offline", "providers:\n  stt:\n    provider: pocketsphinx\n    streaming: true\n", "providers.stt.streaming: needs provider deepgram or openai (pocketsphinx cannot stream)"},
		{"missing key", "providers:\n  stt:\n    provider: deepgram\n", "providers.stt.api_key: is required with provider deepgram (or set GLYPHOXA_STT_API_KEY)"},
		{"bad guild", "discord:\n  guilds:\n    - {guild_id: abc, campaign: c}\n", `discord.guilds[0].guild_id: must be a Discord guild id`},
		{"npc without name", "npcs:\n  - {id: grimjaw}\n", "npcs[0]: invalid persona: NPC \"grimjaw\" needs a name"},
		{"negative kg limit", "discord:\n  guilds:\n    - {guild_id: \"123456\", campaign: c, kg_token_limit: -5}\n", "discord.guilds[0].kg_token_limit: must be positive"},
		{"merge wait zero", "voice:\n  merge_wait: 0s\n", "voice.merge_wait: must be a positive duration, got 0s"},
		{"merge wait too long", "voice:\n  merge_wait: 1m\n", "voice.merge_wait: must be at most 10s: a name said alone would hold its question back that long, got 1m0s"},
		{"merge wait not a duration", "voice:\n  merge_wait: 2\n", "voice.merge_wait (line 2): not a duration"},
		{"digest every negative", "lifecycle:\n  digest_every: -3m\n", "lifecycle.digest_every: must be a positive duration, got -3m0s"},
		{"digest lines zero", "lifecycle:\n  digest_lines: 0\n", "lifecycle.digest_lines: must be between 1 and 10000, got 0"},
		{"not yaml", "memory: [\n", "invalid configuration"},
		{"llm key without endpoint", "providers:\n  llm:\n    api_key: sk-test\n", "providers.llm.base_url: is required with providers.llm.api_key"},
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

// FuzzParse: whatever Parse accepts validates, and serve can mount its MCP
// endpoints. Seeds are small (a large seed makes the fuzzer spend its time
// minimising mutants of it instead of exploring).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"memory:\n  embedding_dimensions: 12\n",
		"discord:\n  token: t\n  guilds:\n    - {guild_id: \"100000\", campaign: c1, mcp_token: abcdefghijklmnop}\n",
		"server: {mcp_token: ${T:-abcdefghijklmnopq}, listen: \"127.0.0.1:1\"}\n",
		"lifecycle:\n  reconnect: {initial: 1s, max: 2s, attempts: 3}\nvoice: {end_of_turn: 600ms}\n",
		"a: &x [1, 2]\nb: *x\n",
		"providers:\n  llm: {base_url: http://h/v1, model: m, temperature: 0.5}\nlog: {level: debug, format: json}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := config.Parse(strings.NewReader(s), "fuzz.yaml", env(map[string]string{"T": "*x #y\nz: 1"}))
		if err != nil {
			return
		}
		if verr := cfg.Validate(); verr != nil {
			t.Fatalf("Parse accepted a configuration Validate rejects: %v", verr)
		}
		eps, err := cfg.MCPEndpoints()
		if err != nil {
			t.Fatalf("Parse accepted a configuration whose MCP endpoints fail: %v", err)
		}
		seen := map[string]bool{}
		for _, ep := range eps {
			if seen[ep.Campaign] || strings.ContainsAny(ep.Campaign, " {}/") {
				t.Fatalf("endpoint %q cannot be served", ep.Campaign)
			}
			seen[ep.Campaign] = true
		}
	})
}

// ${VAR} is substituted into parsed values only: whatever the value holds,
// it stays one value and never shows in an error.
func TestEnvValuesAreValuesOnly(t *testing.T) {
	doc := "discord:\n  shard_count: ${SHARDS}\nproviders:\n  tts:\n    voice: ${TOKEN}\n  llm:\n    api_key: \"${KEY}\"\n    base_url: ${URL:-http://localhost/v1}\n"
	for _, tc := range []struct {
		name   string
		vars   map[string]string
		token  string
		errHas string
	}{
		{"anchor-looking", map[string]string{"TOKEN": "*not-an-anchor", "SHARDS": "2"}, "*not-an-anchor", ""},
		{"comment-looking", map[string]string{"TOKEN": "abc #def", "SHARDS": "2"}, "abc #def", ""},
		{"newline injection", map[string]string{"TOKEN": "x\nserver:\n  mcp_dm_token: injected-token-123456", "SHARDS": "0"},
			"x\nserver:\n  mcp_dm_token: injected-token-123456", ""},
		{"secret in a number field", map[string]string{"TOKEN": "t", "SHARDS": "sk-very-secret"}, "", "discord.shard_count (line 2, from ${SHARDS}): expected a whole number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.vars["KEY"] = "sk-also-secret"
			cfg, err := config.Parse(strings.NewReader(doc), "c.yaml", env(tc.vars))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) || strings.Contains(err.Error(), "sk-very-secret") {
					t.Fatalf("err = %v, want one naming %q without the value", err, tc.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Providers.TTS.Voice != tc.token || cfg.Server.MCPDMToken != "" || cfg.Providers.LLM.APIKey != "sk-also-secret" ||
				cfg.Providers.LLM.BaseURL != "http://localhost/v1" {
				t.Fatalf("%+v", cfg)
			}
		})
	}
	cfg, err := config.Parse(strings.NewReader(doc), "c.yaml", env(map[string]string{"TOKEN": "t", "SHARDS": "4"}))
	if err != nil || cfg.Discord.ShardCount != 4 {
		t.Fatalf("a number from the environment: %+v %v", cfg.Discord, err)
	}
}

// An alias bomb is refused before anything walks it.
func TestAliasBombIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n")
	for i := 1; i < 12; i++ {
		fmt.Fprintf(&b, "x%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	b.WriteString("discord:\n  guilds: *a11\n")
	_, err := config.Parse(strings.NewReader(b.String()), "bomb.yaml", env(nil))
	if err == nil || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Fatalf("err = %v", err)
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"http://localhost:11434/v1":        "http://localhost:11434/v1",
		"https://user:pa55@llm.example/v1": "https://user:xxxxx@llm.example/v1",
		"https://llm.example/v1?api_key=sk-123&model=x":         "https://llm.example/v1?api_key=xxxxx&model=x",
		"postgres://glyphoxa:hunter2@db:5432/g?sslmode=disable": "postgres://glyphoxa:xxxxx@db:5432/g?sslmode=disable",
		"user=glyphoxa password=hunter2 host=db":                "(hidden)",
	} {
		if got := config.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLLMKeyAloneIsRefused: a self-hoster who puts only GLYPHOXA_LLM_API_KEY
// in .env (as for OpenAI) is told the endpoint is missing, instead of
// reading "LLM: none" and NPCs that cannot hold a conversation.
func TestLLMKeyAloneIsRefused(t *testing.T) {
	_, err := config.Parse(strings.NewReader(""), "c.yaml", env(map[string]string{"GLYPHOXA_LLM_API_KEY": "sk-test"}))
	if err == nil || !strings.Contains(err.Error(), "providers.llm.base_url: is required with providers.llm.api_key") ||
		!strings.Contains(err.Error(), "GLYPHOXA_LLM_BASE_URL") {
		t.Fatalf("a key without an endpoint: %v", err)
	}
	if strings.Contains(err.Error(), "sk-test") {
		t.Errorf("the error shows the key: %v", err)
	}
	cfg, err := config.Parse(strings.NewReader(""), "c.yaml", env(map[string]string{
		"GLYPHOXA_LLM_API_KEY": "sk-test", "GLYPHOXA_LLM_BASE_URL": "https://api.openai.com/v1"}))
	if err != nil || !cfg.Providers.LLM.Configured() {
		t.Fatalf("a key with its endpoint: %v, configured %v", err, cfg.Providers.LLM.Configured())
	}
}
