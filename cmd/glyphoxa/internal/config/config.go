// Package config loads and validates glyphoxa's YAML configuration.
//
// Values may reference environment variables as ${VAR} or ${VAR:-default},
// and GLYPHOXA_* variables override secrets and endpoints (see
// [Overrides]). Unknown keys, wrong types and missing required values are
// errors of one line that name the key, its line, and what is expected.
//
// # Values from the environment
//
// A value that came from the environment (a ${VAR} reference or a
// GLYPHOXA_* override) is never shown: an error about it is an [*Error]
// naming the key and the variable ("providers.llm.base_url (from
// ${LLM_URL}): must start with http:// or https://"), and [Config.Show]
// gives the same "${LLM_URL}" for log lines. [Config.Env] says where a
// key's value came from. Values typed in the file are quoted in errors,
// except URLs and tokens, which may hold credentials.
//
// # Checks
//
// [Parse] runs [Config.Validate], which checks what can be checked without
// the network or the disk. [Config.Preflight] adds what serve needs to
// start (a Discord token, guilds, a writable spool directory); serve and
// `glyphoxa config check` both run it, so the check refuses what serve
// would.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
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

	// env maps the key path of each value that came from the environment
	// (a ${VAR} reference or a GLYPHOXA_* override) to where it came from.
	// It is copied on write: copies of a Config share it.
	env map[string]envSource
}

