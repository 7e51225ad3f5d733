// Package config loads and validates glyphoxa's YAML configuration.
//
// Values may reference environment variables as ${VAR} or ${VAR:-default},
// and GLYPHOXA_* variables override secrets and endpoints (see
// [Overrides]). Unknown keys, wrong types and missing required values are
// errors of one line that name the key, its line, and what is expected.
package config

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/npc"
)

// Config is the whole configuration file. See config.example.yaml for every
// key with its default.
type Config struct {
	Discord    Discord       `yaml:"discord"`
	Memory     Memory        `yaml:"memory"`
	Correction Correction    `yaml:"correction"`
	Lifecycle  Lifecycle     `yaml:"lifecycle"`
	Voice      Voice         `yaml:"voice"`
	Providers  Providers     `yaml:"providers"`
	NPCs       []npc.Persona `yaml:"npcs"`
	Server     Server        `yaml:"server"`
	Log        Log           `yaml:"log"`
	Console    Console       `yaml:"console"`
}

// Console configures the DM console in the browser (bot/console).
type Console struct {
	// Listen is the console's address; empty turns it off in serve.
	Listen string `yaml:"listen"`
	// PublicURL is the console's address as browsers reach it, for the
	// Discord sign-in redirect (https://… behind a TLS proxy).
	PublicURL string `yaml:"public_url"`
	// ClientID and ClientSecret are the Discord application's OAuth2
	// credentials; without them only one-time links sign in.
	ClientID     string `yaml:"client_id"`
	ClientSecret string `yaml:"client_secret"`
}

// Discord configures the bot's connection and its guilds.
type Discord struct {
	Token string `yaml:"token"`
	// ShardID and ShardCount split the guilds over several processes.
	ShardID    int `yaml:"shard_id"`
	ShardCount int `yaml:"shard_count"`
	// LeaveWhenEmptyAfter ends a session when the voice channel has had no
	// human in it for this long.
	LeaveWhenEmptyAfter Duration `yaml:"leave_when_empty_after"`
	// MaxSessionLength ends a session that has run this long.
	MaxSessionLength Duration `yaml:"max_session_length"`
	Guilds           []Guild  `yaml:"guilds"`
}

// Guild binds a Discord guild to a campaign.
type Guild struct {
	GuildID       string   `yaml:"guild_id"`
	Campaign      string   `yaml:"campaign"`
	TextChannelID string   `yaml:"text_channel_id"`
	DMRoleIDs     []string `yaml:"dm_role_ids"`
	DMUserIDs     []string `yaml:"dm_user_ids"`
	NarratorNPC   string   `yaml:"narrator_npc"`
	// KGTokenLimit is the token budget of the campaign's kg_* memory-tool
	// view over MCP (0: leave it as it is, 5000 for a new campaign).
	KGTokenLimit int `yaml:"kg_token_limit"`
	// MCPToken gives agents player rights on this guild's campaign at
	// /mcp/<campaign> (under serve); MCPDMToken DM rights. A token opens
	// one campaign only.
	MCPToken   string `yaml:"mcp_token"`
	MCPDMToken string `yaml:"mcp_dm_token"`
	// MCPPlayerTokens gives each player an own token (player name: token):
	// player rights, and the player's proposals carry the name.
	MCPPlayerTokens map[string]string `yaml:"mcp_player_tokens"`
}

// Memory configures the PostgreSQL memory store.
type Memory struct {
	PostgresDSN         string   `yaml:"postgres_dsn"`
	EmbeddingDimensions int      `yaml:"embedding_dimensions"`
	ReviewThreshold     float64  `yaml:"review_threshold"`
	RecentWindow        Duration `yaml:"recent_window"`
	HotContextTokens    int      `yaml:"hot_context_tokens"`
}

// Correction configures transcript correction.
type Correction struct {
	PhoneticThreshold float64 `yaml:"phonetic_threshold"`
	FuzzyThreshold    float64 `yaml:"fuzzy_threshold"`
	LowConfidence     float64 `yaml:"low_confidence"`
	// LLM enables the LLM pass on live utterances (uses providers.llm).
	LLM bool `yaml:"llm"`
}

