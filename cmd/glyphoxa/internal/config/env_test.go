package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
)

// marker is a value no message may show: it stands for a secret in the
// environment.
const marker = "zq9MARKER"

// Every validated key, its bad value coming from the environment: the
// error names the key and the variable, and never shows the value (not
// even its start: the YAML decoder quotes the first 7 bytes of what it
// cannot use).
func TestEnvValuesNeverShowInErrors(t *testing.T) {
	const g0 = "discord:\n  guilds:\n    - {guild_id: \"100000000000000001\", campaign: c1, "
	for _, tc := range []struct {
		key, yaml, value string
		envVar           string // default V
	}{
		{key: "memory.embedding_dimensions", yaml: "memory:\n  embedding_dimensions: ${V}", value: "987654321"},
		{key: "memory.review_threshold", yaml: "memory:\n  review_threshold: ${V}", value: "98765.4321"},
		{key: "memory.recent_window", yaml: "memory:\n  recent_window: ${V}", value: "-987654s"},
		{key: "memory.hot_context_tokens", yaml: "memory:\n  hot_context_tokens: ${V}", value: "987654321"},
		{key: "memory.tool_time", yaml: "memory:\n  tool_time: ${V}", value: "-987654s"},
		{key: "correction.phonetic_threshold", yaml: "correction:\n  phonetic_threshold: ${V}", value: "98765.4321"},
		{key: "correction.fuzzy_threshold", yaml: "correction:\n  fuzzy_threshold: ${V}", value: "98765.4321"},
		{key: "correction.low_confidence", yaml: "correction:\n  low_confidence: ${V}", value: "98765.4321"},
		{key: "correction.llm", yaml: "correction:\n  llm: ${V}", value: marker},
		{key: "lifecycle.max_context_tokens", yaml: "lifecycle:\n  max_context_tokens: ${V}", value: "987654321"},
		{key: "lifecycle.summarize_at", yaml: "lifecycle:\n  summarize_at: ${V}", value: "98765.4321"},
		{key: "lifecycle.consolidate_every", yaml: "lifecycle:\n  consolidate_every: ${V}", value: "-987654s"},
		{key: "lifecycle.consolidate_every", yaml: "lifecycle:\n  consolidate_every: ${V}", value: marker},
		{key: "lifecycle.spool_max_bytes", yaml: "lifecycle:\n  spool_max_bytes: ${V}", value: "-98765"},
		{key: "lifecycle.spool_dir", yaml: "lifecycle: {spool_dir: \"${V}\"}", value: "   "},
		{key: "lifecycle.shutdown_timeout", yaml: "lifecycle:\n  shutdown_timeout: ${V}", value: "-987654s"},
		{key: "lifecycle.reconnect.initial", yaml: "lifecycle:\n  reconnect:\n    initial: ${V}", value: "-987654s"},
		{key: "lifecycle.reconnect.max", yaml: "lifecycle:\n  reconnect:\n    max: ${V}", value: "-987654s"},
		{key: "lifecycle.reconnect.attempts", yaml: "lifecycle:\n  reconnect:\n    attempts: ${V}", value: "987654"},
		{key: "voice.end_of_turn", yaml: "voice:\n  end_of_turn: ${V}", value: "-987654s"},
		{key: "voice.max_utterance", yaml: "voice:\n  max_utterance: ${V}", value: "-987654s"},
		{key: "voice.barge_in", yaml: "voice:\n  barge_in: ${V}", value: "-987654s"},
		{key: "discord.leave_when_empty_after", yaml: "discord:\n  leave_when_empty_after: ${V}", value: "-987654s"},
		{key: "discord.max_session_length", yaml: "discord:\n  max_session_length: ${V}", value: "-987654s"},
		{key: "discord.shard_count", yaml: "discord:\n  shard_count: ${V}", value: "-987654"},
		{key: "discord.shard_id", yaml: "discord:\n  shard_count: 2\n  shard_id: ${V}", value: "987654"},
		{key: "discord.token", yaml: "discord: {token: \"${V}\"}", value: "Bot " + marker},
		{key: "discord.token", yaml: "", value: "Bot " + marker, envVar: "GLYPHOXA_DISCORD_TOKEN"},
		{key: "providers.llm.temperature", yaml: "providers:\n  llm:\n    temperature: ${V}", value: "98765.4321"},
		{key: "providers.llm.timeout", yaml: "providers:\n  llm:\n    timeout: ${V}", value: "-987654s"},
		{key: "providers.llm.base_url", yaml: "providers: {llm: {base_url: \"${V}\", model: m}}", value: "ftp://" + marker + "/v1"},
		{key: "providers.llm.base_url", yaml: "", value: "ftp://" + marker + "/v1", envVar: "GLYPHOXA_LLM_BASE_URL"},
		{key: "providers.llm.base_url", yaml: "providers: {llm: {base_url: \"http://${V}/v1\", model: m}}", value: marker + " x"},
		{key: "providers.embeddings.provider", yaml: "providers:\n  embeddings:\n    provider: ${V}", value: marker},
		{key: "providers.embeddings.base_url", yaml: "providers: {embeddings: {base_url: \"${V}\"}}", value: "http://" + marker + ":99999"},
		{key: "providers.embeddings.model", yaml: "providers: {embeddings: {provider: openai, model: \"${V}\"}}", value: ""},
		{key: "providers.stt.provider", yaml: "providers:\n  stt:\n    provider: ${V}", value: marker},
		{key: "providers.stt.base_url", yaml: "providers: {stt: {base_url: \"${V}\"}}", value: marker},
		{key: "providers.stt.api_key", yaml: "providers: {stt: {provider: deepgram, api_key: \"${V}\"}}", value: ""},
		{key: "providers.tts.provider", yaml: "providers:\n  tts:\n    provider: ${V}", value: marker},
		{key: "providers.tts.base_url", yaml: "providers: {tts: {base_url: \"${V}\"}}", value: "https://" + marker + "/#x"},
		{key: "providers.tts.api_key", yaml: "providers: {tts: {provider: elevenlabs, api_key: \"${V}\"}}", value: ""},
		{key: "providers.realtime.url", yaml: "providers: {realtime: {url: \"${V}\"}}", value: "https://" + marker},
		{key: "providers.realtime.max_minutes", yaml: "providers:\n  realtime:\n    max_minutes: ${V}", value: "-98765.4321"},
		{key: "providers.realtime.idle_timeout", yaml: "providers:\n  realtime:\n    idle_timeout: ${V}", value: "-987654s"},
		{key: "providers.realtime.tool_timeout", yaml: "providers:\n  realtime:\n    tool_timeout: ${V}", value: "-987654s"},
		{key: "log.level", yaml: "log:\n  level: ${V}", value: marker},
		{key: "log.format", yaml: "log:\n  format: ${V}", value: marker},
		{key: "server.listen", yaml: "server: {listen: \"${V}\"}", value: marker},
		{key: "server.listen", yaml: "server: {listen: \"${V}\"}", value: "127.0.0.1:98765"},
		{key: "server.listen", yaml: "server: {listen: \"${V}:9464\"}", value: marker + "!"},
		{key: "console.listen", yaml: "console: {listen: \"${V}\"}", value: marker + ":99999"},
		{key: "console.public_url", yaml: "console: {public_url: \"${V}\"}", value: marker},
		{key: "console.client_id", yaml: "console: {client_id: \"${V}\", client_secret: s}", value: marker},
		{key: "console.client_secret", yaml: "console: {client_id: \"123456789012\", client_secret: \"${V}\"}", value: ""},
		{key: "discord.guilds[0].guild_id", yaml: "discord:\n  guilds:\n    - {guild_id: \"${V}\", campaign: c1}", value: marker},
		{key: "discord.guilds[1].guild_id", yaml: "discord:\n  guilds:\n    - {guild_id: \"98765432101234\", campaign: c1}\n    - {guild_id: \"${V}\", campaign: c2}", value: "98765432101234"},
		{key: "discord.guilds[0].campaign", yaml: g0[:len(g0)-len("campaign: c1, ")] + "campaign: \"${V}\"}", value: marker + " saga"},
		{key: "discord.guilds[0].campaign", yaml: g0[:len(g0)-len("campaign: c1, ")] + "campaign: \"${V}\"}", value: "   "},
		{key: "discord.guilds[0].kg_token_limit", yaml: "discord:\n  guilds:\n    - guild_id: \"100000000000000001\"\n      campaign: c1\n      kg_token_limit: ${V}", value: "-987654"},
		{key: "discord.guilds[0].dm_role_ids[0]", yaml: g0 + "dm_role_ids: [\"${V}\"]}", value: marker},
		{key: "discord.guilds[0].dm_user_ids[1]", yaml: g0 + "dm_user_ids: [\"123456789012\", \"${V}\"]}", value: marker},
		{key: "discord.guilds[0].text_channel_id", yaml: g0 + "text_channel_id: \"${V}\"}", value: marker},
		{key: "discord.guilds[0].mcp_token", yaml: g0 + "mcp_token: \"${V}\"}", value: marker},
		{key: "discord.guilds[0].mcp_dm_token", yaml: g0 + "mcp_dm_token: \"${V}\"}", value: marker},
		{key: "discord.guilds[0].mcp_player_tokens.bob", yaml: g0 + "mcp_player_tokens: {bob: \"${V}\"}}", value: marker},
		{key: "server.mcp_token", yaml: "server: {mcp_token: \"${V}\"}\n" + g0 + "}", value: marker},
		{key: "server.mcp_token", yaml: g0 + "}", value: marker, envVar: "GLYPHOXA_MCP_TOKEN"},
		{key: "server.mcp_dm_token", yaml: "server: {mcp_dm_token: \"${V}\"}\n" + g0 + "}", value: marker},
		{key: "server.mcp_token", yaml: "server: {mcp_token: \"${V}\"}\n" + g0 + "}\n    - {guild_id: \"100000000000000002\", campaign: c2}", value: marker + marker},
		{key: "discord.guilds[0].mcp_dm_token", yaml: "server: {mcp_token: \"" + strings.Repeat("a", 20) + "\"}\n" + g0 + "mcp_dm_token: \"${V}\"}", value: strings.Repeat("a", 20)},
		{key: "npcs[0]", yaml: "npcs:\n  - {id: \"${V}\"}", value: marker},
		{key: "npcs[0]", yaml: "npcs:\n  - {id: tilda, name: Tilda, engine: \"${V}\"}", value: marker},
		{key: "npcs[0]", yaml: "npcs:\n  - id: tilda\n    name: Tilda\n    voice:\n      speed: ${V}", value: "98765"},
		{key: "npcs[0]", yaml: "npcs:\n  - {id: tilda, name: Tilda, engine: s2s, s2s: {model: \"${V}\"}}", value: marker + " !"},
		{key: "npcs[0].campaign", yaml: "npcs:\n  - {id: tilda, name: Tilda, campaign: \"${V}\"}", value: marker + " saga"},
		{key: "providers.llm.model", yaml: "providers: {llm: {base_url: \"http://localhost/v1\", model: \"${V}\"}}", value: "   "},
		{key: "discord.guilds[0].kg_token_limit", yaml: "discord:\n  guilds:\n    - guild_id: \"100000000000000001\"\n      campaign: c1\n      kg_token_limit: ${V}", value: "98765432109"},
		{key: "npcs[1].id", yaml: "npcs:\n  - {id: tilda, name: Tilda}\n  - {id: \"${V}\", name: Tilda}", value: "tilda"},
	} {
		name := tc.envVar
		if name == "" {
			name = "V"
		}
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(tc.yaml+"\n"), "c.yaml", env(map[string]string{name: tc.value}))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, config.ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			msg := err.Error()
			found := false
			for _, line := range strings.Split(msg, "\n") {
				if strings.Contains(line, tc.key+" (") && strings.Contains(line, "from ${"+name+"}") {
					found = true
				}
			}
			if !found {
				t.Errorf("no line names %s and ${%s}:\n%s", tc.key, name, msg)
			}
			if strings.TrimSpace(tc.value) != "" && strings.Contains(msg, strings.TrimSpace(tc.value)) {
				t.Errorf("the value shows:\n%s", msg)
			}
			for _, part := range []string{marker[:7], "98765", "987654"} {
				if strings.Contains(tc.value, part) && strings.Contains(msg, part) {
					t.Errorf("a part of the value (%q) shows:\n%s", part, msg)
				}
			}
		})
	}
}

