package playback_test

import (
	"math"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/playback"
)

// BenchmarkEncodeFrame measures encoding one 20 ms frame (48 kHz, mono
// input duplicated to stereo); the %core metric is the share of a core
// continuous playback needs.
func BenchmarkEncodeFrame(b *testing.B) {
	enc, err := playback.NewEncoder(playback.DefaultBitrate)
	if err != nil {
		b.Fatal(err)
	}
	pcm := make([]int16, playback.FrameSamples)
	for i := range pcm {
		pcm[i] = int16(8000 * math.Sin(2*math.Pi*220*float64(i)/48000))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := enc.Frame(pcm); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(playback.FrameDuration.Nanoseconds())*100, "%core")
}
