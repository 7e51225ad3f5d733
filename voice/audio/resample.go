package audio

import (
	"fmt"
	"math"
)

// Resampler converts a stream of mono 16-bit PCM from one sample rate to
// another, a chunk at a time, with a polyphase FIR low-pass filter
// (a Kaiser-windowed sinc). It is the streaming counterpart of [Resample],
// made for audio that arrives in small pieces, such as Discord's 20 ms
// frames at 48 kHz going to a realtime voice model at 24 kHz and its 24 kHz
// replies coming back: the filter's history carries over from one chunk to
// the next, so chunk boundaries leave no clicks and cutting a stream into
// chunks of any size gives the same samples as processing it whole.
//
// # Filter
//
// The ratio to/from is reduced to L/M. Conceptually the input is upsampled
// by L (zeros between samples), low-pass filtered at the rate from·L, and
// every M-th sample kept; the polyphase form computes only the kept
// samples. The filter passes 0..0.84 of the lower rate's Nyquist frequency
// (0..10 kHz between 48 and 24 kHz) and attenuates by at least 80 dB from
// the lower Nyquist frequency up, so what would alias (when decimating) or
// image (when interpolating) is suppressed, unlike naive decimation which
// folds everything above 12 kHz back into the speech band.
//
// # Delay
//
// The filter is linear-phase: output is delayed by [Resampler.Delay]
// (about 1.3 ms for 48↔24 kHz). [Resampler.Flush] pushes out the tail.
//
// A Resampler is not safe for concurrent use; use one per stream.
type Resampler struct {
	from, to int
	l, m     int
	// phases[p][i] is the filter tap h[p+i·L], i.e. the taps that meet
	// real (non-zero) input samples when the output falls on phase p.
	phases [][]float64
	taps   int // taps per phase
	// buf holds the input samples still needed: the last taps-1 samples
	// of history first, then samples not yet used.
	buf []float64
	// t is the position of the next output sample, in the upsampled
	// domain, counted from buf[0]·L.
	t int
}

// Filter design constants: see the package doc of [Resampler].
const (
	resamplePassband = 0.84 // passband edge, fraction of the lower Nyquist
	resampleStopband = 1.0  // stopband edge, fraction of the lower Nyquist
	resampleAtten    = 80.0 // stopband attenuation in dB
)

// NewResampler returns a resampler from one rate (Hz) to another. Rates
// must be positive and at most 384 kHz, and their reduced ratio must have
// at most 1000 phases (every ratio between the usual audio rates does).
func NewResampler(from, to int) (*Resampler, error) {
	if from <= 0 || to <= 0 || from > 384000 || to > 384000 {
		return nil, fmt.Errorf("%w: resample %d Hz to %d Hz: rates must be within 1..384000", errConfig, from, to)
	}
	g := gcd(from, to)
	l, m := to/g, from/g
	if l > 1000 {
		return nil, fmt.Errorf("%w: resample %d Hz to %d Hz: ratio %d/%d needs too many filter phases", errConfig, from, to, l, m)
	}
	r := &Resampler{from: from, to: to, l: l, m: m}
	r.design()
	r.Reset()
	return r, nil
}

// design computes the Kaiser-windowed sinc filter and splits it in phases.
func (r *Resampler) design() {
	if r.l == 1 && r.m == 1 {
		r.taps = 1
		r.phases = [][]float64{{1}}
		return
	}
	fsUp := float64(r.from) * float64(r.l)
	nyq := float64(min(r.from, r.to)) / 2
	pass, stop := resamplePassband*nyq, resampleStopband*nyq
	cutoff := (pass + stop) / 2
	// Kaiser's estimates (Oppenheim & Schafer, 7.6): the order for an
	// attenuation A over a transition width Δω, and the window's β.
	dw := 2 * math.Pi * (stop - pass) / fsUp
	order := int(math.Ceil((resampleAtten - 8) / (2.285 * dw)))
	taps := (order + 1 + r.l - 1) / r.l // per phase, rounded up
	n := taps * r.l
	beta := 0.1102 * (resampleAtten - 8.7)
	h := make([]float64, n)
	fc := cutoff / fsUp // normalised cutoff, cycles per sample
	mid := float64(n-1) / 2
	i0b := besselI0(beta)
	for k := range h {
		x := float64(k) - mid
		s := 2 * fc
		if x != 0 {
			s = math.Sin(2*math.Pi*fc*x) / (math.Pi * x)
		}
		ratio := 2*float64(k)/float64(n-1) - 1
		w := besselI0(beta*math.Sqrt(max(0, 1-ratio*ratio))) / i0b
		// Gain L makes up for the zeros inserted by upsampling.
		h[k] = s * w * float64(r.l)
	}
	r.taps = taps
	r.phases = make([][]float64, r.l)
	for p := range r.phases {
		ph := make([]float64, taps)
		for i := range ph {
			ph[i] = h[p+i*r.l]
		}
		r.phases[p] = ph
	}
}

// besselI0 is the zeroth-order modified Bessel function of the first kind,
// by its power series (converges fast for the β used here).
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	q := x * x / 4
	for k := 1; k < 64; k++ {
		term *= q / float64(k*k)
		sum += term
		if term < sum*1e-17 {
			break
		}
	}
	return sum
}

// Reset forgets the stream's history, as if the resampler were new.
func (r *Resampler) Reset() {
	r.buf = make([]float64, r.taps-1, r.taps-1+4096)
	r.t = (r.taps - 1) * r.l
}

// Rates returns the input and output rates.
func (r *Resampler) Rates() (from, to int) { return r.from, r.to }

// Delay is the filter's group delay, in seconds of audio.
func (r *Resampler) Delay() float64 {
	n := r.taps * r.l
	return float64(n-1) / 2 / (float64(r.from) * float64(r.l))
}

// OutputLen is an upper bound on how many samples Process returns for n
// more input samples.
func (r *Resampler) OutputLen(n int) int {
	return (n*r.l)/r.m + 2
}

// Process resamples src, appending the output to dst and returning the
// extended slice. The output lags the input by [Resampler.Delay]: the last
// few output samples of a stream come out of the next call or of
// [Resampler.Flush].
func (r *Resampler) Process(dst, src []int16) []int16 {
	for _, v := range src {
		r.buf = append(r.buf, float64(v))
	}
	dst = r.run(dst)
	r.compact()
	return dst
}

// Flush pushes the filter's tail out (the input held back by the delay,
// followed by silence) and resets the resampler for a new stream.
func (r *Resampler) Flush(dst []int16) []int16 {
	tail := (r.taps + 1) / 2
	for range tail {
		r.buf = append(r.buf, 0)
	}
	dst = r.run(dst)
	r.Reset()
	return dst
}

// run computes every output sample whose input is buffered.
func (r *Resampler) run(dst []int16) []int16 {
	for {
		j := r.t / r.l // newest input sample the output needs
		if j >= len(r.buf) {
			return dst
		}
		ph := r.phases[r.t%r.l]
		// y = Σ h[p+i·L]·x[j-i]
		x := r.buf[j-r.taps+1 : j+1]
		var acc float64
		last := len(x) - 1
		for i, c := range ph {
			acc += c * x[last-i]
		}
		dst = append(dst, clip16(acc))
		r.t += r.m
	}
}

// compact drops the input no future output needs.
func (r *Resampler) compact() {
	drop := r.t/r.l - (r.taps - 1)
	if drop <= 0 {
		return
	}
	drop = min(drop, len(r.buf))
	n := copy(r.buf, r.buf[drop:])
	r.buf = r.buf[:n]
	r.t -= drop * r.l
}
