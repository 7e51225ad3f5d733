package turn_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/glyphoxa/glyphoxa/voice/turn"
)

func TestTimelineAndMetrics(t *testing.T) {
	var tl turn.Timeline
	t0 := time.Unix(1000, 0)
	for s, d := range []time.Duration{0, 100, 110, 120, 400, 520, 530} {
		tl.Mark(turn.Stage(s), t0.Add(d*time.Millisecond))
	}
	tl.Mark(turn.FirstPacket, t0.Add(time.Hour)) // the first stamp wins
	tl.Provider = 500 * time.Millisecond
	if tl.Total() != 530*time.Millisecond || tl.Overhead() != 30*time.Millisecond {
		t.Fatalf("total %v overhead %v", tl.Total(), tl.Overhead())
	}
	reg := prometheus.NewRegistry()
	m, err := turn.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observe(&tl)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		series[mf.GetName()] = len(mf.GetMetric())
	}
	if n := series["glyphoxa_voice_turn_stage_seconds"]; n != 6 {
		t.Errorf("%d stage series, want 6", n)
	}
	if series["glyphoxa_voice_turn_overhead_seconds"] != 1 {
		t.Errorf("no overhead histogram: %v", series)
	}
	if _, err := turn.NewMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
	if turn.FirstPacket.String() != "first_packet" {
		t.Error(turn.FirstPacket.String())
	}
}