// Lifecycle configures long sessions.
type Lifecycle struct {
	MaxContextTokens int      `yaml:"max_context_tokens"`
	SummarizeAt      float64  `yaml:"summarize_at"`
	ConsolidateEvery Duration `yaml:"consolidate_every"`
	SpoolDir         string   `yaml:"spool_dir"`
	SpoolMaxBytes    int64    `yaml:"spool_max_bytes"`
	ShutdownTimeout  Duration `yaml:"shutdown_timeout"`
	// DrainTimeout bounds how long ending a session waits for the database
	// to take what the outage spool holds; what it did not take stays in
	// spool_dir for the next run, and serve exits non-zero.
	DrainTimeout Duration  `yaml:"drain_timeout"`
	Reconnect    Reconnect `yaml:"reconnect"`
}

// Reconnect configures reconnect backoff.
type Reconnect struct {
	Initial  Duration `yaml:"initial"`
	Max      Duration `yaml:"max"`
	Attempts int      `yaml:"attempts"`
}

// Voice configures the audio pipeline.
type Voice struct {
	EndOfTurn    Duration `yaml:"end_of_turn"`
	MaxUtterance Duration `yaml:"max_utterance"`
	BargeIn      Duration `yaml:"barge_in"`
}

// Providers are the remote (or local) models glyphoxa uses.
type Providers struct {
	LLM        LLM        `yaml:"llm"`
	Embeddings Embeddings `yaml:"embeddings"`
	STT        STT        `yaml:"stt"`
	TTS        TTS        `yaml:"tts"`
	Realtime   Realtime   `yaml:"realtime"`
}

// Realtime is the speech-to-speech engine (an OpenAI Realtime-compatible
// WebSocket endpoint) of the NPCs whose persona says engine: s2s. Without
// an api_key those NPCs answer through the cascaded engine.
type Realtime struct {
	// URL is the WebSocket endpoint (default OpenAI's).
	URL    string `yaml:"url"`
	APIKey string `yaml:"api_key"`
	// Model and Voice are the defaults; a persona's s2s.model and
	// s2s.voice override them.
	Model string `yaml:"model"`
	Voice string `yaml:"voice"`
	// Beta speaks the API's beta dialect (older servers).
	Beta bool `yaml:"beta"`
	// MaxMinutes bounds the audio minutes (heard plus spoken) of one
	// session's speech-to-speech NPCs together (0: no bound).
	MaxMinutes float64 `yaml:"max_minutes"`
	// IdleTimeout closes an NPC's model session after this long without
	// audio (default 5 min).
	IdleTimeout Duration `yaml:"idle_timeout"`
}

// Configured reports whether the speech-to-speech engine is set up.
func (r Realtime) Configured() bool { return r.APIKey != "" }

// LLM is any OpenAI-compatible chat endpoint.
type LLM struct {
	BaseURL     string   `yaml:"base_url"`
	APIKey      string   `yaml:"api_key"`
	Model       string   `yaml:"model"`
	Temperature float64  `yaml:"temperature"`
	Timeout     Duration `yaml:"timeout"`
}

// Configured reports whether an LLM endpoint is set.
func (l LLM) Configured() bool { return l.BaseURL != "" && l.Model != "" }

// Embeddings selects the embedding model.
type Embeddings struct {
	// Provider is "offline" (built in, no download) or "openai" (any
	// OpenAI-compatible /v1/embeddings).
	Provider string `yaml:"provider"`
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	Model    string `yaml:"model"`
}

// STT selects speech-to-text.
type STT struct {
	// Provider is "pocketsphinx" (offline), "deepgram" or "openai" (any
	// OpenAI-compatible /v1/audio/transcriptions, e.g. a Whisper server).
	Provider string `yaml:"provider"`
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	Model    string `yaml:"model"`
	Language string `yaml:"language"`
}

// TTS selects text-to-speech.
type TTS struct {
	// Provider is "espeak" or "local" (offline: the best voice installed,
	// festival or flite before espeak-ng; "festival" and "flite" are the
	// same), "openai" (any /v1/audio/speech) or "elevenlabs".
	Provider string `yaml:"provider"`
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	Model    string `yaml:"model"`
	// Voice is the default voice for NPCs that do not name one.
	Voice string `yaml:"voice"`
}

