package audio

import (
	"math"
	"math/rand/v2"
	"testing"
)

// periodicityBySlices is periodicity as it was written before it copied the
// window: each lag's cross term over two slices of w, in the same order.
func periodicityBySlices(w *[winSamples]float64) float64 {
	var sq [winSamples + 1]float64
	for i, x := range w {
		sq[i+1] = sq[i] + x*x
	}
	n := len(w)
	best := 0.0
	for lag := minLag; lag <= maxLag; lag++ {
		a, b := w[:n-lag], w[lag:]
		b = b[:len(a)]
		var xy0, xy1 float64
		i := 0
		for ; i+1 < len(a); i += 2 {
			xy0 += a[i] * b[i]
			xy1 += a[i+1] * b[i+1]
		}
		if i < len(a) {
			xy0 += a[i] * b[i]
		}
		xy := xy0 + xy1
		xx, yy := sq[n-lag], sq[n]-sq[lag]
		if xy <= 0 || xx <= 0 || yy <= 0 {
			continue
		}
		if r := xy / math.Sqrt(xx*yy); r > best {
			best = r
		}
	}
	return best
}

// TestPeriodicityIsExact checks that periodicity gives bit for bit what the
// slice-by-slice autocorrelation gives, on voiced, noisy, silent and
// odd-length-lag windows, so that every VAD decision is unchanged.
func TestPeriodicityIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 13))
	windows := map[string]func(i int) float64{
		"silence": func(int) float64 { return 0 },
		"voice 140 Hz": func(i int) float64 {
			return 8000*math.Sin(2*math.Pi*140*float64(i)/Rate) + 3000*math.Sin(2*math.Pi*280*float64(i)/Rate)
		},
		"voice 71 Hz":  func(i int) float64 { return 12000 * math.Sin(2*math.Pi*71*float64(i)/Rate) },
		"voice 399 Hz": func(i int) float64 { return 5000 * math.Sin(2*math.Pi*399*float64(i)/Rate) },
		"noise":        func(int) float64 { return rng.NormFloat64() * 3000 },
		"noisy voice": func(i int) float64 {
			return 6000*math.Sin(2*math.Pi*180*float64(i)/Rate) + rng.NormFloat64()*2000
		},
		"click": func(i int) float64 {
			if i == winSamples/2 {
				return 30000
			}
			return 0
		},
	}
	for name, gen := range windows {
		for k := range 20 {
			var w [winSamples]float64
			for i := range w {
				w[i] = gen(i + 37*k)
			}
			got, want := periodicity(&w), periodicityBySlices(&w)
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("%s, window %d: periodicity %v, want %v", name, k, got, want)
			}
			if name == "voice 140 Hz" && got < 0.9 {
				t.Errorf("%s: periodicity %v, want a clearly periodic window (≥ 0.9)", name, got)
			}
		}
	}
}
