package conn

import (
	"math"
	"testing"
	"time"
)

// TestAttackHeartbeatInterval: the interval a voice gateway asks for is
// kept within [minHeartbeat, maxHeartbeat]; a hostile one asking for a
// heartbeat every millisecond had the bot send a thousand a second and
// reconnect whenever one answer came late.
func TestAttackHeartbeatInterval(t *testing.T) {
	for _, tc := range []struct {
		ms   float64
		want time.Duration
	}{
		{13750, 13750 * time.Millisecond},
		{1, time.Second},
		{0.001, time.Second},
		{0, defaultHeartbeat},
		{-5, defaultHeartbeat},
		{math.NaN(), defaultHeartbeat},
		{math.Inf(1), time.Minute},
		{86_400_000, time.Minute},
		{1e300, time.Minute},
		{1000, time.Second},
		{60_000, time.Minute},
	} {
		if got := heartbeatInterval(tc.ms); got != tc.want {
			t.Errorf("heartbeat_interval %v ms: %v, want %v", tc.ms, got, tc.want)
		}
	}
}
