package audio

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// tone returns n samples of a sine at freq Hz, amplitude amp (0..1 of full
// scale), sampled at rate.
func tone(rate int, freq, amp float64, n int) []int16 {
	out := make([]int16, n)
	for i := range out {
		out[i] = int16(math.Round(amp * 32767 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate))))
	}
	return out
}

// fitSine fits a·sin + b·cos at freq (least squares over x) and returns the
// fitted amplitude and the power of the residual, both as fractions of
// full scale.
func fitSine(x []int16, rate int, freq float64) (amp, residual float64) {
	var ss, cc, sc, xs, xc float64
	for i, v := range x {
		w := 2 * math.Pi * freq * float64(i) / float64(rate)
		s, c := math.Sin(w), math.Cos(w)
		f := float64(v) / 32768
		ss += s * s
		cc += c * c
		sc += s * c
		xs += f * s
		xc += f * c
	}
	det := ss*cc - sc*sc
	a := (xs*cc - xc*sc) / det
	b := (xc*ss - xs*sc) / det
	var res float64
	for i, v := range x {
		w := 2 * math.Pi * freq * float64(i) / float64(rate)
		e := float64(v)/32768 - a*math.Sin(w) - b*math.Cos(w)
		res += e * e
	}
	return math.Hypot(a, b), res / float64(len(x))
}

// steady drops the filter's start-up transient and the end of the output.
func steady(x []int16) []int16 { return x[len(x)/8 : len(x)-len(x)/8] }

