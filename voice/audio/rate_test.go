package audio_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// speechOnce holds speech and its Opus packets, made once for the tests of
// the rate limit: synthesising and encoding 40 s of talk costs seconds of
// CPU, and every test gets the same either way.
var speechOnce struct {
	sync.Once
	sig     audio.PCM
	packets []audio.Packet // audiotest.Encode(sig, "111", 9, t0)
}

// speechStream is speech and its packets (the caller's own copy; the Opus
// payloads are shared and read only).
func speechStream(t *testing.T) (audio.PCM, []audio.Packet) {
	t.Helper()
	speechOnce.Do(func() {
		sig := speech(t)
		speechOnce.packets = audiotest.Encode(t, sig, "111", 9, t0).Packets
		speechOnce.sig = sig
	})
	if len(speechOnce.packets) == 0 {
		t.Fatal("no speech: making it failed (see the first test that asked)")
	}
	return speechOnce.sig, slices.Clone(speechOnce.packets)
}

// speech is about 40 s of talking with short pauses: the four lines twice.
// It was 80 s (four times); every assertion on it is a rate (audio out
// against wall time, drops against the excess), which 40 s, forty times
// the burst, shows as well, and each pass of the router over it (Opus
// decoding, voice activity, resampling, under the race detector) cost
// seconds of CPU.
func speech(t *testing.T) audio.PCM {
	t.Helper()
	var lines []audio.PCM
	for _, line := range []string{
		"Grimjaw, tell me about the Tower of Whispers and the road that leads to it.",
		"We ride for Ironhold at dawn, and the Smiths' Guild will want its hammer back.",
		"Elara says the vault under the lake was sealed by her grandmother long ago.",
		"If the hooded stranger bought the key, then someone in the guild sold it.",
	} {
		lines = append(lines, audiotest.Speak(t, line, 48000))
	}
	var clips []audio.PCM
	var gaps []time.Duration
	for range 2 {
		for _, l := range lines {
			clips = append(clips, l)
			gaps = append(gaps, 300*time.Millisecond)
		}
	}
	sig, _ := audiotest.Compose(48000, gaps, clips, time.Second)
	return sig
}

// heard sends a stream into a router, with packets arriving speed times
// faster than real time, and returns the audio its utterances carried
// (what speech-to-text would be sent), the wall time the stream took, and
// the router's drop counters.
func heard(t *testing.T, speed float64, jitter time.Duration) (audioSent, wall time.Duration, stats audio.Stats, onDrop int) {
	t.Helper()
	var rec recorder
	cfg := rec.config(audio.Config{})
	cfg.OnDrop = func(string) { onDrop++ }
	r := mustRouter(t, cfg)
	_, ps := speechStream(t)
	for i := range ps {
		ps[i].Received = t0.Add(time.Duration(float64(ps[i].Received.Sub(t0)) / speed))
	}
	if jitter > 0 {
		ps = audiotest.Jitter(ps, jitter, rand.New(rand.NewPCG(1, 2)))
	}
	wall = ps[len(ps)-1].Received.Sub(t0)
	audiotest.Deliver(r, ps, t0, t0.Add(wall+2*time.Second))
	stats, _ = r.Stats("111")
	r.Close()
	for _, u := range rec.byUser("111") {
		audioSent += time.Duration(u.Audio.Duration() * float64(time.Second))
	}
	return audioSent, wall, stats, onDrop
}

// TestRateLimit: a speaker sending ten times real time has packets dropped
// (counted) and gives speech-to-text at most about 1.5 times real time of
// audio; one speaking in real time, with network jitter, loses nothing.
func TestRateLimit(t *testing.T) {
	sig, _ := speechStream(t)
	length := time.Duration(sig.Duration() * float64(time.Second))

	sent, wall, st, onDrop := heard(t, 1, 60*time.Millisecond)
	t.Logf("real time: %v of signal, %v of audio to speech-to-text over %v, %d packets dropped", length, sent, wall, st.RateDropped)
	if st.RateDropped != 0 || onDrop != 0 {
		t.Errorf("real-time speech lost %d packets to the rate limit (%d reported)", st.RateDropped, onDrop)
	}
	if sent < length/2 {
		t.Fatalf("real-time speech gave only %v of audio for %v of signal", sent, length)
	}

	sent, wall, st, onDrop = heard(t, 10, 0)
	t.Logf("10x real time: %v of signal, %v of audio to speech-to-text over %v, %d packets dropped", length, sent, wall, st.RateDropped)
	// The bound: the rate over the wall time, the burst, and for each
	// utterance at most its pre- and post-roll.
	limit := time.Duration(audio.DefaultMaxRate*float64(wall)) + audio.DefaultRateBurst + 400*time.Millisecond
	if sent > limit {
		t.Errorf("10x real time gave %v of audio over %v, more than %v", sent, wall, limit)
	}
	if st.RateDropped == 0 || onDrop != st.RateDropped {
		t.Errorf("drops counted %d, reported %d", st.RateDropped, onDrop)
	}
	if want := (length - limit) / (20 * time.Millisecond); st.RateDropped < int(want)*9/10 {
		t.Errorf("%d packets dropped, want about %d", st.RateDropped, want)
	}
}

// TestRateLimitCountsTimestampGaps: a sender cannot make speech-to-text
// audio out of gaps in its timestamps. One packet every 20 ms, in groups
// of four whose timestamps jump 500 ms (shorter than the endpoint, so the
// lane fills the gap with concealment and silence and the utterance stays
// open: seven times real time of audio) are charged for the gaps, so at
// most about 1.5 times real time of audio comes out.
func TestRateLimitCountsTimestampGaps(t *testing.T) {
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{}))
	_, ps := speechStream(t)
	for i := range ps {
		// Groups of four 20 ms frames (enough to open an utterance), 500 ms apart.
		ps[i].Timestamp = ps[0].Timestamp + uint32(i/4)*(4+25)*960 + uint32(i%4)*960
		ps[i].Received = t0.Add(time.Duration(i) * 20 * time.Millisecond)
	}
	wall := ps[len(ps)-1].Received.Sub(t0)
	audiotest.Deliver(r, ps, t0, t0.Add(wall+2*time.Second))
	st, _ := r.Stats("111")
	r.Close()
	var sent time.Duration
	for _, u := range rec.byUser("111") {
		sent += time.Duration(u.Audio.Duration() * float64(time.Second))
	}
	t.Logf("%d packets in groups 500 ms apart over %v: %v of audio, %d dropped", len(ps), wall, sent, st.RateDropped)
	if sent == 0 {
		t.Fatal("no utterance at all: the test does not exercise the gap filling")
	}
	if limit := time.Duration(audio.DefaultMaxRate*float64(wall)) + audio.DefaultRateBurst + 400*time.Millisecond; sent > limit {
		t.Errorf("%v of audio over %v, more than %v", sent, wall, limit)
	}
	if st.RateDropped == 0 {
		t.Error("no packet dropped")
	}
}
