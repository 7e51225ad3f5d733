package audio_test

import (
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// FuzzLane feeds arbitrary packets (payload, sequence and timestamp steps)
// to a lane: it must never panic, and errors must be ErrBadPacket.
func FuzzLane(f *testing.F) {
	f.Add([]byte{0xF8, 0xFF, 0xFE}, uint8(1), uint16(960))
	f.Add([]byte{0x78, 0x01, 0x02, 0x03}, uint8(3), uint16(1920))
	f.Add([]byte{0xFF}, uint8(0), uint16(0))
	f.Add([]byte{0x0B<<3 | 3, 0x3F}, uint8(200), uint16(65000))
	f.Fuzz(func(t *testing.T, payload []byte, seqStep uint8, tsStep uint16) {
		r, err := audio.NewRouter(audio.Config{OnUtterance: func(audio.Utterance) {}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(0, 0)
		seq, ts := uint16(100), uint32(5000)
		for i := range 8 {
			p := audio.Packet{UserID: "u", SSRC: 1, Sequence: seq, Timestamp: ts, Opus: payload, Received: now}
			if i%3 == 2 {
				p.Opus = audio.SilenceFrame
			}
			r.Push(p)
			r.Tick(now)
			seq += uint16(seqStep)
			ts += uint32(tsStep)
			now = now.Add(20 * time.Millisecond)
		}
		r.Tick(now.Add(time.Minute))
		r.Close()
	})
}

// FuzzDecodeWAV: arbitrary bytes never panic the WAV reader.
func FuzzDecodeWAV(f *testing.F) {
	f.Add(audio.EncodeWAV(audio.PCM{Rate: 16000, Samples: []int16{1, -1, 300}}))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := audio.DecodeWAV(b)
		if err == nil && p.Rate == 0 {
			t.Error("decoded audio without a rate")
		}
	})
}