// envSource is where a value came from: the variables its text named and
// the value they gave (kept to hide it from messages).
type envSource struct {
	names []string
	value string
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
	// ToolTime bounds the time one NPC reply spends in its memory tools
	// (recall, search_sessions, query_entities, …) on either engine
	// (default 2 s): once it is spent, the model is told to answer with
	// what it knows.
	ToolTime Duration `yaml:"tool_time"`
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
	DrainTimeout Duration `yaml:"drain_timeout"`
	// LeaseTime is how long a process's claim on a guild (its commands and
	// voice session), a shard or a campaign's background work lasts without
	// a heartbeat: when a process dies, another takes its sessions over
	// within it.
	LeaseTime Duration  `yaml:"lease_time"`
	Reconnect Reconnect `yaml:"reconnect"`
	// DigestEvery and DigestLines are the cadence of each NPC's digest of
	// the session as it witnessed it: refreshed once either has passed
	// since the last refresh (defaults 3m and 12 lines).
	DigestEvery Duration `yaml:"digest_every"`
	DigestLines int      `yaml:"digest_lines"`
	// Continuity checks each line said at the table against canon and
	// sends the DM a card when one contradicts it (default true; see
	// README, "Live continuity").
	Continuity bool `yaml:"continuity"`
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
	// MergeWait is how long a name said alone ("Goryr…") waits for its
	// speaker to go on, the two lines becoming one turn (default 2s; at
	// most 10s). No other line waits.
	MergeWait Duration `yaml:"merge_wait"`
	// RequireE2EE refuses unencrypted voice: a call Discord describes
	// without end-to-end encryption, or a downgrade of an encrypted one,
	// leaves the NPCs unheard and deaf rather than in the clear (default
	// false: the protocol's downgrades are followed).
	RequireE2EE bool `yaml:"require_e2ee"`
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
	// ToolTimeout bounds one function call the model makes (recall and
	// the NPC's other tools; default 5 s).
	ToolTimeout Duration `yaml:"tool_timeout"`
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
	// Streaming sends speech to the provider while the player speaks
	// (deepgram: the live WebSocket; openai: a Realtime API transcription
	// session, whose model is then Model), so the transcript is ready
	// sooner and the NPC addressed is known before the player stops.
	// pocketsphinx cannot stream.
	Streaming bool `yaml:"streaming"`
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
		return fmt.Errorf("line %d: not a duration (write 600ms, 30s, 5m or 1h30m)", n.Line)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Std returns the value as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// maxMergeWait bounds voice.merge_wait.
const maxMergeWait = 10 * time.Second

// Default returns the configuration with every default filled in.
func Default() Config {
	return Config{
		Discord: Discord{LeaveWhenEmptyAfter: Duration(5 * time.Minute), MaxSessionLength: Duration(8 * time.Hour)},
		Memory: Memory{EmbeddingDimensions: 384, ReviewThreshold: 0.7, RecentWindow: Duration(5 * time.Minute),
			HotContextTokens: 1500, ToolTime: Duration(2 * time.Second)},
		Correction: Correction{PhoneticThreshold: 0.70, FuzzyThreshold: 0.85, LowConfidence: 0.5},
		Lifecycle: Lifecycle{MaxContextTokens: 8000, SummarizeAt: 0.75, ConsolidateEvery: Duration(30 * time.Minute),
			SpoolDir: "spool", SpoolMaxBytes: 64 << 20, ShutdownTimeout: Duration(20 * time.Second),
			DrainTimeout: Duration(30 * time.Second), LeaseTime: Duration(15 * time.Second),
			Reconnect:   Reconnect{Initial: Duration(time.Second), Max: Duration(30 * time.Second), Attempts: 10},
			DigestEvery: Duration(3 * time.Minute), DigestLines: 12, Continuity: true},
		Voice: Voice{EndOfTurn: Duration(600 * time.Millisecond), MaxUtterance: Duration(30 * time.Second),
			BargeIn: Duration(250 * time.Millisecond), MergeWait: Duration(2 * time.Second)},
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
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%s: %w: %s", name, ErrInvalid, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	// A second document (after "---" or "...") would be dropped unread.
	for {
		var next yaml.Node
		err := dec.Decode(&next)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w: a second YAML document follows the first (a configuration is one document): %s", name, ErrInvalid, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		if len(next.Content) > 0 && (next.Content[0].ShortTag() != "!!null" || next.Content[0].Value != "") {
			return Config{}, fmt.Errorf("%s: %w: line %d: a second YAML document starts here: a configuration is one document (what follows would be ignored)",
				name, ErrInvalid, next.Line)
		}
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
			// The decoder quotes the start of a value it cannot use, which
			// may have come from the environment: its messages are shown
			// without the quoted values.
			msg := decodeQuoted.ReplaceAllString(strings.TrimPrefix(err.Error(), "yaml: "), "")
			return Config{}, fmt.Errorf("%s: %w: %s", name, ErrInvalid, msg)
		}
		cfg.env = map[string]envSource{}
		provenance(root.Content[0], "", subst, cfg.env, 0)
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

// decodeQuoted matches the " `value`" the YAML decoder quotes in its
// errors.
var decodeQuoted = regexp.MustCompile(" `[^`]*`")

// substitute replaces ${VAR} references in the scalar values of the tree
// (never in keys), each node once, and records in done the original text
// of each node it changed (errors name its variables, never a substituted
// value, which may be a secret). A plain (unquoted) scalar that changed
// gets its type resolved again from its new value, so "port: ${PORT}" is
// still a number.
func substitute(n *yaml.Node, done map[*yaml.Node]string, getenv func(string) string) {
	if _, ok := done[n]; ok {
		return
	}
	done[n] = ""
	if n.Kind == yaml.MappingNode {
		for i := 1; i < len(n.Content); i += 2 {
			substitute(n.Content[i], done, getenv)
		}
		return
	}
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

// provenance records in env, for each scalar value substitute changed, its
// key path as [Config.Validate] names it ("discord.guilds[0].guild_id")
// and the variables its text referenced. Aliases are followed (a value
// reached by two paths is recorded under both) and merge keys ("<<") add
// their keys to the mapping they are in.
func provenance(n *yaml.Node, path string, subst map[*yaml.Node]string, env map[string]envSource, depth int) {
	if depth > 100 {
		return
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if orig := subst[n]; orig != "" {
			env[path] = envSource{names: envNames(orig), value: n.Value}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value == "<<" && k.ShortTag() == "!!merge" {
				if v.Kind == yaml.AliasNode && v.Alias != nil {
					v = v.Alias
				}
				if v.Kind == yaml.SequenceNode {
					for _, m := range v.Content {
						provenance(m, path, subst, env, depth+1)
					}
				} else {
					provenance(v, path, subst, env, depth+1)
				}
				continue
			}
			sub := k.Value
			if path != "" {
				sub = path + "." + k.Value
			}
			provenance(v, sub, subst, env, depth+1)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			provenance(c, fmt.Sprintf("%s[%d]", path, i), subst, env, depth+1)
		}
	}
}

// envNames returns the variables a value's text references, once each.
func envNames(text string) []string {
	var names []string
	for _, m := range envRef.FindAllStringSubmatch(text, -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// refs writes variable names as "${A}, ${B}".
func refs(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "${" + n + "}"
	}
	return strings.Join(out, ", ")
}

// Env returns the environment variables the value at key (a path such as
// "discord.guilds[0].guild_id" or "server.listen") came from: the ${VAR}
// references of its text in the file, or the GLYPHOXA_* variable that
// overrode it. It is nil for a value typed in the file or a default.
func (c Config) Env(key string) []string { return slices.Clone(c.env[key].names) }

// Key is key as a message names it: "server.listen", or "server.listen
// (from ${LISTEN})" when its value came from the environment.
func (c Config) Key(key string) string {
	if src, ok := c.env[key]; ok {
		return key + " (from " + refs(src.names) + ")"
	}
	return key
}

// Show returns v, the value at key, for a message or a log line: v itself
// when it was typed in the file, else the variables it came from
// ("${LISTEN}"), never their value.
func (c Config) Show(key, v string) string {
	if src, ok := c.env[key]; ok {
		return refs(src.names)
	}
	return v
}

// SetLiteral records that the value at key no longer comes from the
// environment: a command-line flag has set it.
func (c *Config) SetLiteral(key string) {
	if _, ok := c.env[key]; !ok {
		return
	}
	env := maps.Clone(c.env)
	delete(env, key)
	c.env = env
}

// setEnv records that the value at key came from the variable name.
func (c *Config) setEnv(key, name, value string) {
	env := maps.Clone(c.env)
	if env == nil {
		env = map[string]envSource{}
	}
	env[key] = envSource{names: []string{name}, value: value}
	c.env = env
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
			c.setEnv(o.Key, o.Env, v)
		}
	}
	if c.Providers.LLM.BaseURL != "" && c.Providers.LLM.Model == "" {
		c.Providers.LLM.Model = "gpt-4o-mini"
	}
}

// Error is one invalid value: the key it is at, what is wrong with it and,
// when it came from the environment, the variables it came from. It wraps
// [ErrInvalid]. The offending value is shown only when it was typed in the
// file.
type Error struct {
	// Key is the value's key path, e.g. "discord.guilds[0].guild_id".
	Key string
	// Env names the variables the value came from (see [Config.Env]).
	Env []string
	// Msg says what is wrong and what is expected.
	Msg string
	// got is the value as the message quotes it; left out when Env is set.
	got string
}

func (e *Error) Error() string {
	key, msg := e.Key, e.Msg
	if len(e.Env) > 0 {
		key += " (from " + refs(e.Env) + ")"
	} else if e.got != "" {
		msg += ", got " + e.got
	}
	return ErrInvalid.Error() + ": " + key + ": " + msg
}

// Unwrap returns ErrInvalid.
func (e *Error) Unwrap() error { return ErrInvalid }

// invalid is an error about the value at key; the message does not quote
// the value (use invalidGot for that).
func invalid(key, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// invalidGot is an error about the value at key that quotes it, got being
// the value as a message writes it, when it was typed in the file.
func invalidGot(key, got, format string, args ...any) error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...), got: got}
}

