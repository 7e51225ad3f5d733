package realtime

import (
	"sync"
	"sync/atomic"
	"time"
)

// Metrics receives a session's measurements; the bot wires it to its
// Prometheus registry with an "engine" label of "s2s". Implementations must
// be safe for concurrent use and fast: they are called on the audio path.
// Embed [NopMetrics] to implement only some methods.
type Metrics interface {
	// AudioIn counts audio sent to the model.
	AudioIn(d time.Duration)
	// AudioOut counts audio received from the model.
	AudioOut(d time.Duration)
	// FirstAudio is the time from the end of a player's turn
	// ([Session.EndOfTurn]) to the first audio of the answer, model
	// included.
	FirstAudio(d time.Duration)
	// Response counts a finished response by status: completed,
	// cancelled, failed, incomplete.
	Response(status string)
	// ToolCall counts a function call of the model; err is its failure.
	ToolCall(name string, err error)
	// Error counts an error by kind: the server's error code or type, or
	// "protocol" for a malformed event.
	Error(kind string)
	// RateLimit reports the provider's remaining allowance of a limit
	// (requests, tokens).
	RateLimit(name string, remaining float64)
	// Closed counts a session's end by reason: closed, idle, audio_limit,
	// server, error.
	Closed(reason string)
}

// NopMetrics discards every measurement.
type NopMetrics struct{}

var _ Metrics = NopMetrics{}

// AudioIn implements [Metrics].
func (NopMetrics) AudioIn(time.Duration) {}

// AudioOut implements [Metrics].
func (NopMetrics) AudioOut(time.Duration) {}

// FirstAudio implements [Metrics].
func (NopMetrics) FirstAudio(time.Duration) {}

// Response implements [Metrics].
func (NopMetrics) Response(string) {}

// ToolCall implements [Metrics].
func (NopMetrics) ToolCall(string, error) {}

// Error implements [Metrics].
func (NopMetrics) Error(string) {}

// RateLimit implements [Metrics].
func (NopMetrics) RateLimit(string, float64) {}

// Closed implements [Metrics].
func (NopMetrics) Closed(string) {}

// Counters is a [Metrics] that keeps totals in memory, for a status line
// or a test. The zero value is ready to use.
type Counters struct {
	audioIn, audioOut atomic.Int64 // nanoseconds
	toolCalls         atomic.Int64
	toolErrors        atomic.Int64

	mu         sync.Mutex
	firstAudio []time.Duration
	responses  map[string]int
	errors     map[string]int
	closed     map[string]int
	rateLimits map[string]float64
}

var _ Metrics = (*Counters)(nil)

// AudioIn implements [Metrics].
func (c *Counters) AudioIn(d time.Duration) { c.audioIn.Add(int64(d)) }

// AudioOut implements [Metrics].
func (c *Counters) AudioOut(d time.Duration) { c.audioOut.Add(int64(d)) }

// FirstAudio implements [Metrics].
func (c *Counters) FirstAudio(d time.Duration) {
	c.mu.Lock()
	c.firstAudio = append(c.firstAudio, d)
	c.mu.Unlock()
}

// Response implements [Metrics].
func (c *Counters) Response(status string) { c.inc(&c.responses, status) }

// ToolCall implements [Metrics].
func (c *Counters) ToolCall(_ string, err error) {
	c.toolCalls.Add(1)
	if err != nil {
		c.toolErrors.Add(1)
	}
}

// Error implements [Metrics].
func (c *Counters) Error(kind string) { c.inc(&c.errors, kind) }

// RateLimit implements [Metrics].
func (c *Counters) RateLimit(name string, remaining float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rateLimits == nil {
		c.rateLimits = map[string]float64{}
	}
	c.rateLimits[name] = remaining
}

// Closed implements [Metrics].
func (c *Counters) Closed(reason string) { c.inc(&c.closed, reason) }

func (c *Counters) inc(m *map[string]int, k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[k]++
}

// Snapshot is a copy of [Counters].
type Snapshot struct {
	AudioIn, AudioOut     time.Duration
	ToolCalls, ToolErrors int64
	FirstAudio            []time.Duration
	Responses             map[string]int
	Errors                map[string]int
	Closed                map[string]int
	RateLimits            map[string]float64
}

// Snapshot returns the totals so far.
func (c *Counters) Snapshot() Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := func(m map[string]int) map[string]int {
		out := make(map[string]int, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	rl := make(map[string]float64, len(c.rateLimits))
	for k, v := range c.rateLimits {
		rl[k] = v
	}
	return Snapshot{
		AudioIn: time.Duration(c.audioIn.Load()), AudioOut: time.Duration(c.audioOut.Load()),
		ToolCalls: c.toolCalls.Load(), ToolErrors: c.toolErrors.Load(),
		FirstAudio: append([]time.Duration(nil), c.firstAudio...),
		Responses:  cp(c.responses), Errors: cp(c.errors), Closed: cp(c.closed), RateLimits: rl,
	}
}
