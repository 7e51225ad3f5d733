// Package turn timestamps a voice turn, from the end of a player's speech
// to the first packet of the NPC's answer, and exposes the stage latencies
// as Prometheus metrics.
//
// A turn passes these stages, each stamped when it is reached:
// end of speech detected, speech-to-text final, correction done, hot
// context ready, first LLM token, first audio synthesised, first packet
// sent. [Timeline.Overhead] is the turn's time less what the providers
// (speech-to-text, LLM, speech synthesis) spent: the latency the bot itself
// adds.
package turn

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stage is a point in a turn.
type Stage int

// The stages of a turn, in order.
const (
	EndOfSpeech Stage = iota
	STTFinal
	CorrectionDone
	ContextReady
	LLMFirstToken
	FirstAudio
	FirstPacket
	numStages
)

var stageNames = [...]string{"end_of_speech", "stt_final", "correction_done", "context_ready", "llm_first_token", "first_audio", "first_packet"}

func (s Stage) String() string {
	if s < 0 || s >= numStages {
		return fmt.Sprintf("Stage(%d)", int(s))
	}
	return stageNames[s]
}

// Timeline holds one turn's timestamps and what the providers spent.
// It is not safe for concurrent use.
type Timeline struct {
	at [numStages]time.Time
	// Provider is the time spent waiting on providers (speech-to-text,
	// LLM until its first token, speech synthesis of the first sentence).
	Provider time.Duration
}

// Mark stamps stage s at t (the first stamp wins).
func (tl *Timeline) Mark(s Stage, t time.Time) {
	if s >= 0 && s < numStages && tl.at[s].IsZero() {
		tl.at[s] = t
	}
}

// At is when stage s was reached (zero if not).
func (tl *Timeline) At(s Stage) time.Time { return tl.at[s] }

// Total is the time from end of speech to the first packet.
func (tl *Timeline) Total() time.Duration {
	if tl.at[EndOfSpeech].IsZero() || tl.at[FirstPacket].IsZero() {
		return 0
	}
	return tl.at[FirstPacket].Sub(tl.at[EndOfSpeech])
}

// Overhead is Total less the providers' time.
func (tl *Timeline) Overhead() time.Duration { return tl.Total() - tl.Provider }

// Metrics are the Prometheus histograms of turns.
type Metrics struct {
	stage    *prometheus.HistogramVec
	overhead prometheus.Histogram
	total    prometheus.Histogram
}

// NewMetrics registers the turn metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	buckets := []float64{.005, .01, .02, .03, .05, .1, .2, .3, .5, .75, 1, 1.5, 2, 3, 5}
	m := &Metrics{
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "glyphoxa_voice_turn_stage_seconds", Buckets: buckets,
			Help: "Time from the end of a player's speech to each stage of the NPC's answer.",
		}, []string{"stage"}),
		overhead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "glyphoxa_voice_turn_overhead_seconds", Buckets: buckets,
			Help: "Time a voice turn took beyond what the providers spent.",
		}),
		total: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "glyphoxa_voice_turn_seconds", Buckets: buckets,
			Help: "Time from the end of a player's speech to the NPC's first packet.",
		}),
	}
	for _, c := range []prometheus.Collector{m.stage, m.overhead, m.total} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register turn metrics: %w", err)
		}
	}
	return m, nil
}

// Observe records a finished turn.
func (m *Metrics) Observe(tl *Timeline) {
	start := tl.at[EndOfSpeech]
	if start.IsZero() {
		return
	}
	for s := STTFinal; s < numStages; s++ {
		if !tl.at[s].IsZero() {
			m.stage.WithLabelValues(s.String()).Observe(tl.at[s].Sub(start).Seconds())
		}
	}
	if tl.Total() > 0 {
		m.total.Observe(tl.Total().Seconds())
		m.overhead.Observe(tl.Overhead().Seconds())
	}
}