// Server configures the HTTP endpoints (health, metrics, MCP).
type Server struct {
	// Listen is the address of /healthz, /readyz, /metrics and /mcp.
	Listen string `yaml:"listen"`
	// MCPToken lets agents use the MCP endpoint with player rights (their
	// writes become proposals); MCPDMToken gives DM rights. They serve
	// `glyphoxa mcp --http` and, under serve, only a configuration with a
	// single campaign: with more, each guild sets its own tokens
	// (discord.guilds[].mcp_token, mcp_dm_token, mcp_player_tokens).
	MCPToken   string `yaml:"mcp_token"`
	MCPDMToken string `yaml:"mcp_dm_token"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`
	Format string `yaml:"format"`
}

// Duration is a time.Duration written as "30s", "5m", "1h30m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %q is not a duration (write 600ms, 30s, 5m or 1h30m)", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Std returns the value as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Discord: Discord{LeaveWhenEmptyAfter: Duration(5 * time.Minute), MaxSessionLength: Duration(8 * time.Hour)},
		Memory: Memory{EmbeddingDimensions: 384, ReviewThreshold: 0.7, RecentWindow: Duration(5 * time.Minute),
			HotContextTokens: 1500},
		Correction: Correction{PhoneticThreshold: 0.70, FuzzyThreshold: 0.85, LowConfidence: 0.5},
		Lifecycle: Lifecycle{MaxContextTokens: 8000, SummarizeAt: 0.75, ConsolidateEvery: Duration(30 * time.Minute),
			SpoolDir: "spool", SpoolMaxBytes: 64 << 20, ShutdownTimeout: Duration(20 * time.Second),
			DrainTimeout: Duration(30 * time.Second),
			Reconnect:    Reconnect{Initial: Duration(time.Second), Max: Duration(30 * time.Second), Attempts: 10}},
		Voice: Voice{EndOfTurn: Duration(600 * time.Millisecond), MaxUtterance: Duration(30 * time.Second),
			BargeIn: Duration(250 * time.Millisecond)},
		Providers: Providers{
			LLM:        LLM{Temperature: 0.8, Timeout: Duration(60 * time.Second)},
			Embeddings: Embeddings{Provider: "offline"},
			STT:        STT{Provider: "pocketsphinx", Language: "en"},
			TTS:        TTS{Provider: "espeak"},
		},
		Server:  Server{Listen: "127.0.0.1:9464"},
		Log:     Log{Level: "info", Format: "text"},
		Console: Console{Listen: "127.0.0.1:9465"},
	}
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid configuration")

// Load reads the file at path (see [Parse]).
func Load(path string, getenv func(string) string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading configuration: %w", err)
	}
	defer f.Close()
	return Parse(f, path, getenv)
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// MaxNodes bounds the size of a configuration with its aliases expanded:
// an alias bomb is refused before anything walks it.
const MaxNodes = 100_000

// Parse reads a configuration: it parses the YAML, refuses one whose
// aliases expand past [MaxNodes] values, substitutes ${VAR} and
// ${VAR:-default} references inside scalar values with getenv (a value
// cannot change the document's structure: '*', '#' or a newline in it are
// just characters), checks keys and types against the schema, applies the
// defaults and the GLYPHOXA_* overrides, and validates the values.
func Parse(r io.Reader, name string, getenv func(string) string) (Config, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return Config{}, fmt.Errorf("reading %s: %w", name, err)
	}
	cfg := Default()
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return Config{}, fmt.Errorf("%s: %w: %s", name, ErrInvalid, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(root.Content) > 0 {
		if n := expandedSize(&root, map[*yaml.Node]int{}, 0); n > MaxNodes {
			return Config{}, fmt.Errorf("%s: %w: its aliases expand to more than %d values", name, ErrInvalid, MaxNodes)
		}
		subst := map[*yaml.Node]string{}
		substitute(&root, subst, getenv)
		if err := checkSchema(root.Content[0], cfg, subst); err != nil {
			return Config{}, fmt.Errorf("%s: %w", name, err)
		}
		if err := root.Decode(&cfg); err != nil {
			return Config{}, fmt.Errorf("%s: %w: %s", name, ErrInvalid, strings.TrimPrefix(err.Error(), "yaml: "))
		}
	}
	ApplyOverrides(&cfg, getenv)
	if err := cfg.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return cfg, nil
}

