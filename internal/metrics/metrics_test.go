package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/metrics"
)

func TestExposition(t *testing.T) {
	m := metrics.New()
	m.ObserveStage(metrics.StageFirstPacket, 420*time.Millisecond)
	m.CountTurn("answered")
	m.SessionStarted()
	m.SetMemoryHealth("ironhold-saga", true, 2048)
	m.DAVEEpochChanged()
	m.AddTokens(100, 20)
	m.SpoolQuarantined("ironhold-saga")
	m.VoicePacketDropped("rate")
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`glyphoxa_turn_stage_seconds_bucket{stage="first_packet",le="0.5"} 1`,
		`glyphoxa_turns_total{outcome="answered"} 1`,
		`glyphoxa_active_sessions 1`,
		`glyphoxa_memory_degraded{campaign="ironhold-saga"} 1`,
		`glyphoxa_spool_pending{campaign="ironhold-saga"} 2048`,
		`glyphoxa_dave_epoch_changes_total 1`,
		`glyphoxa_llm_tokens_total{direction="prompt"} 100`,
		`glyphoxa_spool_quarantined_total{campaign="ironhold-saga"} 1`,
		`glyphoxa_voice_packets_dropped_total{reason="rate"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
