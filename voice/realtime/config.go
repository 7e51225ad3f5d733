package realtime

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// Protocol selects the Realtime API's dialect.
type Protocol int

const (
	// GA is the generally available Realtime API (gpt-realtime): nested
	// session.audio settings and response.output_audio.* event names.
	GA Protocol = iota
	// Beta is the older preview API (header OpenAI-Beta: realtime=v1):
	// flat session settings and response.audio.* event names. The client
	// reads both dialects' server events either way.
	Beta
)

func (p Protocol) String() string {
	if p == Beta {
		return "beta"
	}
	return "ga"
}

// Defaults for [Config].
const (
	DefaultURL                = "wss://api.openai.com/v1/realtime"
	DefaultModel              = "gpt-realtime"
	DefaultVoice              = "marin"
	DefaultTranscriptionModel = "gpt-4o-mini-transcribe"
	DefaultIdleTimeout        = 5 * time.Minute
	DefaultMaxAudio           = 60 * time.Minute
	DefaultToolTimeout        = 5 * time.Second
	DefaultMaxToolCalls       = 4
	DefaultWriteTimeout       = 10 * time.Second
)

// Config configures a [Session]. Zero fields take the Default* values.
type Config struct {
	// URL is the Realtime endpoint (ws:// or wss://); the model is added
	// as the "model" query parameter.
	URL string
	// APIKey is sent as a bearer token.
	APIKey string
	// Protocol is the API's dialect (GA by default).
	Protocol Protocol
	// Model is the realtime model.
	Model string
	// Voice is the model's voice; it cannot change once the model has
	// spoken.
	Voice string
	// Instructions is the system prompt: the NPC's persona and hot
	// context. [Session.UpdateInstructions] replaces it per turn.
	Instructions string
	// Tools are the functions offered to the model; they need Runner.
	Tools []Tool
	// Runner runs the model's function calls.
	Runner ToolRunner
	// TranscriptionModel transcribes the player's audio for the session
	// log ([EventPlayerTranscript]).
	TranscriptionModel string
	// ServerVAD lets the server detect the end of the player's turn and
	// answer on its own. Off by default: the bot's pipeline decides who is
	// addressed and when a turn ends, and calls [Session.EndOfTurn].
	ServerVAD bool
	// IdleTimeout closes the session (with [ErrIdle]) after this long
	// without audio either way; negative disables it.
	IdleTimeout time.Duration
	// Budget bounds the audio minutes; nil gives the session a budget of
	// its own of MaxAudio.
	Budget *Budget
	// MaxAudio is the audio (in plus out) of a session's own budget;
	// negative means no limit.
	MaxAudio time.Duration
	// MaxToolCalls bounds the function calls of one turn; calls beyond are
	// answered with an error telling the model to answer now.
	MaxToolCalls int
	// ToolTimeout bounds one function call.
	ToolTimeout time.Duration
	// WriteTimeout bounds sending one event to the server.
	WriteTimeout time.Duration
	// Header holds extra handshake headers.
	Header http.Header
	// Dialer dials the WebSocket; nil uses websocket.DefaultDialer.
	Dialer *websocket.Dialer
	// Clock times idleness and first-audio latency.
	Clock clock.Clock
	// Logger receives the session's logs.
	Logger *slog.Logger
	// Metrics receives the session's measurements.
	Metrics Metrics
}

// withDefaults fills zero fields and validates the rest.
func (c Config) withDefaults() (Config, error) {
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Voice == "" {
		c.Voice = DefaultVoice
	}
	if c.TranscriptionModel == "" {
		c.TranscriptionModel = DefaultTranscriptionModel
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxAudio == 0 {
		c.MaxAudio = DefaultMaxAudio
	}
	if c.MaxToolCalls == 0 {
		c.MaxToolCalls = DefaultMaxToolCalls
	}
	if c.ToolTimeout == 0 {
		c.ToolTimeout = DefaultToolTimeout
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.Budget == nil {
		c.Budget = NewBudget(c.MaxAudio)
	}
	if c.Dialer == nil {
		c.Dialer = websocket.DefaultDialer
	}
	c.Clock = clock.OrReal(c.Clock)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = NopMetrics{}
	}
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return c, fmt.Errorf("%w: url %q: %v", errConfig, c.URL, err)
	case u.Scheme != "ws" && u.Scheme != "wss":
		return c, fmt.Errorf("%w: url %q must be ws:// or wss://", errConfig, c.URL)
	case c.Protocol != GA && c.Protocol != Beta:
		return c, fmt.Errorf("%w: protocol %d", errConfig, c.Protocol)
	case len(c.Tools) > 0 && c.Runner == nil:
		return c, fmt.Errorf("%w: %d tools but no Runner to run them", errConfig, len(c.Tools))
	case c.MaxToolCalls < 0:
		return c, fmt.Errorf("%w: MaxToolCalls %d is negative", errConfig, c.MaxToolCalls)
	case c.ToolTimeout < 0 || c.WriteTimeout < 0:
		return c, fmt.Errorf("%w: negative ToolTimeout or WriteTimeout", errConfig)
	}
	seen := map[string]bool{}
	for i, t := range c.Tools {
		if strings.TrimSpace(t.Name) == "" {
			return c, fmt.Errorf("%w: tool %d has no name", errConfig, i)
		}
		if seen[t.Name] {
			return c, fmt.Errorf("%w: tool %q declared twice", errConfig, t.Name)
		}
		seen[t.Name] = true
	}
	return c, nil
}

// dialURL is the endpoint with the model query parameter.
func (c Config) dialURL() string {
	u, _ := url.Parse(c.URL) // validated
	q := u.Query()
	q.Set("model", c.Model)
	u.RawQuery = q.Encode()
	return u.String()
}