// expandedSize counts the nodes of n with aliases expanded, each node's
// count computed once (memo), stopping early past MaxNodes. depth guards
// against alias cycles, which the YAML parser refuses anyway.
func expandedSize(n *yaml.Node, memo map[*yaml.Node]int, depth int) int {
	if v, ok := memo[n]; ok {
		return v
	}
	if depth > 10_000 {
		return MaxNodes + 1
	}
	size := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		size += expandedSize(n.Alias, memo, depth+1)
	}
	for _, c := range n.Content {
		size += expandedSize(c, memo, depth+1)
		if size > MaxNodes {
			break
		}
	}
	memo[n] = size
	return size
}

// substitute replaces ${VAR} references in the scalar values of the tree,
// each node once, and records in done the original text of each node it
// changed (errors show that, never a substituted value, which may be a
// secret). A plain (unquoted) scalar that changed gets its type resolved
// again from its new value, so "port: ${PORT}" is still a number.
func substitute(n *yaml.Node, done map[*yaml.Node]string, getenv func(string) string) {
	if _, ok := done[n]; ok {
		return
	}
	done[n] = ""
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		v := envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			sub := envRef.FindStringSubmatch(m)
			if v := getenv(sub[1]); v != "" {
				return v
			}
			return sub[3]
		})
		if v != n.Value {
			done[n] = n.Value
			n.Value = v
			if n.Style == 0 {
				n.Tag = ""
			}
		}
	}
	for _, c := range n.Content {
		substitute(c, done, getenv)
	}
}