// attribute names, in each *Error of errs, the variables its value came
// from, and hides in its message the values the environment gave the key
// or the keys below it (a persona's fields, whose checks quote them).
func (c Config) attribute(errs []error) error {
	keys := slices.Sorted(maps.Keys(c.env))
	var out []error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			if err := c.attribute(j.Unwrap()); err != nil {
				out = append(out, err)
			}
			continue
		}
		fe, ok := err.(*Error)
		if !ok {
			out = append(out, err)
			continue
		}
		e := *fe
		e.Env = slices.Clone(c.env[e.Key].names)
		for i := sort.SearchStrings(keys, e.Key); i < len(keys) && strings.HasPrefix(keys[i], e.Key); i++ {
			key := keys[i]
			if key != e.Key && !strings.HasPrefix(key, e.Key+".") && !strings.HasPrefix(key, e.Key+"[") {
				continue
			}
			src := c.env[key]
			for _, n := range src.names {
				if !slices.Contains(e.Env, n) {
					e.Env = append(e.Env, n)
				}
			}
			if src.value != "" {
				e.Msg = hideValue(e.Msg, src.value, refs(src.names))
			}
		}
		out = append(out, &e)
	}
	return errors.Join(out...)
}

// hideValue replaces v in msg, quoted or standing alone, by ref.
func hideValue(msg, v, ref string) string {
	if !strings.Contains(msg, v) {
		return msg
	}
	msg = strings.ReplaceAll(msg, strconv.Quote(v), ref)
	re, err := regexp.Compile(`(^|[^\pL\pN_.-])` + regexp.QuoteMeta(v) + `($|[^\pL\pN_-])`)
	if err != nil {
		return msg
	}
	return re.ReplaceAllString(msg, "${1}"+strings.ReplaceAll(ref, "$", "$$")+"${2}")
}

