package playback_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/tts"
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

// sentenceSynth returns the same sentence of audio every time.
type sentenceSynth struct{ pcm audio.PCM }

func (s sentenceSynth) Synthesize(context.Context, string, tts.Voice) (audio.PCM, error) {
	return s.pcm, nil
}

// firstFrame is a Writer that notes when the first frame came and stops
// the player.
type firstFrame struct {
	p     *playback.Player
	start time.Time
	took  time.Duration
}

func (f *firstFrame) WriteOpus([]byte) error {
	if f.took == 0 {
		f.took = time.Since(f.start)
		f.p.Interrupt()
	}
	return nil
}

// BenchmarkFirstFrame measures a sentence's way from synthesised audio
// (1.44 s at 24 kHz, as the HTTP providers send it) to its first Opus
// frame: what the player adds to a turn before the NPC is heard.
func BenchmarkFirstFrame(b *testing.B) {
	pcm := audio.PCM{Rate: 24000, Samples: make([]int16, 24000*144/100)}
	for i := range pcm.Samples {
		pcm.Samples[i] = int16(8000 * math.Sin(2*math.Pi*240*float64(i)/24000))
	}
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		w := &firstFrame{}
		p, err := playback.New(w)
		if err != nil {
			b.Fatal(err)
		}
		w.p = p
		sentences := make(chan string, 1)
		sentences <- "Bah, the shipment again."
		close(sentences)
		w.start = time.Now()
		if _, err := p.Play(context.Background(), sentences, sentenceSynth{pcm}, tts.Voice{}); err != nil {
			b.Fatal(err)
		}
		total += w.took
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-to-first-frame")
}
