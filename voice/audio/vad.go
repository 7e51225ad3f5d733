package audio

import "math"

// Frame sizes of the 16 kHz analysis.
const (
	// Rate is the sample rate lanes decode to and utterances carry.
	Rate = 16000
	// FrameSamples is one 20 ms analysis frame at [Rate].
	FrameSamples = Rate / 50
	frameDur     = 20 // ms
)

// VAD classifies 20 ms frames of 16 kHz audio as voiced or not. The zero
// value is not ready; use [NewVAD]. A VAD is not safe for concurrent use.
type VAD struct {
	// Thresholds, set from the defaults by NewVAD.
	minLevel  float64 // dBFS below which nothing is speech
	snr       float64 // dB above the noise floor a voiced frame must reach
	voicing   float64 // normalised autocorrelation a voiced frame must reach
	floor     float64 // tracked noise floor, dBFS
	frames    int
	prev      [FrameSamples]float64 // previous frame, for the 30 ms window
	win       [winSamples]float64
	lastLevel float64
	lastVoice float64
}

const (
	winSamples = FrameSamples * 3 / 2 // 30 ms analysis window
	minLag     = Rate / 400           // 400 Hz
	maxLag     = Rate / 70            // 70 Hz
)

// NewVAD returns a detector with its default thresholds: voiced frames are
// at least 9 dB above the noise floor, above -55 dBFS, and periodic with a
// normalised autocorrelation of at least 0.5.
func NewVAD() *VAD {
	return &VAD{minLevel: -55, snr: 9, voicing: 0.5, floor: -70}
}

// Level is the level of the last frame, in dBFS.
func (v *VAD) Level() float64 { return v.lastLevel }

// Voicing is the periodicity of the last frame, 0 to 1.
func (v *VAD) Voicing() float64 { return v.lastVoice }

// Floor is the tracked noise floor, in dBFS.
func (v *VAD) Floor() float64 { return v.floor }

// Frame analyses the next 20 ms frame (exactly [FrameSamples] samples) and
// reports whether it is voiced speech, and whether it is loud enough above
// the noise floor to be part of speech (unvoiced consonants).
func (v *VAD) Frame(f []int16) (voiced, active bool) {
	// Remove DC and build the window: last half of the previous frame
	// followed by this frame.
	var mean float64
	for _, s := range f {
		mean += float64(s)
	}
	mean /= float64(len(f))
	copy(v.win[:], v.prev[FrameSamples/2:])
	cur := v.win[FrameSamples/2:]
	var energy float64
	for i, s := range f {
		x := float64(s) - mean
		cur[i] = x
		energy += x * x
	}
	copy(v.prev[:], cur)
	level := -100.0
	if ms := energy / float64(len(f)) / (32768 * 32768); ms > 1e-10 {
		level = 10 * math.Log10(ms)
	}
	v.lastLevel = level
	v.frames++

	loud := level > v.minLevel && level > v.floor+v.snr
	voicing := 0.0
	if loud {
		voicing = periodicity(&v.win)
	}
	v.lastVoice = voicing
	voiced = loud && voicing >= v.voicing
	active = level > v.minLevel && level > v.floor+v.snr+3

	// Track the noise floor on frames that are not voiced: fall fast, rise
	// slowly (at most 7.5 dB a second), faster during the first half
	// second, so steady noise and hum become the floor.
	if !voiced {
		switch {
		case level < v.floor:
			v.floor += 0.3 * (level - v.floor)
		case v.frames < 25:
			v.floor += 0.2 * (level - v.floor)
		default:
			v.floor += math.Min(0.15, 0.05*(level-v.floor))
		}
	}
	if v.floor < -90 {
		v.floor = -90
	}
	return voiced, active
}

// periodicity returns the highest normalised autocorrelation of w over lags
// of speaking pitch (70 to 400 Hz).
//
// It works on a copy of the window on the stack, indexed directly: under
// the race detector every read through w (or a slice of it) is a checked
// call, some 130,000 a voiced frame, which were over half the CPU of a
// test that plays a scene through the lanes; reads of a local array are
// not checked, and the copy itself is checked once, as a whole. The sums
// are the same, in the same order, so the result is too.
func periodicity(w *[winSamples]float64) float64 {
	x := *w
	// sq[i] is the energy of x[:i], so each lag's two energies are
	// differences and only the cross term is a loop.
	var sq [winSamples + 1]float64
	for i := 0; i < winSamples; i++ {
		sq[i+1] = sq[i] + x[i]*x[i]
	}
	const n = winSamples
	best := 0.0
	for lag := minLag; lag <= maxLag; lag++ {
		m := n - lag
		var xy0, xy1 float64
		i := 0
		for ; i+1 < m; i += 2 {
			xy0 += x[i] * x[i+lag]
			xy1 += x[i+1] * x[i+1+lag]
		}
		if i < m {
			xy0 += x[i] * x[i+lag]
		}
		xy := xy0 + xy1
		xx, yy := sq[m], sq[n]-sq[lag]
		if xy <= 0 || xx <= 0 || yy <= 0 {
			continue
		}
		if r := xy / math.Sqrt(xx*yy); r > best {
			best = r
		}
	}
	return best
}
