package audio

import (
	"encoding/binary"
	"fmt"
	"math"
)

// PCM is mono signed 16-bit audio at a sample rate.
type PCM struct {
	Rate    int
	Samples []int16
}

// Duration is how long the audio lasts.
func (p PCM) Duration() float64 {
	if p.Rate == 0 {
		return 0
	}
	return float64(len(p.Samples)) / float64(p.Rate)
}

// RMS is the root-mean-square level of the audio in dBFS (-100 for digital
// silence).
func (p PCM) RMS() float64 { return levelDB(p.Samples) }

func levelDB(s []int16) float64 {
	if len(s) == 0 {
		return -100
	}
	var sum float64
	for _, v := range s {
		f := float64(v)
		sum += f * f
	}
	ms := sum / float64(len(s)) / (32768 * 32768)
	if ms < 1e-10 {
		return -100
	}
	return 10 * math.Log10(ms)
}

// EncodeWAV returns p as a canonical 16-bit mono RIFF WAVE file.
func EncodeWAV(p PCM) []byte {
	n := len(p.Samples) * 2
	b := make([]byte, 44+n)
	copy(b[0:], "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1) // PCM
	binary.LittleEndian.PutUint16(b[22:], 1) // mono
	binary.LittleEndian.PutUint32(b[24:], uint32(p.Rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(p.Rate*2))
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(n))
	for i, v := range p.Samples {
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(v))
	}
	return b
}

// DecodeWAV reads a 16-bit PCM RIFF WAVE file; stereo is mixed down to mono.
// Streams whose data size is unknown (0 or 0xFFFFFFFF, as espeak-ng writes
// to a pipe) are read to the end.
func DecodeWAV(b []byte) (PCM, error) {
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return PCM{}, fmt.Errorf("%w: no RIFF/WAVE header in %d bytes", errBadWAV, len(b))
	}
	var rate, channels, bits int
	off := 12
	for off+8 <= len(b) {
		id := string(b[off : off+4])
		size := int(binary.LittleEndian.Uint32(b[off+4:]))
		body := off + 8
		switch id {
		case "fmt ":
			if size < 16 || body+16 > len(b) {
				return PCM{}, fmt.Errorf("%w: fmt chunk of %d bytes", errBadWAV, size)
			}
			if f := binary.LittleEndian.Uint16(b[body:]); f != 1 && f != 0xFFFE {
				return PCM{}, fmt.Errorf("%w: format %d is not PCM", errBadWAV, f)
			}
			channels = int(binary.LittleEndian.Uint16(b[body+2:]))
			rate = int(binary.LittleEndian.Uint32(b[body+4:]))
			bits = int(binary.LittleEndian.Uint16(b[body+14:]))
		case "data":
			if rate == 0 {
				return PCM{}, fmt.Errorf("%w: data chunk before fmt chunk", errBadWAV)
			}
			if bits != 16 || channels < 1 || channels > 2 {
				return PCM{}, fmt.Errorf("%w: %d-bit %d-channel audio; want 16-bit mono or stereo", errBadWAV, bits, channels)
			}
			end := body + size
			if size == 0 || size == 0xFFFFFFFF || end > len(b) || end < body {
				end = len(b)
			}
			data := b[body:end]
			frames := len(data) / (2 * channels)
			out := make([]int16, frames)
			for i := range frames {
				if channels == 1 {
					out[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
				} else {
					l := int(int16(binary.LittleEndian.Uint16(data[4*i:])))
					r := int(int16(binary.LittleEndian.Uint16(data[4*i+2:])))
					out[i] = int16((l + r) / 2)
				}
			}
			return PCM{Rate: rate, Samples: out}, nil
		}
		off = body + size + size&1
	}
	return PCM{}, fmt.Errorf("%w: no data chunk", errBadWAV)
}

// Resample converts p to rate with windowed-sinc interpolation (a low-pass
// at the lower of the two Nyquist frequencies, so downsampling does not
// alias). The filter weights are computed once per phase of the rate
// ratio.
func Resample(p PCM, rate int) PCM {
	if p.Rate == rate || len(p.Samples) == 0 || p.Rate <= 0 || rate <= 0 {
		return PCM{Rate: rate, Samples: append([]int16(nil), p.Samples...)}
	}
	r := NewRangeResampler(p.Rate, rate)
	out := make([]int16, r.Len(len(p.Samples)))
	r.Into(out, p.Samples, 0)
	return PCM{Rate: rate, Samples: out}
}

