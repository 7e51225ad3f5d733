package audio

import "time"

// Defaults of the per-speaker rate limit (see [Config.MaxRate]).
const (
	// DefaultMaxRate is how many times real time a speaker may send for
	// long: 1.5. A client sends one 20 ms frame every 20 ms; jitter and a
	// transport catching up bunch them, but never for long.
	DefaultMaxRate = 1.5
	// DefaultRateBurst is how much audio a speaker may send at once
	// beyond the rate (1 s): a second of packets held up by the network
	// and delivered together is not cut.
	DefaultRateBurst = time.Second
)

// bucket is a token bucket of audio time, in 48 kHz samples: it fills at
// rate samples per second of wall time up to burst, and each packet takes
// its duration out of it. A speaker sending ten times real time (each
// packet costs speech-to-text work) finds it empty and loses the packets
// beyond rate; one speaking in real time never does.
type bucket struct {
	rate   float64 // samples per second
	burst  float64 // samples
	tokens float64
	last   time.Time
	primed bool
}

func newBucket(maxRate float64, burst time.Duration) bucket {
	b := float64(burst) * 48000 / float64(time.Second)
	return bucket{rate: maxRate * 48000, burst: b, tokens: b}
}

// take reports whether a packet of n 48 kHz samples received at now may
// pass, taking its duration from the bucket if so. A packet without an
// arrival time passes (there is no clock to measure a rate by).
func (b *bucket) take(now time.Time, n int) bool {
	if now.IsZero() {
		return true
	}
	if b.primed && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	if !b.primed || now.After(b.last) {
		b.last, b.primed = now, true
	}
	if b.tokens < float64(n) {
		return false
	}
	b.tokens -= float64(n)
	return true
}