// Redact hides the credentials of a URL or DSN for printing: the password
// of its user information and the values of query parameters that look
// like secrets (key, token, secret, password, signature). A value that is
// not a URL is hidden whole unless it holds no '@' and no '='.
func Redact(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		if strings.ContainsAny(raw, "@=") {
			return "(hidden)"
		}
		return raw
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	changed := false
	for k := range q {
		lk := strings.ToLower(k)
		for _, s := range []string{"key", "token", "secret", "password", "passwd", "sig", "auth"} {
			if strings.Contains(lk, s) {
				q.Set(k, "xxxxx")
				changed = true
				break
			}
		}
	}
	if changed {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Overrides maps the environment variables that override configuration
// keys (secrets and endpoints that should not live in the file).
func Overrides() []Override {
	return []Override{
		{"GLYPHOXA_DSN", "memory.postgres_dsn", func(c *Config, v string) { c.Memory.PostgresDSN = v }},
		{"GLYPHOXA_DISCORD_TOKEN", "discord.token", func(c *Config, v string) { c.Discord.Token = v }},
		{"GLYPHOXA_LLM_BASE_URL", "providers.llm.base_url", func(c *Config, v string) { c.Providers.LLM.BaseURL = v }},
		{"GLYPHOXA_LLM_API_KEY", "providers.llm.api_key", func(c *Config, v string) { c.Providers.LLM.APIKey = v }},
		{"GLYPHOXA_LLM_MODEL", "providers.llm.model", func(c *Config, v string) { c.Providers.LLM.Model = v }},
		{"GLYPHOXA_EMBEDDINGS_API_KEY", "providers.embeddings.api_key", func(c *Config, v string) { c.Providers.Embeddings.APIKey = v }},
		{"GLYPHOXA_STT_API_KEY", "providers.stt.api_key", func(c *Config, v string) { c.Providers.STT.APIKey = v }},
		{"GLYPHOXA_TTS_API_KEY", "providers.tts.api_key", func(c *Config, v string) { c.Providers.TTS.APIKey = v }},
		{"GLYPHOXA_REALTIME_API_KEY", "providers.realtime.api_key", func(c *Config, v string) { c.Providers.Realtime.APIKey = v }},
		{"GLYPHOXA_MCP_TOKEN", "server.mcp_token", func(c *Config, v string) { c.Server.MCPToken = v }},
		{"GLYPHOXA_MCP_DM_TOKEN", "server.mcp_dm_token", func(c *Config, v string) { c.Server.MCPDMToken = v }},
		{"GLYPHOXA_CONSOLE_CLIENT_SECRET", "console.client_secret", func(c *Config, v string) { c.Console.ClientSecret = v }},
	}
}

// Override is one environment override.
type Override struct {
	Env, Key string
	set      func(*Config, string)
}

// ApplyOverrides sets keys from the GLYPHOXA_* environment variables. An
// LLM base URL without a model gets a model only if one is configured; with
// GLYPHOXA_LLM_BASE_URL alone the model defaults to gpt-4o-mini.
func ApplyOverrides(c *Config, getenv func(string) string) {
	for _, o := range Overrides() {
		if v := getenv(o.Env); v != "" {
			o.set(c, v)
		}
	}
	if c.Providers.LLM.BaseURL != "" && c.Providers.LLM.Model == "" {
		c.Providers.LLM.Model = "gpt-4o-mini"
	}
}

func invalid(key, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, key, fmt.Sprintf(format, args...))
}

// Validate checks the values; the error names the key and what it expects.
// It does not require a Discord token or a DSN: commands that need them
// check with [Config.Require].
func (c Config) Validate() error {
	in := func(key string, v, lo, hi float64) error {
		if v < lo || v > hi {
			return invalid(key, "must be between %v and %v, got %v", lo, hi, v)
		}
		return nil
	}
	positive := func(key string, d Duration) error {
		if d <= 0 {
			return invalid(key, "must be a positive duration, got %s", d.Std())
		}
		return nil
	}
	oneOf := func(key, v string, allowed ...string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return invalid(key, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
	}
	errs := []error{
		in("memory.embedding_dimensions", float64(c.Memory.EmbeddingDimensions), 1, 16000),
		in("memory.review_threshold", c.Memory.ReviewThreshold, 0, 1),
		positive("memory.recent_window", c.Memory.RecentWindow),
		in("memory.hot_context_tokens", float64(c.Memory.HotContextTokens), 100, 100000),
		in("correction.phonetic_threshold", c.Correction.PhoneticThreshold, 0, 1),
		in("correction.fuzzy_threshold", c.Correction.FuzzyThreshold, 0, 1),
		in("correction.low_confidence", c.Correction.LowConfidence, 0, 1),
		in("lifecycle.max_context_tokens", float64(c.Lifecycle.MaxContextTokens), 500, 2_000_000),
		in("lifecycle.summarize_at", c.Lifecycle.SummarizeAt, 0.1, 0.99),
		positive("lifecycle.consolidate_every", c.Lifecycle.ConsolidateEvery),
		in("lifecycle.spool_max_bytes", float64(c.Lifecycle.SpoolMaxBytes), 1<<16, 1<<40),
		positive("lifecycle.shutdown_timeout", c.Lifecycle.ShutdownTimeout),
		positive("lifecycle.drain_timeout", c.Lifecycle.DrainTimeout),
		positive("lifecycle.reconnect.initial", c.Lifecycle.Reconnect.Initial),
		positive("lifecycle.reconnect.max", c.Lifecycle.Reconnect.Max),
		in("lifecycle.reconnect.attempts", float64(c.Lifecycle.Reconnect.Attempts), 1, 1000),
		positive("voice.end_of_turn", c.Voice.EndOfTurn),
		positive("voice.max_utterance", c.Voice.MaxUtterance),
		positive("voice.barge_in", c.Voice.BargeIn),
		positive("discord.leave_when_empty_after", c.Discord.LeaveWhenEmptyAfter),
		positive("discord.max_session_length", c.Discord.MaxSessionLength),
		in("providers.llm.temperature", c.Providers.LLM.Temperature, 0, 2),
		oneOf("providers.embeddings.provider", c.Providers.Embeddings.Provider, "offline", "openai"),
		oneOf("providers.stt.provider", c.Providers.STT.Provider, "pocketsphinx", "deepgram", "openai"),
		oneOf("providers.tts.provider", c.Providers.TTS.Provider, "espeak", "local", "festival", "flite", "openai", "elevenlabs"),
		oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "text", "json"),
	}
	if c.Lifecycle.Reconnect.Max < c.Lifecycle.Reconnect.Initial {
		errs = append(errs, invalid("lifecycle.reconnect.max", "must not be shorter than lifecycle.reconnect.initial"))
	}
	if c.Discord.ShardCount < 0 || (c.Discord.ShardCount > 0 && (c.Discord.ShardID < 0 || c.Discord.ShardID >= c.Discord.ShardCount)) {
		errs = append(errs, invalid("discord.shard_id", "must be between 0 and discord.shard_count-1 (%d), got %d", c.Discord.ShardCount-1, c.Discord.ShardID))
	}
	if c.Providers.Embeddings.Provider == "openai" && c.Providers.Embeddings.Model == "" {
		errs = append(errs, invalid("providers.embeddings.model", "is required with provider openai (e.g. text-embedding-3-small)"))
	}
	for _, p := range []struct{ key, provider, apiKey string }{
		{"providers.stt.api_key", c.Providers.STT.Provider, c.Providers.STT.APIKey},
		{"providers.tts.api_key", c.Providers.TTS.Provider, c.Providers.TTS.APIKey},
	} {
		if (p.provider == "deepgram" || p.provider == "elevenlabs") && p.apiKey == "" {
			errs = append(errs, invalid(p.key, "is required with provider %s (or set %s)", p.provider, envFor(p.key)))
		}
	}
	guilds := map[string]bool{}
	for k, g := range c.Discord.Guilds {
		key := fmt.Sprintf("discord.guilds[%d]", k)
		switch {
		case !snowflake.MatchString(g.GuildID):
			errs = append(errs, invalid(key+".guild_id", "must be a Discord guild id (a number), got %q", g.GuildID))
		case strings.TrimSpace(g.Campaign) == "":
			errs = append(errs, invalid(key+".campaign", "is required: the campaign this server plays"))
		case memory.ValidateCampaignID(g.Campaign) != nil:
			errs = append(errs, invalid(key+".campaign", "%v", memory.ValidateCampaignID(g.Campaign)))
		case guilds[g.GuildID]:
			errs = append(errs, invalid(key+".guild_id", "guild %s is bound twice", g.GuildID))
		case g.KGTokenLimit < 0:
			errs = append(errs, invalid(key+".kg_token_limit", "must be positive (or 0 to keep the campaign's), got %d", g.KGTokenLimit))
		}
		guilds[g.GuildID] = true
	}
	if _, err := c.MCPEndpoints(); err != nil {
		errs = append(errs, err)
	}
	npcs := map[string]bool{}
	for k, p := range c.NPCs {
		if err := p.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%w: npcs[%d]: %v", ErrInvalid, k, err))
		}
		if npcs[p.ID] {
			errs = append(errs, invalid(fmt.Sprintf("npcs[%d].id", k), "NPC %q is defined twice", p.ID))
		}
		npcs[p.ID] = true
	}
	return errors.Join(errs...)
}

