package audio

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults of [Config].
const (
	DefaultEndpoint      = 600 * time.Millisecond
	DefaultMaxUtterance  = 30 * time.Second
	DefaultOnsetFrames   = 3
	DefaultPreRoll       = 200 * time.Millisecond
	DefaultPostRoll      = 150 * time.Millisecond
	DefaultHoldAfter     = 250 * time.Millisecond
	DefaultReorderWindow = 5
	DefaultReorderDelay  = 60 * time.Millisecond
	DefaultMaxConceal    = 100 * time.Millisecond
	DefaultTickSlack     = 100 * time.Millisecond
)

// Config tunes the lanes of a [Router]. Zero fields take the defaults.
type Config struct {
	// Endpoint is the silence that ends an utterance (600 ms).
	Endpoint time.Duration
	// MaxUtterance cuts an utterance that runs this long (30 s); the
	// speaker's next words open a new one at once.
	MaxUtterance time.Duration
	// OnsetFrames is how many of five consecutive 20 ms frames must be
	// voiced to open an utterance (3, i.e. 60 ms of voicing).
	OnsetFrames int
	// PreRoll is audio kept before the detected start (200 ms), so that
	// speech-to-text hears the first consonant.
	PreRoll time.Duration
	// PostRoll is audio kept after the detected end (150 ms).
	PostRoll time.Duration
	// HoldAfter is how long a speaker must have been talking before the
	// lane reports [SpeechHeld] (250 ms); it drives barge-in.
	HoldAfter time.Duration
	// ReorderWindow is how many packets may wait for a missing one before
	// it is declared lost (5).
	ReorderWindow int
	// ReorderDelay is how long a packet may wait for a missing one before
	// it is declared lost (60 ms).
	ReorderDelay time.Duration
	// MaxConceal is the longest loss filled by packet-loss concealment
	// (100 ms); longer gaps become silence.
	MaxConceal time.Duration
	// TickSlack is how late a packet may be before a silent speaker's
	// missing audio is taken as silence (100 ms).
	TickSlack time.Duration
	// MaxRate is how many times real time one speaker may send audio for
	// long (DefaultMaxRate, 1.5); RateBurst is how much audio beyond that
	// may come at once (DefaultRateBurst, 1 s). Packets beyond are dropped
	// and counted (Stats.RateDropped, OnDrop): their time is cut from the
	// speaker's stream, so a speaker sending ten times real time gives
	// speech-to-text at most MaxRate times real time of audio. Rates are
	// measured by Packet.Received.
	MaxRate   float64
	RateBurst time.Duration
	// OnDrop is called for each packet the rate limit drops, with the
	// router locked; it must not call back into the router.
	OnDrop func(userID string)
	// OnUtterance receives each finished utterance. It is called from the
	// goroutine that pushes packets or ticks, and must not call back into
	// the router.
	OnUtterance func(Utterance)
	// OnEvent receives speech events, likewise.
	OnEvent func(Event)
	// OnAudio receives an open utterance's audio as it is decoded, for
	// streaming speech-to-text: first the pre-roll and onset (Start set),
	// then each 20 ms frame. The utterance ends with OnUtterance. Samples
	// are only valid during the call.
	OnAudio func(Chunk)
	// Logger receives decode problems; nil discards them.
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	def := func(d *time.Duration, v time.Duration, name string) error {
		if *d < 0 {
			return fmt.Errorf("%w: %s is negative (%v)", errConfig, name, *d)
		}
		if *d == 0 {
			*d = v
		}
		return nil
	}
	for _, f := range []struct {
		d    *time.Duration
		v    time.Duration
		name string
	}{
		{&c.Endpoint, DefaultEndpoint, "Endpoint"},
		{&c.MaxUtterance, DefaultMaxUtterance, "MaxUtterance"},
		{&c.PreRoll, DefaultPreRoll, "PreRoll"},
		{&c.PostRoll, DefaultPostRoll, "PostRoll"},
		{&c.HoldAfter, DefaultHoldAfter, "HoldAfter"},
		{&c.ReorderDelay, DefaultReorderDelay, "ReorderDelay"},
		{&c.MaxConceal, DefaultMaxConceal, "MaxConceal"},
		{&c.TickSlack, DefaultTickSlack, "TickSlack"},
		{&c.RateBurst, DefaultRateBurst, "RateBurst"},
	} {
		if err := def(f.d, f.v, f.name); err != nil {
			return err
		}
	}
	if c.MaxRate == 0 {
		c.MaxRate = DefaultMaxRate
	}
	if !(c.MaxRate >= 1) {
		return fmt.Errorf("%w: MaxRate %v is below 1 (real time)", errConfig, c.MaxRate)
	}
	if c.OnsetFrames == 0 {
		c.OnsetFrames = DefaultOnsetFrames
	}
	if c.OnsetFrames < 1 || c.OnsetFrames > onsetSpan {
		return fmt.Errorf("%w: OnsetFrames %d is outside 1..%d", errConfig, c.OnsetFrames, onsetSpan)
	}
	if c.ReorderWindow == 0 {
		c.ReorderWindow = DefaultReorderWindow
	}
	if c.ReorderWindow < 0 {
		return fmt.Errorf("%w: ReorderWindow is negative (%d)", errConfig, c.ReorderWindow)
	}
	if c.MaxUtterance < c.Endpoint {
		return fmt.Errorf("%w: MaxUtterance %v is shorter than Endpoint %v", errConfig, c.MaxUtterance, c.Endpoint)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// onsetSpan is the number of recent frames the onset rule looks at.
const onsetSpan = 5

// EventKind says what a speaker did.
type EventKind int

// Speech events of a lane.
const (
	// SpeechStarted: an utterance opened.
	SpeechStarted EventKind = iota + 1
	// SpeechHeld: the speaker has been talking for Config.HoldAfter.
	SpeechHeld
	// SpeechEnded: the utterance closed (its Utterance follows).
	SpeechEnded
)

func (k EventKind) String() string {
	switch k {
	case SpeechStarted:
		return "speech started"
	case SpeechHeld:
		return "speech held"
	case SpeechEnded:
		return "speech ended"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is a change in one speaker's speech.
type Event struct {
	Kind   EventKind
	UserID string
	// At is when it happened in the speaker's audio.
	At time.Time
}

// Utterance is one stretch of speech by one speaker.
type Utterance struct {
	UserID string
	// Start and End bound the detected speech.
	Start, End time.Time
	// Audio is 16 kHz mono audio from PreRoll before Start to PostRoll
	// after End (less where the stream had no more).
	Audio PCM
	// AudioStart is the time of Audio's first sample.
	AudioStart time.Time
	// Truncated is set when the utterance was cut at MaxUtterance.
	Truncated bool
	// Concealed is how much of the audio was made up by loss concealment.
	Concealed time.Duration
}

// Duration is the length of the detected speech.
func (u Utterance) Duration() time.Duration { return u.End.Sub(u.Start) }

// Chunk is audio of an open utterance.
type Chunk struct {
	UserID string
	// Start is set on an utterance's first chunk.
	Start bool
	// Samples are 16 kHz mono.
	Samples []int16
}

// Stats counts what a lane has seen.
type Stats struct {
	Packets   int // packets decoded
	Silence   int // Discord silence frames
	Lost      int // packets never received
	Late      int // packets that came after they were given up for lost
	Bad       int // packets that failed to decode
	Concealed time.Duration
	Decoded   time.Duration // audio produced, including concealment

	// RateDropped counts packets dropped for coming faster than
	// Config.MaxRate allows.
	RateDropped int
}