// Validate checks the values; the error names the key and what it expects
// and, when the value came from the environment, the variable (never the
// value). It checks everything that can be checked without the network
// or the disk: listen addresses, URLs, providers, tokens, guilds, NPCs.
// It does not require a Discord token or a DSN: commands that need them
// check with [Config.Require]; serve and config check run [Config.Preflight].
func (c Config) Validate() error {
	in := func(key string, v, lo, hi float64) error {
		if !(v >= lo && v <= hi) { // NaN too
			return invalidGot(key, fmt.Sprint(v), "must be between %v and %v", lo, hi)
		}
		return nil
	}
	positive := func(key string, d Duration) error {
		if d <= 0 {
			return invalidGot(key, d.Std().String(), "must be a positive duration")
		}
		return nil
	}
	notNegative := func(key string, d Duration) error {
		if d < 0 {
			return invalidGot(key, d.Std().String(), "must not be negative (0: the default)")
		}
		return nil
	}
	oneOf := func(key, v string, allowed ...string) error {
		if slices.Contains(allowed, v) {
			return nil
		}
		return invalidGot(key, quote(v), "must be one of %s", strings.Join(allowed, ", "))
	}
	errs := []error{
		in("memory.embedding_dimensions", float64(c.Memory.EmbeddingDimensions), 1, 16000),
		in("memory.review_threshold", c.Memory.ReviewThreshold, 0, 1),
		positive("memory.recent_window", c.Memory.RecentWindow),
		in("memory.hot_context_tokens", float64(c.Memory.HotContextTokens), 100, 100000),
		positive("memory.tool_time", c.Memory.ToolTime),
		in("correction.phonetic_threshold", c.Correction.PhoneticThreshold, 0, 1),
		in("correction.fuzzy_threshold", c.Correction.FuzzyThreshold, 0, 1),
		in("correction.low_confidence", c.Correction.LowConfidence, 0, 1),
		in("lifecycle.max_context_tokens", float64(c.Lifecycle.MaxContextTokens), 500, 2_000_000),
		in("lifecycle.summarize_at", c.Lifecycle.SummarizeAt, 0.1, 0.99),
		positive("lifecycle.consolidate_every", c.Lifecycle.ConsolidateEvery),
		in("lifecycle.spool_max_bytes", float64(c.Lifecycle.SpoolMaxBytes), 1<<16, 1<<40),
		positive("lifecycle.shutdown_timeout", c.Lifecycle.ShutdownTimeout),
		positive("lifecycle.drain_timeout", c.Lifecycle.DrainTimeout),
		positive("lifecycle.lease_time", c.Lifecycle.LeaseTime),
		positive("lifecycle.reconnect.initial", c.Lifecycle.Reconnect.Initial),
		positive("lifecycle.reconnect.max", c.Lifecycle.Reconnect.Max),
		in("lifecycle.reconnect.attempts", float64(c.Lifecycle.Reconnect.Attempts), 1, 1000),
		positive("voice.end_of_turn", c.Voice.EndOfTurn),
		positive("voice.max_utterance", c.Voice.MaxUtterance),
		positive("voice.barge_in", c.Voice.BargeIn),
		positive("voice.merge_wait", c.Voice.MergeWait),
		positive("lifecycle.digest_every", c.Lifecycle.DigestEvery),
		in("lifecycle.digest_lines", float64(c.Lifecycle.DigestLines), 1, 10000),
		positive("discord.leave_when_empty_after", c.Discord.LeaveWhenEmptyAfter),
		positive("discord.max_session_length", c.Discord.MaxSessionLength),
		in("providers.llm.temperature", c.Providers.LLM.Temperature, 0, 2),
		notNegative("providers.llm.timeout", c.Providers.LLM.Timeout),
		oneOf("providers.embeddings.provider", c.Providers.Embeddings.Provider, "offline", "openai"),
		oneOf("providers.stt.provider", c.Providers.STT.Provider, "pocketsphinx", "deepgram", "openai"),
		oneOf("providers.tts.provider", c.Providers.TTS.Provider, "espeak", "local", "festival", "flite", "openai", "elevenlabs"),
		in("providers.realtime.max_minutes", c.Providers.Realtime.MaxMinutes, 0, 1e6),
		notNegative("providers.realtime.idle_timeout", c.Providers.Realtime.IdleTimeout),
		notNegative("providers.realtime.tool_timeout", c.Providers.Realtime.ToolTimeout),
		oneOf("log.level", c.Log.Level, "debug", "info", "warn", "error"),
		oneOf("log.format", c.Log.Format, "text", "json"),
		checkListen("server.listen", c.Server.Listen, false),
		checkListen("console.listen", c.Console.Listen, true),
		checkURL("providers.llm.base_url", c.Providers.LLM.BaseURL, "http", "https"),
		checkURL("providers.embeddings.base_url", c.Providers.Embeddings.BaseURL, "http", "https"),
		checkURL("providers.stt.base_url", c.Providers.STT.BaseURL, "http", "https"),
		checkURL("providers.tts.base_url", c.Providers.TTS.BaseURL, "http", "https"),
		checkURL("providers.realtime.url", c.Providers.Realtime.URL, "ws", "wss"),
		checkURL("console.public_url", c.Console.PublicURL, "http", "https"),
		checkSecret("discord.token", c.Discord.Token),
	}
	if strings.TrimSpace(c.Lifecycle.SpoolDir) == "" {
		errs = append(errs, invalid("lifecycle.spool_dir", "is required: the directory of the outage spool (default spool)"))
	}
	if c.Voice.MergeWait > Duration(maxMergeWait) {
		errs = append(errs, invalidGot("voice.merge_wait", c.Voice.MergeWait.Std().String(),
			"must be at most %s: a name said alone would hold its question back that long", maxMergeWait))
	}
	if c.Lifecycle.Reconnect.Max < c.Lifecycle.Reconnect.Initial {
		errs = append(errs, invalid("lifecycle.reconnect.max", "must not be shorter than lifecycle.reconnect.initial"))
	}
	switch {
	case c.Discord.ShardCount < 0:
		errs = append(errs, invalidGot("discord.shard_count", strconv.Itoa(c.Discord.ShardCount), "must not be negative"))
	case c.Discord.ShardCount > 0 && (c.Discord.ShardID < 0 || c.Discord.ShardID >= c.Discord.ShardCount):
		errs = append(errs, invalidGot("discord.shard_id", strconv.Itoa(c.Discord.ShardID), "must be between 0 and discord.shard_count-1"))
	}
	if l := c.Providers.LLM; l.BaseURL != "" && strings.TrimSpace(l.Model) == "" {
		errs = append(errs, invalid("providers.llm.model", "is required with providers.llm.base_url (or set GLYPHOXA_LLM_MODEL)"))
	}
	if l := c.Providers.LLM; l.APIKey != "" && l.BaseURL == "" {
		// A key alone would leave the NPCs without an LLM, silently.
		errs = append(errs, invalid("providers.llm.base_url", "is required with providers.llm.api_key: the endpoint the key is for "+
			"(https://api.openai.com/v1 for OpenAI; or set GLYPHOXA_LLM_BASE_URL)"))
	}
	if c.Providers.Embeddings.Provider == "openai" && strings.TrimSpace(c.Providers.Embeddings.Model) == "" {
		errs = append(errs, invalid("providers.embeddings.model", "is required with provider openai (e.g. text-embedding-3-small)"))
	}
	if st := c.Providers.STT; st.Streaming && st.Provider != "deepgram" && st.Provider != "openai" {
		name := st.Provider
		if name == "" {
			name = "pocketsphinx"
		}
		errs = append(errs, invalid("providers.stt.streaming", "needs provider deepgram or openai (%s cannot stream)", name))
	}
	for _, p := range []struct{ key, provider, apiKey string }{
		{"providers.stt.api_key", c.Providers.STT.Provider, c.Providers.STT.APIKey},
		{"providers.tts.api_key", c.Providers.TTS.Provider, c.Providers.TTS.APIKey},
	} {
		if (p.provider == "deepgram" || p.provider == "elevenlabs") && p.apiKey == "" {
			errs = append(errs, invalid(p.key, "is required with provider %s (or set %s)", p.provider, envFor(p.key)))
		}
	}
	switch cc := c.Console; {
	case cc.ClientID != "" && !number.MatchString(cc.ClientID):
		errs = append(errs, invalidGot("console.client_id", quote(cc.ClientID), "must be the Discord application's id (a number)"))
	case cc.ClientID != "" && cc.ClientSecret == "":
		errs = append(errs, invalid("console.client_secret", "is required with console.client_id (or set GLYPHOXA_CONSOLE_CLIENT_SECRET)"))
	case cc.ClientID == "" && cc.ClientSecret != "":
		errs = append(errs, invalid("console.client_id", "is required with console.client_secret: the Discord application's id"))
	}
	guilds := map[string]int{}
	for k, g := range c.Discord.Guilds {
		key := fmt.Sprintf("discord.guilds[%d]", k)
		prev, twice := guilds[g.GuildID]
		switch {
		case !snowflake.MatchString(g.GuildID):
			errs = append(errs, invalidGot(key+".guild_id", quote(g.GuildID), "must be a Discord guild id (a number)"))
		case strings.TrimSpace(g.Campaign) == "":
			errs = append(errs, invalid(key+".campaign", "is required: the campaign this server plays"))
		case memory.ValidateCampaignID(g.Campaign) != nil:
			errs = append(errs, invalid(key+".campaign", "%v", memory.ValidateCampaignID(g.Campaign)))
		case twice:
			errs = append(errs, invalid(key+".guild_id", "is bound twice: discord.guilds[%d].guild_id is the same guild", prev))
		case g.KGTokenLimit < 0 || g.KGTokenLimit > math.MaxInt32:
			errs = append(errs, invalidGot(key+".kg_token_limit", strconv.Itoa(g.KGTokenLimit), "must be positive and at most %d (or 0 to keep the campaign's)", math.MaxInt32))
		}
		if !twice {
			guilds[g.GuildID] = k
		}
		for i, id := range g.DMRoleIDs {
			if !snowflake.MatchString(id) {
				errs = append(errs, invalidGot(fmt.Sprintf("%s.dm_role_ids[%d]", key, i), quote(id), "must be a Discord role id (a number)"))
			}
		}
		for i, id := range g.DMUserIDs {
			if !snowflake.MatchString(id) {
				errs = append(errs, invalidGot(fmt.Sprintf("%s.dm_user_ids[%d]", key, i), quote(id), "must be a Discord user id (a number)"))
			}
		}
		if g.TextChannelID != "" && !snowflake.MatchString(g.TextChannelID) {
			errs = append(errs, invalidGot(key+".text_channel_id", quote(g.TextChannelID), "must be a Discord channel id (a number)"))
		}
	}
	if _, err := c.MCPEndpoints(); err != nil {
		errs = append(errs, err)
	}
	npcs := map[string]int{}
	for k, p := range c.NPCs {
		if err := p.Validate(); err != nil {
			errs = append(errs, invalid(fmt.Sprintf("npcs[%d]", k), "%v", err))
		}
		if p.Campaign != "" {
			if err := memory.ValidateCampaignID(p.Campaign); err != nil {
				errs = append(errs, invalid(fmt.Sprintf("npcs[%d].campaign", k), "%v", err))
			}
		}
		if prev, ok := npcs[p.ID]; ok {
			errs = append(errs, invalid(fmt.Sprintf("npcs[%d].id", k), "is defined twice: npcs[%d].id is the same NPC", prev))
		} else {
			npcs[p.ID] = k
		}
	}
	return c.attribute(errs)
}