var snowflake = regexp.MustCompile(`^[0-9]{5,20}$`)

func envFor(key string) string {
	for _, o := range Overrides() {
		if o.Key == key {
			return o.Env
		}
	}
	return ""
}

// Requirement is something a command needs from the configuration.
type Requirement int

// Requirements.
const (
	NeedDSN Requirement = iota
	NeedDiscord
	NeedLLM
)

// Require checks that what a command needs is configured.
func (c Config) Require(rs ...Requirement) error {
	var errs []error
	for _, r := range rs {
		switch r {
		case NeedDSN:
			if c.Memory.PostgresDSN == "" {
				errs = append(errs, invalid("memory.postgres_dsn", "is required: a PostgreSQL DSN (or set GLYPHOXA_DSN; `make db` starts a local one and prints it)"))
			}
		case NeedDiscord:
			if c.Discord.Token == "" {
				errs = append(errs, invalid("discord.token", "is required: the bot token from the Discord developer portal (or set GLYPHOXA_DISCORD_TOKEN)"))
			}
			if len(c.Discord.Guilds) == 0 {
				errs = append(errs, invalid("discord.guilds", "needs at least one guild bound to a campaign"))
			}
		case NeedLLM:
			if !c.Providers.LLM.Configured() {
				errs = append(errs, invalid("providers.llm.base_url", "is required: an OpenAI-compatible endpoint (or set GLYPHOXA_LLM_BASE_URL and GLYPHOXA_LLM_API_KEY)"))
			}
		}
	}
	return errors.Join(errs...)
}

