package realtime

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/realtime/realtimetest"
)

// BenchmarkTurnLatency measures the bot's own latency on the S2S path:
// from the player's last 20 ms frame handed to [Session.Hear], through
// resampling to 24 kHz, the append, commit and response.create events, to
// the first [EventAudio] of the answer, resampled to 48 kHz, out of
// [Session.Events]. The fake server answers at once (no model time), so
// what is measured is the client's event handling and resampling both
// ways, plus the loopback WebSocket and the fake's own work. Percentiles
// are reported per turn: p50-ms, p95-ms, p99-ms.
func BenchmarkTurnLatency(b *testing.B) {
	ctx := context.Background()
	srv := realtimetest.NewServer(b, realtimetest.Options{Transcript: "hello",
		Default: realtimetest.Reply{Text: "Aye.", Audio: make([]int16, 2400)}, ChunkMs: 20})
	s, err := Dial(ctx, Config{URL: srv.URL()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	turn := voice48k(300 * time.Millisecond)
	const frame = DiscordRate / 50
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i+frame < len(turn); i += frame {
			if err := s.Hear(ctx, turn[i:i+frame]); err != nil {
				b.Fatal(err)
			}
		}
		start := time.Now()
		if err := s.Hear(ctx, turn[len(turn)-frame:]); err != nil {
			b.Fatal(err)
		}
		if err := s.EndOfTurn(ctx); err != nil {
			b.Fatal(err)
		}
		first := true
		for ev := range s.Events() {
			if ev.Kind == EventAudio && first {
				lat = append(lat, time.Since(start))
				first = false
			}
			if ev.Kind == EventResponseDone {
				break
			}
			if ev.Kind == EventError {
				b.Fatal(ev.Err)
			}
		}
		if first {
			b.Fatalf("no audio: %v", s.Err())
		}
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.95), "p95-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkHear measures one 20 ms frame of the player: resampling to
// 24 kHz, encoding and sending the append event.
func BenchmarkHear(b *testing.B) {
	ctx := context.Background()
	srv := realtimetest.NewServer(b, realtimetest.Options{})
	s, err := Dial(ctx, Config{URL: srv.URL(), MaxAudio: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	frame := voice48k(20 * time.Millisecond)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Hear(ctx, frame); err != nil {
			b.Fatal(err)
		}
	}
}
