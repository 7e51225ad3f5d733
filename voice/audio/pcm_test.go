package audio_test

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

func tone(rate int, hz float64, secs float64) audio.PCM {
	n := int(float64(rate) * secs)
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(10000 * math.Sin(2*math.Pi*hz*float64(i)/float64(rate)))
	}
	return audio.PCM{Rate: rate, Samples: s}
}

// goertzel is the level of frequency hz in p, relative to full scale.
func goertzel(p audio.PCM, hz float64) float64 {
	w := 2 * math.Pi * hz / float64(p.Rate)
	var re, im float64
	for i, v := range p.Samples {
		re += float64(v) * math.Cos(w*float64(i))
		im += float64(v) * math.Sin(w*float64(i))
	}
	return 2 * math.Hypot(re, im) / float64(len(p.Samples)) / 32768
}

func TestResample(t *testing.T) {
	tests := []struct {
		from, to int
		hz       float64
		kept     bool // false: above the new Nyquist, must be filtered out
	}{
		{22050, 48000, 440, true},
		{24000, 48000, 3000, true},
		{16000, 48000, 1000, true},
		{48000, 16000, 1000, true},
		{48000, 16000, 12000, false},
		{22050, 16000, 9000, false},
		{44100, 16000, 300, true},
	}
	for _, tc := range tests {
		in := tone(tc.from, tc.hz, 0.5)
		out := audio.Resample(in, tc.to)
		if out.Rate != tc.to {
			t.Fatalf("rate %d", out.Rate)
		}
		if d := math.Abs(out.Duration() - in.Duration()); d > 0.001 {
			t.Errorf("%d→%d: duration %.4f, want %.4f", tc.from, tc.to, out.Duration(), in.Duration())
		}
		before := goertzel(in, tc.hz)
		if tc.kept {
			after := goertzel(out, tc.hz)
			if math.Abs(after-before)/before > 0.05 {
				t.Errorf("%d→%d: %v Hz level %.3f, was %.3f", tc.from, tc.to, tc.hz, after, before)
			}
		} else if lvl := out.RMS(); lvl > -30 {
			t.Errorf("%d→%d: %v Hz above Nyquist left at %.1f dBFS", tc.from, tc.to, tc.hz, lvl)
		}
	}
}

func TestWAVRoundTrip(t *testing.T) {
	in := tone(16000, 440, 0.1)
	out, err := audio.DecodeWAV(audio.EncodeWAV(in))
	if err != nil {
		t.Fatal(err)
	}
	if out.Rate != in.Rate || len(out.Samples) != len(in.Samples) {
		t.Fatalf("got %d samples at %d Hz", len(out.Samples), out.Rate)
	}
	for i := range in.Samples {
		if in.Samples[i] != out.Samples[i] {
			t.Fatalf("sample %d differs", i)
		}
	}
	bad := [][]byte{nil, []byte("RIFF0000WAVE"), bytes.Repeat([]byte{1}, 60)}
	for _, b := range bad {
		if _, err := audio.DecodeWAV(b); err == nil {
			t.Errorf("%q decoded", b)
		}
	}
}

func TestPacketSamples(t *testing.T) {
	tests := []struct {
		pkt  []byte
		want int
		bad  bool
	}{
		{audio.SilenceFrame, 960, false},
		{[]byte{0x78, 1, 2}, 960, false},         // hybrid FB 20 ms (config 15)
		{[]byte{0x08 << 3, 1}, 480, false},       // SILK WB 10 ms (config 8)
		{[]byte{0x0B<<3 | 1, 1, 2}, 5760, false}, // SILK 60 ms, two frames
		{[]byte{0xFF}, 0, true},                  // code 3 without count
		{[]byte{0xFB, 0x07}, 0, true},            // 7 × 20 ms = 140 ms
		{nil, 0, true},
	}
	for _, tc := range tests {
		got, err := audio.PacketSamples(tc.pkt)
		if tc.bad {
			if !errors.Is(err, audio.ErrBadPacket) {
				t.Errorf("%x: error %v, want ErrBadPacket", tc.pkt, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%x: %d, %v; want %d", tc.pkt, got, err, tc.want)
		}
	}
}

// TestRangeResamplerMatchesResample: resampling a stretch of output at a time
// (a player resampling the frame it sends) gives the samples Resample
// gives for the whole, edges included, with the weights tabled or computed
// on the fly.
func TestRangeResamplerMatchesResample(t *testing.T) {
	cases := []struct {
		name     string
		from, to int
		stretch  int
	}{
		{"24k to 48k by frame", 24000, 48000, 960},
		{"16k to 48k, odd stretches", 16000, 48000, 337},
		{"48k to 16k", 48000, 16000, 320},
		{"44.1k to 48k", 44100, 48000, 960},
		{"8001 Hz to 48k (weights on the fly)", 8001, 48000, 500},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := make([]int16, c.from/3+7)
			for i := range in {
				in[i] = int16(9000*math.Sin(2*math.Pi*440*float64(i)/float64(c.from)) + 3000*math.Sin(float64(i)*0.37))
			}
			want := audio.Resample(audio.PCM{Rate: c.from, Samples: in}, c.to).Samples
			r := audio.NewRangeResampler(c.from, c.to)
			if n := r.Len(len(in)); n != len(want) {
				t.Fatalf("Len(%d) = %d, Resample made %d samples", len(in), n, len(want))
			}
			got := make([]int16, len(want))
			for i := 0; i < len(got); i += c.stretch {
				r.Into(got[i:min(i+c.stretch, len(got))], in, i)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("sample %d of %d: %d by stretches, %d whole", i, len(want), got[i], want[i])
				}
			}
		})
	}
}