// quote writes a value typed in the file for a message: quoted, and cut at
// 80 bytes.
func quote(v string) string {
	if len(v) > 80 {
		return strconv.Quote(v[:80]) + "…"
	}
	return strconv.Quote(v)
}

// checkListen checks an address serve listens on (host:port, the host an
// IP address, a host name or empty for every interface, the port a number
// or a service name), as net.Listen reads it but without resolving or
// binding anything. empty says whether "" (off) is allowed.
func checkListen(key, addr string, empty bool) error {
	if addr == "" {
		if empty {
			return nil
		}
		return invalid(key, "is required: the address to listen on, e.g. 127.0.0.1:9464")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return invalidGot(key, quote(addr), "must be host:port, e.g. 127.0.0.1:9464 or :9464")
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return invalidGot(key, quote(addr), "must end in a port number from 0 to 65535")
	}
	if n, err := strconv.Atoi(port); err == nil && (n < 0 || n > 65535) {
		return invalidGot(key, quote(addr), "must end in a port number from 0 to 65535")
	}
	if host == "" {
		return nil
	}
	if i := strings.IndexByte(host, '%'); i >= 0 { // an IPv6 zone
		host = host[:i]
	}
	if net.ParseIP(host) == nil && !hostname.MatchString(host) {
		return invalidGot(key, quote(addr), "must name an IP address or a host name before the port")
	}
	return nil
}

