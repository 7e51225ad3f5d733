package reconnect

import (
	"math"
	"time"
)

// Defaults of a Config.
const (
	DefaultInitial     = time.Second
	DefaultMax         = 30 * time.Second
	DefaultMultiplier  = 2.0
	DefaultJitter      = 0.2
	DefaultMaxAttempts = 10
)

// Backoff computes reconnect delays: Initial for the first attempt,
// multiplied by Multiplier for each further one, capped at Max, varied by
// ±Jitter (a fraction of the delay, at most 1; negative for none) and never
// above Max. Zero fields take the defaults.
type Backoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier float64
	Jitter     float64
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultMax
	}
	if b.Max < b.Initial {
		b.Max = b.Initial
	}
	if b.Multiplier < 1 {
		b.Multiplier = DefaultMultiplier
	}
	switch {
	case b.Jitter == 0:
		b.Jitter = DefaultJitter
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter > 1:
		b.Jitter = 1
	}
	return b
}

// Delay is the wait before attempt n (counted from 1); r is a uniform random
// number in [0, 1) that picks the jitter (0.5 means none).
func (b Backoff) Delay(n int, r float64) time.Duration {
	b = b.withDefaults()
	if n < 1 {
		n = 1
	}
	d := float64(b.Initial) * math.Pow(b.Multiplier, float64(n-1))
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	d *= 1 + b.Jitter*(2*r-1)
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d)
}
