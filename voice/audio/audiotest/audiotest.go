// Package audiotest makes real test audio: speech from espeak-ng, Opus
// packets as a Discord client sends them (with silence frames and pauses),
// packet loss, reordering, noise and keyboard clicks.
package audiotest

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"layeh.com/gopus"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Need fails the test under CI=true, and skips it otherwise, when a program
// it needs is not installed.
func Need(tb testing.TB, prog string) {
	tb.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%s is not installed (scripts/testdeps.sh installs it): %v", prog, err)
		}
		tb.Skipf("%s is not installed: %v", prog, err)
	}
}

// Speak synthesises text with espeak-ng and returns it at rate.
func Speak(tb testing.TB, text string, rate int) audio.PCM {
	tb.Helper()
	Need(tb, "espeak-ng")
	out := filepath.Join(tb.TempDir(), "speech.wav")
	if b, err := exec.Command("espeak-ng", "-v", "en-us", "-s", "160", "-w", out, text).CombinedOutput(); err != nil {
		tb.Fatalf("espeak-ng %q: %v: %s", text, err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := audio.DecodeWAV(b)
	if err != nil {
		tb.Fatalf("espeak-ng output: %v", err)
	}
	return audio.Resample(p, rate)
}

// Trim cuts leading and trailing silence (20 ms frames below -50 dBFS).
func Trim(p audio.PCM) audio.PCM {
	f := p.Rate / 50
	first, last := -1, -1
	for i := 0; i+f <= len(p.Samples); i += f {
		if (audio.PCM{Rate: p.Rate, Samples: p.Samples[i : i+f]}).RMS() > -50 {
			if first < 0 {
				first = i
			}
			last = i + f
		}
	}
	if first < 0 {
		return audio.PCM{Rate: p.Rate}
	}
	return audio.PCM{Rate: p.Rate, Samples: p.Samples[first:last]}
}

// Span is a stretch of speech in a composed signal.
type Span struct{ Start, End time.Duration }

// Compose lays clips (trimmed) after the given silences: silence[0], clip
// 0, silence[1], clip 1, ..., then a trailing silence of tail. It returns
// the signal and where each clip lies.
func Compose(rate int, silences []time.Duration, clips []audio.PCM, tail time.Duration) (audio.PCM, []Span) {
	var out []int16
	var spans []Span
	at := func() time.Duration { return time.Duration(len(out)) * time.Second / time.Duration(rate) }
	for i, c := range clips {
		out = append(out, make([]int16, int(silences[i].Seconds()*float64(rate)))...)
		c = Trim(c)
		s := at()
		out = append(out, c.Samples...)
		spans = append(spans, Span{s, at()})
	}
	out = append(out, make([]int16, int(tail.Seconds()*float64(rate)))...)
	return audio.PCM{Rate: rate, Samples: out}, spans
}

// AddNoise adds white noise at level dBFS (RMS).
func AddNoise(p audio.PCM, level float64, rng *rand.Rand) {
	amp := 32768 * math.Pow(10, level/20)
	for i, v := range p.Samples {
		p.Samples[i] = clip(float64(v) + rng.NormFloat64()*amp)
	}
}

// AddClicks adds keyboard-like clicks (a few milliseconds of loud decaying
// broadband noise) every 80 to 250 ms between from and to, and returns
// how many.
func AddClicks(p audio.PCM, from, to time.Duration, rng *rand.Rand) int {
	n := 0
	at := from
	for at < to {
		i := int(at.Seconds() * float64(p.Rate))
		length := p.Rate * 6 / 1000
		for k := 0; k < length && i+k < len(p.Samples); k++ {
			env := math.Exp(-float64(k) / float64(length) * 5)
			p.Samples[i+k] = clip(float64(p.Samples[i+k]) + rng.NormFloat64()*12000*env)
		}
		n++
		at += time.Duration(80+rng.IntN(170)) * time.Millisecond
	}
	return n
}

func clip(f float64) int16 {
	return int16(math.Max(-32768, math.Min(32767, math.Round(f))))
}

// Stream is the packets a Discord client sends for a signal.
type Stream struct {
	Packets []audio.Packet
	// Start is the wall time of the signal's first sample.
	Start time.Time
}

// Encode encodes p (any rate) to 20 ms stereo Opus packets at 48 kHz the
// way a Discord client sends them: frames below -60 dBFS are not sent,
// except five silence frames after each stretch of sound; sequence numbers
// count sent packets, timestamps count time. Packet i's Received is the
// end of its audio after start.
func Encode(tb testing.TB, p audio.PCM, user string, ssrc uint32, start time.Time) Stream {
	tb.Helper()
	enc, err := gopus.NewEncoder(48000, 2, gopus.Voip)
	if err != nil {
		tb.Fatal(err)
	}
	enc.SetBitrate(64000)
	pcm := audio.Resample(p, 48000).Samples
	var s Stream
	s.Start = start
	seq := uint16(ssrc*7919 + 65000) // near the wrap, to exercise it
	ts := ssrc*104729 + 0xFFFF0000
	quiet := 100
	st := make([]int16, 1920)
	for i := 0; i+960 <= len(pcm); i += 960 {
		frame := pcm[i : i+960]
		var pkt []byte
		if (audio.PCM{Rate: 48000, Samples: frame}).RMS() < -60 {
			quiet++
			if quiet <= 5 {
				pkt = audio.SilenceFrame
			}
		} else {
			quiet = 0
			for k, v := range frame {
				st[2*k], st[2*k+1] = v, v
			}
			if pkt, err = enc.Encode(st, 960, 4000); err != nil {
				tb.Fatal(err)
			}
		}
		if pkt != nil {
			s.Packets = append(s.Packets, audio.Packet{
				UserID: user, SSRC: ssrc, Sequence: seq, Timestamp: ts,
				Opus:     append([]byte(nil), pkt...),
				Received: start.Add(time.Duration(i+960) * time.Second / 48000),
			})
			seq++
		}
		ts += 960
	}
	return s
}

// Lose drops each packet with probability rate, never two in a row when
// burst is false. It returns the packets kept and how many were dropped.
func Lose(ps []audio.Packet, rate float64, rng *rand.Rand) ([]audio.Packet, int) {
	var out []audio.Packet
	dropped := 0
	prevDropped := false
	for _, p := range ps {
		if !prevDropped && rng.Float64() < rate {
			dropped++
			prevDropped = true
			continue
		}
		prevDropped = false
		out = append(out, p)
	}
	return out, dropped
}

// Jitter delays each packet's arrival by up to max, so they arrive out of
// order, and returns them in arrival order.
func Jitter(ps []audio.Packet, maxDelay time.Duration, rng *rand.Rand) []audio.Packet {
	out := make([]audio.Packet, len(ps))
	copy(out, ps)
	for i := range out {
		out[i].Received = out[i].Received.Add(time.Duration(rng.Int64N(int64(maxDelay))))
	}
	sortByArrival(out)
	return out
}

func sortByArrival(ps []audio.Packet) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].Received.Before(ps[j-1].Received); j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// Merge interleaves packet lists in arrival order.
func Merge(lists ...[]audio.Packet) []audio.Packet {
	var out []audio.Packet
	for _, l := range lists {
		out = append(out, l...)
	}
	sortByArrival(out)
	return out
}

// Pusher is what Deliver feeds: an audio.Router or anything like it.
type Pusher interface {
	Push(audio.Packet) error
	Tick(time.Time)
}

// Deliver plays packets (in arrival order) into r in simulated real time:
// every 20 ms from the first arrival until until, it pushes what has
// arrived and ticks. It returns the errors Push reported.
func Deliver(r Pusher, ps []audio.Packet, from, until time.Time) []error {
	var errs []error
	i := 0
	for now := from; !now.After(until); now = now.Add(20 * time.Millisecond) {
		for ; i < len(ps) && !ps[i].Received.After(now); i++ {
			if err := r.Push(ps[i]); err != nil {
				errs = append(errs, err)
			}
		}
		r.Tick(now)
	}
	return errs
}