var hostname = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)

// checkURL checks an absolute URL of one of the schemes, with a host and
// no fragment; "" (not set) passes.
func checkURL(key, raw string, schemes ...string) error {
	if raw == "" {
		return nil
	}
	want := strings.Join(schemes, ":// or ") + "://"
	u, err := url.Parse(raw)
	switch {
	case err != nil || strings.ContainsFunc(raw, unicode.IsSpace):
		return invalid(key, "must be a URL (%s…)", want)
	case !slices.Contains(schemes, strings.ToLower(u.Scheme)):
		return invalid(key, "must start with %s", want)
	case u.Host == "" || u.Hostname() == "":
		return invalid(key, "must name a host (%shost…)", want)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return invalid(key, "must not hold a fragment (#…)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return invalid(key, "must have a port from 1 to 65535")
		}
	}
	return nil
}

// checkSecret checks a token: no spaces or control characters (a pasted
// "Bot " prefix or a trailing newline).
func checkSecret(key, v string) error {
	if v != "" && strings.ContainsFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return invalid(key, "holds a space or a control character (the token alone, without \"Bot \" or a line break)")
	}
	return nil
}

var snowflake = regexp.MustCompile(`^[0-9]{5,20}$`)

// number is a Discord id where a short one is still a valid test value.
var number = regexp.MustCompile(`^[0-9]{1,20}$`)

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
	return c.attribute(errs)
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
	// The server tokens are checked whether or not a guild uses them:
	// `glyphoxa mcp --http` serves them without any guild configured.
	for _, t := range []struct{ key, token string }{
		{"server.mcp_dm_token", c.Server.MCPDMToken}, {"server.mcp_token", c.Server.MCPToken},
	} {
		if t.token != "" && len(t.token) < MinTokenLen {
			errs = append(errs, invalid(t.key, "is %d characters long; use at least %d (e.g. openssl rand -hex 24)", len(t.token), MinTokenLen))
		}
	}
	if len(c.Server.MCPToken) >= MinTokenLen || len(c.Server.MCPDMToken) >= MinTokenLen {
		if len(campaigns) > 1 {
			errs = append(errs, invalid("server.mcp_token", "would open all %d campaigns with one token; set discord.guilds[].mcp_token and mcp_dm_token per guild instead (server.mcp_token and mcp_dm_token serve `glyphoxa mcp --http` and single-campaign configurations)", len(campaigns)))
		} else {
			for camp := range campaigns {
				if len(c.Server.MCPDMToken) >= MinTokenLen {
					add("server.mcp_dm_token", c.Server.MCPDMToken, camp, func(ep *MCPEndpoint) { ep.DM = append(ep.DM, c.Server.MCPDMToken) })
				}
				if len(c.Server.MCPToken) >= MinTokenLen {
					add("server.mcp_token", c.Server.MCPToken, camp, func(ep *MCPEndpoint) { ep.Player = append(ep.Player, c.Server.MCPToken) })
				}
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
	if err := c.attribute(errs); err != nil {
		return nil, err
	}
	out := make([]MCPEndpoint, 0, len(order))
	for _, camp := range order {
		out = append(out, *byCampaign[camp])
	}
	return out, nil
}

// Preflight runs every check `glyphoxa serve` runs on its configuration
// before it starts, so that `glyphoxa config check` refuses what serve
// would: [Config.Validate], a Discord token and a guild
// ([Config.Require] NeedDiscord), and a spool directory
// (lifecycle.spool_dir) that exists or can be created, and can be written.
// Both commands call it; it reads the disk but writes nothing that stays.
func (c Config) Preflight() error {
	return c.attribute([]error{c.Validate(), c.Require(NeedDiscord), checkDir("lifecycle.spool_dir", c.Lifecycle.SpoolDir)})
}

// checkDir checks that dir, or the nearest of its parents that exists, is
// a directory this process can create files in.
func checkDir(key, dir string) error {
	if strings.TrimSpace(dir) == "" {
		return nil // Validate reports it
	}
	p := filepath.Clean(dir)
	for {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				if p == filepath.Clean(dir) {
					return invalidGot(key, quote(dir), "is a file, not a directory")
				}
				return invalidGot(key, quote(dir), "cannot be created: a part of its path is a file")
			}
			break
		}
		if errors.Is(err, syscall.ENOTDIR) {
			return invalidGot(key, quote(dir), "cannot be created: a part of its path is a file")
		}
		if !errors.Is(err, os.ErrNotExist) {
			return invalidGot(key, quote(dir), "cannot be read: %v", pathCause(err))
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	f, err := os.CreateTemp(p, ".glyphoxa-check-*")
	if err != nil {
		return invalidGot(key, quote(dir), "cannot be written: %v", pathCause(err))
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return invalidGot(key, quote(dir), "cannot be written: %v", pathCause(err))
	}
	return nil
}

// pathCause is the cause of a file-system error without the path it names
// (the path may have come from the environment).
func pathCause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
