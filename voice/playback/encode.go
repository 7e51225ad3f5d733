package playback

import (
	"fmt"
	"time"

	"layeh.com/gopus"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Frame timing of Discord voice.
const (
	// FrameDuration is the length of one Opus frame.
	FrameDuration = 20 * time.Millisecond
	// SampleRate is the rate frames are encoded at.
	SampleRate = 48000
	// FrameSamples is one frame's samples per channel.
	FrameSamples = SampleRate / 50
	// SilenceFrames is how many silence frames end a stretch of speech.
	SilenceFrames = 5
	// DefaultBitrate is the Opus bitrate (64 kb/s, Discord's default).
	DefaultBitrate = 64000
)

// SilenceFrame is the Opus frame of silence.
var SilenceFrame = audio.SilenceFrame

// Encoder turns mono PCM at any rate into 20 ms stereo Opus frames at
// 48 kHz. It is not safe for concurrent use.
type Encoder struct {
	enc    *gopus.Encoder
	stereo []int16
}

// NewEncoder returns an encoder at bitrate bits per second.
func NewEncoder(bitrate int) (*Encoder, error) {
	if err := checkBitrate(bitrate); err != nil {
		return nil, err
	}
	enc, err := gopus.NewEncoder(SampleRate, 2, gopus.Audio)
	if err != nil {
		return nil, fmt.Errorf("opus encoder: %w", err)
	}
	enc.SetBitrate(bitrate)
	return &Encoder{enc: enc, stereo: make([]int16, 2*FrameSamples)}, nil
}

func checkBitrate(bitrate int) error {
	if bitrate < 6000 || bitrate > 510000 {
		return fmt.Errorf("opus bitrate %d is outside 6000..510000", bitrate)
	}
	return nil
}

// Frames encodes p; the last frame is padded with silence.
func (e *Encoder) Frames(p audio.PCM) ([][]byte, error) {
	if p.Rate <= 0 {
		return nil, fmt.Errorf("encode audio: sample rate %d", p.Rate)
	}
	pcm := audio.Resample(p, SampleRate).Samples
	var out [][]byte
	for i := 0; i < len(pcm); i += FrameSamples {
		f, err := e.Frame(pcm[i:min(i+FrameSamples, len(pcm))])
		if err != nil {
			return nil, fmt.Errorf("opus encode frame %d: %w", len(out), err)
		}
		out = append(out, f)
	}
	return out, nil
}

// Frame encodes up to one frame (FrameSamples) of 48 kHz mono audio,
// padding it with silence.
func (e *Encoder) Frame(pcm []int16) ([]byte, error) {
	if len(pcm) > FrameSamples {
		return nil, fmt.Errorf("opus encode: %d samples is more than a frame", len(pcm))
	}
	clear(e.stereo)
	for k, v := range pcm {
		e.stereo[2*k], e.stereo[2*k+1] = v, v
	}
	return e.enc.Encode(e.stereo, FrameSamples, 1275)
}