// RangeResampler converts audio from one rate to another a stretch of
// output at a time, as [Resample] does (the same samples): a player can
// resample the frame it is about to send instead of a whole sentence
// first. Unlike [Resampler] it reads the whole input, so it has no delay and
// keeps no history. It is not safe for concurrent use.
type RangeResampler struct {
	up, down, k, taps int
	cutoff, width     float64
	table             []float64 // weights by phase; nil with many phases
	w                 []float64
}

// NewRangeResampler returns a resampler from rate from to rate to (both
// positive).
func NewRangeResampler(from, to int) *RangeResampler {
	g := gcd(from, to)
	r := &RangeResampler{up: to / g, down: from / g} // output i sits at input position i*down/up
	ratio := float64(to) / float64(from)
	r.cutoff = math.Min(1, ratio) // relative to the input Nyquist
	const half = 8                // taps each side, in input samples (scaled by 1/cutoff)
	r.width = float64(half) / r.cutoff
	r.k = int(math.Ceil(r.width))
	r.taps = 2*r.k + 2
	// With many phases (awkward ratios) compute weights on the fly.
	if r.up <= 4096 {
		r.table = make([]float64, r.up*r.taps)
		for ph := range r.up {
			weights(r.table[ph*r.taps:(ph+1)*r.taps], float64(ph)/float64(r.up), r.k, r.cutoff, r.width)
		}
	}
	r.w = make([]float64, r.taps)
	return r
}

// Len is how many output samples n input samples make.
func (r *RangeResampler) Len(n int) int { return int(int64(n) * int64(r.up) / int64(r.down)) }

// Need is how many input samples output samples 0 to n-1 read: Into gives
// the same n outputs for any input at least this long (the input may be
// growing while it is resampled).
func (r *RangeResampler) Need(n int) int {
	if n <= 0 {
		return 0
	}
	base := int(int64(n-1) * int64(r.down) / int64(r.up))
	return base - r.k + r.taps
}

// Into writes output samples from to from+len(dst) of in, resampled, into
// dst; from+len(dst) must not exceed r.Len(len(in)).
func (r *RangeResampler) Into(dst, in []int16, from int) {
	up, down, k, taps := r.up, r.down, r.k, r.taps
	for o := range dst {
		i := from + o
		num := int64(i) * int64(down)
		base := int(num / int64(up))
		ph := int(num % int64(up))
		var ws []float64
		if r.table != nil {
			ws = r.table[ph*taps : (ph+1)*taps]
		} else {
			weights(r.w, float64(ph)/float64(up), k, r.cutoff, r.width)
			ws = r.w
		}
		lo := base - k
		if lo >= 0 && lo+taps <= len(in) {
			// Interior: the weights are normalised already.
			src := in[lo : lo+taps]
			var acc float64
			for j, wt := range ws[:len(src)] {
				acc += wt * float64(src[j])
			}
			dst[o] = clip16(acc)
			continue
		}
		// Edges: renormalise over the taps that exist.
		var acc, wsum float64
		for j, wt := range ws {
			idx := lo + j
			if idx < 0 || idx >= len(in) {
				continue
			}
			acc += wt * float64(in[idx])
			wsum += wt
		}
		if wsum != 0 {
			acc /= wsum
		}
		dst[o] = clip16(acc)
	}
}

// weights fills w with the filter taps for an output sample frac input
// samples after the base sample, normalised to unit gain; tap j is for
// input base-k+j.
func weights(w []float64, frac float64, k int, cutoff, width float64) {
	var sum float64
	for j := range w {
		x := float64(j-k) - frac
		w[j] = cutoff * sinc(cutoff*x) * hann(x/width)
		sum += w[j]
	}
	if sum != 0 {
		for j := range w {
			w[j] /= sum
		}
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

func hann(x float64) float64 { // x in [-1, 1]
	if x <= -1 || x >= 1 {
		return 0
	}
	return 0.5 + 0.5*math.Cos(math.Pi*x)
}

func clip16(f float64) int16 {
	switch {
	case f > 32767:
		return 32767
	case f < -32768:
		return -32768
	}
	return int16(math.Round(f))
}
