package audio_test

import (
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// BenchmarkLane measures the cost of one active speaker's lane (reordering,
// Opus decoding to 16 kHz, voice activity detection and endpointing) on
// continuous speech. The %core metric is the share of one CPU core the
// lane needs in real time (the target is at most 1).
func BenchmarkLane(b *testing.B) {
	a := audiotest.Speak(b, "Grimjaw, tell me about the Tower of Whispers in Ironhold, and who guards its gate at night.", 48000)
	sig, _ := audiotest.Compose(48000, []time.Duration{0}, []audio.PCM{a}, 0)
	s := audiotest.Encode(b, sig, "111", 1, t0)
	audioDur := time.Duration(len(s.Packets)) * 20 * time.Millisecond
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		r, err := audio.NewRouter(audio.Config{OnUtterance: func(audio.Utterance) {}})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range s.Packets {
			if err := r.Push(p); err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
	}
	elapsed := time.Since(start)
	perAudioSec := elapsed.Seconds() / float64(b.N) / audioDur.Seconds()
	b.ReportMetric(perAudioSec*100, "%core")
	b.ReportMetric(1/perAudioSec, "x-realtime")
}

// BenchmarkResample converts one second of 24 kHz speech-synthesis output
// to the 48 kHz of playback.
func BenchmarkResample(b *testing.B) {
	in := tone(24000, 440, 1)
	b.ReportAllocs()
	for b.Loop() {
		audio.Resample(in, 48000)
	}
}
