package playback

import (
	"math"
	"slices"
	"testing"
	"time"
)

// Frames taken from a sentence while it arrives, each as soon as frame
// allows, are the frames of the whole sentence: a frame is held back
// until every input sample its resampling reads has arrived.
func TestChunkFramesWhileArriving(t *testing.T) {
	for _, rate := range []int{48000, 24000, 22050, 16000, 44100} {
		n := rate * 13 / 10
		pcm := make([]int16, n)
		for i := range pcm {
			x := float64(i) / float64(rate)
			pcm[i] = int16(9000 * math.Sin(2*math.Pi*(200+400*x)*x))
		}
		whole := newChunk("whole")
		if err := whole.add(time.Time{}, rate, pcm); err != nil {
			t.Fatal(err)
		}
		whole.finish(nil)
		want := frames(t, whole)

		for _, step := range []int{1, 97, 997, 4096} {
			c := newChunk("arriving")
			var got [][]int16
			i := 0
			take := func() {
				buf := make([]int16, FrameSamples)
				for {
					f, more := c.frame(buf, i*FrameSamples)
					if more || f == nil {
						return
					}
					got = append(got, slices.Clone(f))
					i++
				}
			}
			for at := 0; at < n; at += step {
				if err := c.add(time.Time{}, rate, pcm[at:min(at+step, n)]); err != nil {
					t.Fatal(err)
				}
				take()
			}
			c.finish(nil)
			take()
			if len(got) != len(want) {
				t.Fatalf("%d Hz in stretches of %d: %d frames, want %d", rate, step, len(got), len(want))
			}
			for k := range got {
				if !slices.Equal(got[k], want[k]) {
					t.Fatalf("%d Hz in stretches of %d: frame %d differs from the whole sentence's", rate, step, k)
				}
			}
		}
	}
}

// frames takes every frame of a finished chunk.
func frames(t *testing.T, c *chunk) [][]int16 {
	t.Helper()
	var out [][]int16
	for i := 0; ; i += FrameSamples {
		f, more := c.frame(make([]int16, FrameSamples), i)
		if more {
			t.Fatal("a finished sentence asks for more samples")
		}
		if f == nil {
			return out
		}
		out = append(out, slices.Clone(f))
	}
}
