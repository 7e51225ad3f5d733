package scene

import (
	"bytes"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/playback"
)

// TestVoicedFramesArePrefixes checks what voicedFrames relies on: a line's
// voiced sound encoded on its own gives the first frames of the longest
// one, byte for byte.
func TestVoicedFramesArePrefixes(t *testing.T) {
	p := &player{}
	for _, words := range []int{2, 7} {
		d := time.Duration(words) * 300 * time.Millisecond
		enc, err := playback.NewEncoder(48000)
		if err != nil {
			t.Fatal(err)
		}
		want, err := enc.Frames(voiced(d))
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.voicedFrames(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d frames, want %d", d, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%s: frame %d differs from the sound encoded alone", d, i)
			}
		}
	}
}