// The same checks quote a value typed in the file, so that the user sees
// what is wrong.
func TestLiteralValuesAreQuoted(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"log: {level: loud}", `log.level: must be one of debug, info, warn, error, got "loud"`},
		{"server: {listen: \"localhost\"}", `server.listen: must be host:port, e.g. 127.0.0.1:9464 or :9464, got "localhost"`},
		{"console: {listen: \"127.0.0.1:70000\"}", `console.listen: must end in a port number from 0 to 65535, got "127.0.0.1:70000"`},
		{"discord: {guilds: [{guild_id: abc, campaign: c}]}", `discord.guilds[0].guild_id: must be a Discord guild id (a number), got "abc"`},
		// URLs may hold credentials: never quoted.
		{"providers: {llm: {base_url: \"localhost:11434/v1\", model: m}}", "providers.llm.base_url: must start with http:// or https://"},
	} {
		_, err := config.Parse(strings.NewReader(tc.yaml+"\n"), "c.yaml", env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// Listen addresses and URLs that serve can use pass.
func TestGoodAddressesAndURLs(t *testing.T) {
	for _, y := range []string{
		"server: {listen: \"127.0.0.1:9464\"}\nconsole: {listen: \":0\"}",
		"server: {listen: \"[::1]:9464\"}\nconsole: {listen: \"\"}",
		"server: {listen: \"localhost:http\"}\nconsole: {listen: \"glyphoxa.example.org:8080\"}",
		"providers: {llm: {base_url: \"http://localhost:11434/v1\", model: m}, realtime: {url: \"wss://api.openai.com/v1/realtime\"}}",
		"providers: {embeddings: {base_url: \"https://user:pw@llm.example/v1?key=x\"}}\nconsole: {public_url: \"https://dm.example.org/console\"}",
		"console: {client_id: \"123456789012345678\", client_secret: s}",
	} {
		if _, err := config.Parse(strings.NewReader(y+"\n"), "c.yaml", env(nil)); err != nil {
			t.Errorf("%s: %v", y, err)
		}
	}
}

// Env, Key and Show say where a value came from; a flag that sets a value
// since (SetLiteral) makes it the flag's.
func TestProvenance(t *testing.T) {
	cfg, err := config.Parse(strings.NewReader("server: {listen: \"${HOST}:${PORT}\"}\nlog: {level: info}\n"), "c.yaml",
		env(map[string]string{"HOST": "127.0.0.1", "PORT": "9999", "GLYPHOXA_DSN": "postgres://x"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Key("server.listen"); got != "server.listen (from ${HOST}, ${PORT})" {
		t.Errorf("Key = %q", got)
	}
	if got := cfg.Show("server.listen", cfg.Server.Listen); got != "${HOST}, ${PORT}" {
		t.Errorf("Show = %q", got)
	}
	if got := cfg.Env("memory.postgres_dsn"); len(got) != 1 || got[0] != "GLYPHOXA_DSN" {
		t.Errorf("Env(dsn) = %v", got)
	}
	if got := cfg.Show("log.level", cfg.Log.Level); got != "info" {
		t.Errorf("Show(log.level) = %q", got)
	}
	copyCfg := cfg
	copyCfg.SetLiteral("server.listen")
	if got := copyCfg.Key("server.listen"); got != "server.listen" {
		t.Errorf("after SetLiteral: %q", got)
	}
	if got := cfg.Key("server.listen"); got != "server.listen (from ${HOST}, ${PORT})" {
		t.Errorf("SetLiteral on a copy changed the original: %q", got)
	}
}

// Preflight refuses a spool directory serve could not write, naming the
// key and never the path when it came from the environment.
func TestPreflightSpoolDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	base := "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: c1}]}\n"
	for _, tc := range []struct {
		name, spool, want string
		vars              map[string]string
	}{
		{"new directory under a writable one", filepath.Join(dir, "a", "b"), "", nil},
		{"existing directory", dir, "", nil},
		{"a file", file, `lifecycle.spool_dir: is a file, not a directory, got "` + file + `"`, nil},
		{"under a file", filepath.Join(file, "spool"), "lifecycle.spool_dir: cannot be created: a part of its path is a file", nil},
		{"under a file, from the environment", "${SPOOL}", "lifecycle.spool_dir (from ${SPOOL}): cannot be created",
			map[string]string{"SPOOL": filepath.Join(file, marker)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(strings.NewReader(base+"lifecycle: {spool_dir: \""+tc.spool+"\"}\n"), "c.yaml", env(tc.vars))
			if err != nil {
				t.Fatal(err)
			}
			err = cfg.Preflight()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
					t.Error("Preflight created the spool directory")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), marker) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 {
		t.Errorf("Preflight left files behind: %v", left)
	}
}

// Preflight requires what serve requires.
func TestPreflightRequiresDiscord(t *testing.T) {
	err := config.Default().Preflight()
	if err == nil || !strings.Contains(err.Error(), "discord.token: is required") || !strings.Contains(err.Error(), "discord.guilds") {
		t.Fatalf("err = %v", err)
	}
}
