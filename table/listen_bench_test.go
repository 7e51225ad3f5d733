package table_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// sttFinalize is the streaming fake's final delay (stttest SetFinalize).
var sttFinalize = flag.Duration("stt-finalize", 50*time.Millisecond,
	"fake speech-to-text delay of a stream's final result after the end of audio sent in real time")

// turnPaced sends the player's line in real time, a 20 ms frame every
// 20 ms, as Discord delivers it, and waits for the table's report.
func (r *rig) turnPaced(ctx context.Context) (table.LineReport, error) {
	start := time.Now()
	for i, p := range r.packets {
		if d := time.Until(start.Add(time.Duration(i) * 20 * time.Millisecond)); d > 0 {
			time.Sleep(d)
		}
		r.voice.packets <- audio.Packet{UserID: player, SSRC: 1, Sequence: r.seq, Timestamp: r.ts, Opus: p.Opus}
		r.seq++
		r.ts += 960
	}
	r.ts += 50 * 960
	select {
	case l := <-r.reports:
		if l.Error != "" || l.Reply == "" {
			return l, fmt.Errorf("turn: reply %q, error %s", l.Reply, l.Error)
		}
		return l, nil
	case <-ctx.Done():
		return table.LineReport{}, ctx.Err()
	}
}

// BenchmarkListen measures end of speech → first NPC audio (from the lane
// closing the utterance to the first Opus frame of the answer), the
// player's line sent in real time, with speech-to-text either on whole
// utterances after they end or streamed while the player speaks. The fake
// Deepgram models both honestly: a stream's final result comes
// -stt-finalize after its audio ends plus -stt-delay scaled by the share
// of the audio that arrived faster than real time (all of it when the
// utterance is sent whole after it ended: finalize + delay; only the
// lane's pre-roll when streamed), and interim results give the words
// spoken so far (2.5 a second) every 0.5 s of audio. In the one-NPC scene
// the NPC's context is prepared at the end of speech either way; with two
// NPCs present only the words can say whose, so without streaming it is
// assembled after the transcript.
func BenchmarkListen(b *testing.B) {
	audiotest.Need(b, "espeak-ng")
	scenes := []struct {
		name    string
		present []string
	}{
		{"one-npc", []string{"grimjaw"}},
		{"two-npcs", []string{"grimjaw", "elara"}},
	}
	for _, sc := range scenes {
		for _, streaming := range []bool{false, true} {
			mode := map[bool]string{false: "whole", true: "streaming"}[streaming]
			b.Run(sc.name+"/"+mode, func(b *testing.B) {
				r := newRigWith(b, 0, nil, func(c *table.Config) {
					c.Clock = clock.Real() // as serve (see newBenchRig)
					c.Providers.STTStreaming = streaming
					controls := live.NewControls()
					controls.SetScene(live.Scene{Present: sc.present})
					c.Controls = controls
				})
				r.dg.SetFinalize(*sttFinalize)
				ctx := context.Background()
				var first, sttDone, hot []time.Duration
				early := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					l, err := r.turnPaced(ctx)
					if err != nil {
						b.Fatal(err)
					}
					if l.Addressee != "grimjaw" || !strings.Contains(l.Corrected, "Grimjaw") {
						b.Fatalf("line %q answered by %q", l.Corrected, l.Addressee)
					}
					first = append(first, l.Timing.FirstPacket)
					sttDone = append(sttDone, l.Timing.STT)
					hot = append(hot, l.Timing.ContextReady-l.Timing.Recorded)
					if l.Timing.Addressed < 0 {
						early++
					}
				}
				b.StopTimer()
				b.ReportMetric(ms(percentile(first, 0)), "first-audio-min-ms")
				b.ReportMetric(ms(percentile(first, 50)), "first-audio-p50-ms")
				b.ReportMetric(ms(percentile(first, 100)), "first-audio-max-ms")
				b.ReportMetric(ms(percentile(sttDone, 50)), "stt-p50-ms")
				b.ReportMetric(ms(percentile(hot, 50)), "context-after-line-p50-ms")
				b.ReportMetric(float64(early)/float64(b.N), "addressed-while-speaking")
			})
		}
	}
}
