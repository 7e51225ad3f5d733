// Package metrics exposes glyphoxa's Prometheus metrics: NPC turn latency
// per stage, memory health and the outage spool, active sessions, and DAVE
// epoch changes, next to the Go runtime and process metrics.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Turn stages, in the order a voice turn passes them.
const (
	StageEndOfSpeech   = "end_of_speech"
	StageSTTFinal      = "stt_final"
	StageCorrection    = "correction"
	StageHotContext    = "hot_context"
	StageLLMFirstToken = "llm_first_token"
	StageFirstAudio    = "first_audio"
	StageFirstPacket   = "first_packet"
)

// Metrics is one registry of glyphoxa's metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg            *prometheus.Registry
	turnStage      *prometheus.HistogramVec
	turns          *prometheus.CounterVec
	activeSessions prometheus.Gauge
	degraded       *prometheus.GaugeVec
	spoolPending   *prometheus.GaugeVec
	daveEpochs     prometheus.Counter
	llmTokens      *prometheus.CounterVec
	quarantined    *prometheus.CounterVec
	engineTurns    *prometheus.CounterVec
	s2sAudio       prometheus.Counter
	voiceDropped   *prometheus.CounterVec
}

// New returns a registry with every glyphoxa metric and the Go and process
// collectors.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		turnStage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "glyphoxa", Name: "turn_stage_seconds",
			Help:    "Time from a player's end of speech to each stage of the NPC's reply.",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .35, .5, .75, 1, 1.5, 2, 3, 5, 8},
		}, []string{"stage"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "glyphoxa", Name: "turns_total", Help: "NPC turns by outcome.",
		}, []string{"outcome"}),
		activeSessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "glyphoxa", Name: "active_sessions", Help: "Voice sessions running.",
		}),
		degraded: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "glyphoxa", Name: "memory_degraded",
			Help: "1 while a session's memory store is unreachable and writes go to the spool.",
		}, []string{"campaign"}),
		spoolPending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "glyphoxa", Name: "spool_pending",
			Help: "Transcript lines kept locally (outage spool and journal) that the database does not hold yet.",
		}, []string{"campaign"}),
		daveEpochs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "glyphoxa", Name: "dave_epoch_changes_total", Help: "DAVE (end-to-end encryption) epoch transitions.",
		}),
		llmTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "glyphoxa", Name: "llm_tokens_total", Help: "LLM tokens used, by direction.",
		}, []string{"direction"}),
		quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "glyphoxa", Name: "spool_quarantined_total",
			Help: "Damaged spool or journal records (or heads) skipped and moved to quarantine/ on open.",
		}, []string{"campaign"}),
		engineTurns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "glyphoxa", Name: "engine_turns_total", Help: "NPC turns by engine (cascaded, s2s) and outcome.",
		}, []string{"engine", "outcome"}),
		s2sAudio: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "glyphoxa", Name: "s2s_audio_seconds_total",
			Help: "Audio heard and spoken by speech-to-speech models (what their providers bill).",
		}),
		voiceDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "glyphoxa", Name: "voice_packets_dropped_total",
			Help: "Voice packets dropped before speech-to-text, by reason (rate: a speaker sending faster than 1.5 times real time).",
		}, []string{"reason"}),
	}
	m.reg.MustRegister(m.turnStage, m.turns, m.activeSessions, m.degraded, m.spoolPending, m.daveEpochs, m.llmTokens, m.quarantined, m.engineTurns, m.s2sAudio,
		m.voiceDropped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// ObserveStage records how long after the end of speech a turn reached a
// stage.
func (m *Metrics) ObserveStage(stage string, sinceEndOfSpeech time.Duration) {
	m.turnStage.WithLabelValues(stage).Observe(sinceEndOfSpeech.Seconds())
}

// CountTurn counts a finished turn: "answered", "muted", "failed"…
func (m *Metrics) CountTurn(outcome string) { m.turns.WithLabelValues(outcome).Inc() }

// SessionStarted and SessionEnded track running sessions.
func (m *Metrics) SessionStarted() { m.activeSessions.Inc() }

// SessionEnded marks a session as ended.
func (m *Metrics) SessionEnded() { m.activeSessions.Dec() }

// SetMemoryHealth records a campaign's memory state: whether its database
// is unreachable, and how many lines wait locally.
func (m *Metrics) SetMemoryHealth(campaign string, degraded bool, pending int) {
	v := 0.0
	if degraded {
		v = 1
	}
	m.degraded.WithLabelValues(campaign).Set(v)
	m.spoolPending.WithLabelValues(campaign).Set(float64(pending))
}

// CountEngineTurn counts an NPC turn of an engine ("cascaded", "s2s").
func (m *Metrics) CountEngineTurn(engine, outcome string) {
	m.engineTurns.WithLabelValues(engine, outcome).Inc()
}

// AddS2SAudio adds audio a speech-to-speech model heard or spoke.
func (m *Metrics) AddS2SAudio(d time.Duration) { m.s2sAudio.Add(d.Seconds()) }

// SpoolQuarantined counts a damaged spool or journal record of a campaign
// (pass it as spool.Options.OnCorrupt).
func (m *Metrics) SpoolQuarantined(campaign string) { m.quarantined.WithLabelValues(campaign).Inc() }

// VoicePacketDropped counts a voice packet dropped before speech-to-text,
// by reason ("rate").
func (m *Metrics) VoicePacketDropped(reason string) { m.voiceDropped.WithLabelValues(reason).Inc() }

// DAVEEpochChanged counts an epoch transition.
func (m *Metrics) DAVEEpochChanged() { m.daveEpochs.Inc() }

// AddTokens counts LLM tokens.
func (m *Metrics) AddTokens(prompt, completion int) {
	m.llmTokens.WithLabelValues("prompt").Add(float64(prompt))
	m.llmTokens.WithLabelValues("completion").Add(float64(completion))
}