func mustResampler(t testing.TB, from, to int) *Resampler {
	t.Helper()
	r, err := NewResampler(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestResamplerSweep runs tones across the speech band through each
// direction and checks the output is the same tone: gain within 0.1 dB and
// signal-to-noise-and-distortion (everything but the tone) of at least
// 75 dB; int16 quantisation alone limits a half-scale tone to about 92 dB.
func TestResamplerSweep(t *testing.T) {
	for _, tc := range []struct{ from, to int }{{48000, 24000}, {24000, 48000}, {22050, 24000}, {16000, 48000}} {
		for _, f := range []float64{100, 300, 1000, 2500, 4000, 6000} {
			if f > 0.84*float64(min(tc.from, tc.to))/2 {
				continue
			}
			t.Run(fmt.Sprintf("%d-%d/%gHz", tc.from, tc.to, f), func(t *testing.T) {
				t.Parallel()
				r := mustResampler(t, tc.from, tc.to)
				in := tone(tc.from, f, 0.5, tc.from/2)
				out := steady(r.Process(nil, in))
				amp, res := fitSine(out, tc.to, f)
				gain := 20 * math.Log10(amp/0.5)
				snr := 10 * math.Log10(amp*amp/2/res)
				t.Logf("gain %.4f dB, SINAD %.1f dB", gain, snr)
				if math.Abs(gain) > 0.1 {
					t.Errorf("gain %.3f dB, want within ±0.1 dB", gain)
				}
				if snr < 75 {
					t.Errorf("SINAD %.1f dB, want ≥ 75 dB", snr)
				}
			})
		}
	}
	// The top of the passband: 10 kHz between 48 and 24 kHz.
	for _, tc := range []struct{ from, to int }{{48000, 24000}, {24000, 48000}} {
		t.Run(fmt.Sprintf("%d-%d/10kHz", tc.from, tc.to), func(t *testing.T) {
			r := mustResampler(t, tc.from, tc.to)
			out := steady(r.Process(nil, tone(tc.from, 10000, 0.5, tc.from/2)))
			amp, res := fitSine(out, tc.to, 10000)
			gain := 20 * math.Log10(amp/0.5)
			snr := 10 * math.Log10(amp*amp/2/res)
			if math.Abs(gain) > 0.1 || snr < 75 {
				t.Errorf("10 kHz: gain %.3f dB, SINAD %.1f dB; want ±0.1 dB, ≥ 75 dB", gain, snr)
			}
		})
	}
}

// TestResamplerAliasing feeds 48 kHz tones above the 12 kHz Nyquist
// frequency of 24 kHz: naive decimation folds each to 24k−f at full level;
// the filter must leave at most -80 dB of it (measured at the alias
// frequency, and as the whole output's level).
func TestResamplerAliasing(t *testing.T) {
	for _, f := range []float64{12200, 13000, 15000, 18000, 21000, 23500} {
		t.Run(fmt.Sprintf("%gHz", f), func(t *testing.T) {
			t.Parallel()
			r := mustResampler(t, 48000, 24000)
			in := tone(48000, f, 0.9, 24000)
			out := steady(r.Process(nil, in))
			alias := 24000 - f
			amp, _ := fitSine(out, 24000, alias)
			level := 20 * math.Log10(amp/0.9+1e-12)
			rms := PCM{Rate: 24000, Samples: out}.RMS() - (20 * math.Log10(0.9/math.Sqrt2))
			t.Logf("alias at %g Hz: %.1f dB; output level %.1f dB", alias, level, rms)
			if level > -80 || rms > -80 {
				t.Errorf("alias %.1f dB, output level %.1f dB; want ≤ -80 dB", level, rms)
			}
			// The naive decimator this replaces folds it at full level.
			naive := make([]int16, len(in)/2)
			for i := range naive {
				naive[i] = in[2*i]
			}
			if a, _ := fitSine(steady(naive), 24000, alias); 20*math.Log10(a/0.9) < -1 {
				t.Errorf("naive decimation left the alias at %.1f dB; the test tone is wrong", 20*math.Log10(a/0.9))
			}
		})
	}
}

// TestResamplerImaging checks that interpolating 24 kHz to 48 kHz leaves
// no image of a tone f at 24k−f.
func TestResamplerImaging(t *testing.T) {
	for _, f := range []float64{1000, 5000, 9000, 10000} {
		r := mustResampler(t, 24000, 48000)
		out := steady(r.Process(nil, tone(24000, f, 0.9, 12000)))
		amp, _ := fitSine(out, 48000, 24000-f)
		if level := 20 * math.Log10(amp/0.9+1e-12); level > -80 {
			t.Errorf("%g Hz: image at %g Hz is %.1f dB, want ≤ -80 dB", f, 24000-f, level)
		}
	}
}

// TestResamplerChunking checks that a stream cut into chunks of any size,
// down to single samples, comes out sample for sample as processed whole.
func TestResamplerChunking(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	in := make([]int16, 9600)
	for i := range in {
		in[i] = int16(rng.IntN(40000) - 20000)
	}
	for _, tc := range []struct{ from, to int }{{48000, 24000}, {24000, 48000}, {22050, 24000}, {48000, 16000}} {
		whole := mustResampler(t, tc.from, tc.to)
		want := whole.Flush(whole.Process(nil, in))
		r := mustResampler(t, tc.from, tc.to)
		var got []int16
		for i := 0; i < len(in); {
			n := min(len(in)-i, 1+rng.IntN(700))
			got = r.Process(got, in[i:i+n])
			i += n
		}
		got = r.Flush(got)
		if !slices.Equal(got, want) {
			t.Errorf("%d→%d: chunked output differs from whole (%d vs %d samples)", tc.from, tc.to, len(got), len(want))
		}
		wantLen := len(in) * tc.to / tc.from
		if d := len(got) - wantLen; d < -1 || d > 1+int(r.Delay()*float64(tc.to))*2 {
			t.Errorf("%d→%d: %d samples out for %d in, want about %d", tc.from, tc.to, len(got), len(in), wantLen)
		}
	}
}

// TestResamplerDelay checks the documented delay: an impulse comes out
// peaking Delay later.
func TestResamplerDelay(t *testing.T) {
	r := mustResampler(t, 24000, 48000)
	in := make([]int16, 2400)
	in[1000] = 30000
	out := r.Flush(r.Process(nil, in))
	peak := 0
	for i, v := range out {
		if v > out[peak] {
			peak = i
		}
	}
	want := 2000 + r.Delay()*48000
	if math.Abs(float64(peak)-want) > 1 {
		t.Errorf("impulse peak at output %d, want %.1f (delay %.3f ms)", peak, want, r.Delay()*1000)
	}
	if d := r.Delay() * 1000; d > 2 {
		t.Errorf("delay %.2f ms, want under 2 ms for speech", d)
	}
}

func TestResamplerIdentityAndErrors(t *testing.T) {
	r := mustResampler(t, 48000, 48000)
	in := []int16{1, -2, 3, 32767, -32768}
	if got := r.Process(nil, in); !slices.Equal(got, in) {
		t.Errorf("48k→48k changed the samples: %v", got)
	}
	for _, tc := range []struct{ from, to int }{{0, 24000}, {48000, -1}, {500000, 48000}, {48000, 44101}} {
		if _, err := NewResampler(tc.from, tc.to); !errors.Is(err, errConfig) {
			t.Errorf("NewResampler(%d, %d) = %v, want a config error", tc.from, tc.to, err)
		}
	}
}

// TestResamplerClips checks a full-scale square wave, whose filtered
// overshoot exceeds int16, clips instead of wrapping around: away from the
// edges every output sample keeps the plateau's sign and level.
func TestResamplerClips(t *testing.T) {
	r := mustResampler(t, 48000, 24000)
	const half = 40 // samples per plateau at 48 kHz
	in := make([]int16, 4800)
	for i := range in {
		in[i] = math.MaxInt16
		if (i/half)%2 == 1 {
			in[i] = math.MinInt16
		}
	}
	out := r.Process(nil, in)
	delay := r.Delay() * 48000
	checked := 0
	for i, v := range out {
		pos := float64(2*i) - delay // input position of output i
		if pos < half {
			continue
		}
		edge := math.Mod(pos, half)
		if edge < 2 || edge > half-2 {
			continue
		}
		want := in[int(pos)]
		if (v > 0) != (want > 0) || math.Abs(float64(v)) < 25000 {
			t.Fatalf("output %d = %d inside a plateau of %d: wrapped around instead of clipping", i, v, want)
		}
		checked++
	}
	if checked < 1000 {
		t.Fatalf("checked only %d samples", checked)
	}
}

func BenchmarkResampler(b *testing.B) {
	for _, tc := range []struct{ from, to int }{{48000, 24000}, {24000, 48000}} {
		b.Run(fmt.Sprintf("%d-%d/20ms", tc.from, tc.to), func(b *testing.B) {
			r := mustResampler(b, tc.from, tc.to)
			in := tone(tc.from, 440, 0.5, tc.from/50)
			dst := make([]int16, 0, r.OutputLen(len(in)))
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(in)))
			for b.Loop() {
				dst = r.Process(dst[:0], in)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/20e6*100, "%realtime")
		})
	}
}