// MinTokenLen is the shortest MCP token accepted: a shorter one can be
// guessed.
const MinTokenLen = 16

// MCPEndpoint is the MCP endpoint of one campaign under serve, with the
// tokens that open it.
type MCPEndpoint struct {
	Campaign string
	// DM and Player tokens; Players maps a player's own token to its name.
	DM, Player []string
	Players    map[string]string
}

// MCPEndpoints are the MCP endpoints serve opens: one per campaign with at
// least one token, in the order the guilds name them. Every token opens
// exactly one campaign. [Config.Validate] runs it, so serve never meets a
// configuration it cannot serve.
func (c Config) MCPEndpoints() ([]MCPEndpoint, error) {
	var errs []error
	byCampaign := map[string]*MCPEndpoint{}
	var order []string
	type use struct{ key, camp, role string }
	owner := map[string]use{} // token -> where it was first set
	add := func(key, token string, camp string, put func(*MCPEndpoint)) {
		if token == "" {
			return
		}
		if len(token) < MinTokenLen {
			errs = append(errs, invalid(key, "is %d characters long; use at least %d (e.g. openssl rand -hex 24)", len(token), MinTokenLen))
			return
		}
		role := key[strings.LastIndex(key, ".")+1:]
		if strings.Contains(key, ".mcp_player_tokens.") || role == "mcp_token" {
			role = "player"
		}
		if prev, ok := owner[token]; ok {
			if prev.camp != camp || prev.role != role {
				errs = append(errs, invalid(key, "is the same token as %s; a token opens one campaign with one role", prev.key))
			}
			return
		}
		owner[token] = use{key, camp, role}
		ep := byCampaign[camp]
		if ep == nil {
			ep = &MCPEndpoint{Campaign: camp, Players: map[string]string{}}
			byCampaign[camp] = ep
			order = append(order, camp)
		}
		put(ep)
	}
	campaigns := map[string]bool{}
	for _, g := range c.Discord.Guilds {
		campaigns[g.Campaign] = true
	}
	if c.Server.MCPToken != "" || c.Server.MCPDMToken != "" {
		if len(campaigns) > 1 {
			errs = append(errs, invalid("server.mcp_token", "would open all %d campaigns with one token; set discord.guilds[].mcp_token and mcp_dm_token per guild instead (server.mcp_token and mcp_dm_token serve `glyphoxa mcp --http` and single-campaign configurations)", len(campaigns)))
		} else {
			for camp := range campaigns {
				add("server.mcp_dm_token", c.Server.MCPDMToken, camp, func(ep *MCPEndpoint) { ep.DM = append(ep.DM, c.Server.MCPDMToken) })
				add("server.mcp_token", c.Server.MCPToken, camp, func(ep *MCPEndpoint) { ep.Player = append(ep.Player, c.Server.MCPToken) })
			}
		}
	}
	for k, g := range c.Discord.Guilds {
		key := fmt.Sprintf("discord.guilds[%d]", k)
		if memory.ValidateCampaignID(g.Campaign) != nil {
			continue // reported by Validate
		}
		add(key+".mcp_dm_token", g.MCPDMToken, g.Campaign, func(ep *MCPEndpoint) { ep.DM = append(ep.DM, g.MCPDMToken) })
		add(key+".mcp_token", g.MCPToken, g.Campaign, func(ep *MCPEndpoint) { ep.Player = append(ep.Player, g.MCPToken) })
		names := make([]string, 0, len(g.MCPPlayerTokens))
		for n := range g.MCPPlayerTokens {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			tok := g.MCPPlayerTokens[n]
			pkey := key + ".mcp_player_tokens." + n
			if strings.TrimSpace(n) == "" || len(n) > 64 || strings.ContainsFunc(n, unicode.IsControl) {
				errs = append(errs, invalid(pkey, "a player name must be 1 to 64 printable characters"))
				continue
			}
			if tok == "" {
				errs = append(errs, invalid(pkey, "is empty"))
				continue
			}
			add(pkey, tok, g.Campaign, func(ep *MCPEndpoint) { ep.Players[tok] = n })
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]MCPEndpoint, 0, len(order))
	for _, camp := range order {
		out = append(out, *byCampaign[camp])
	}
	return out, nil
}
