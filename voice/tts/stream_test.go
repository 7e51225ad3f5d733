package tts_test

import (
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// hangGuard bounds a wait that would otherwise hang: not a budget.
const hangGuard = 2 * time.Minute

// pcmBytes is n samples of a ramp as little-endian 16-bit PCM.
func pcmBytes(n int) ([]byte, []int16) {
	s := make([]int16, n)
	b := make([]byte, 2*n)
	for i := range s {
		s[i] = int16(i*37 - 20000)
		binary.LittleEndian.PutUint16(b[2*i:], uint16(s[i]))
	}
	return b, s
}

// The HTTP providers hand speech over as it arrives: the first samples
// reach the sink while the provider is still holding back the rest, and a
// sample split between two reads is put back together.
func TestHTTPProvidersStream(t *testing.T) {
	body, samples := pcmBytes(12000)
	const first = 4001 // ends inside sample 2000
	for _, prov := range []string{"openai", "elevenlabs"} {
		t.Run(prov, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "audio/pcm")
				w.Write(body[:first])
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
				w.Write(body[first:])
			}))
			defer srv.Close()
			var synth tts.Streamer = &tts.OpenAI{BaseURL: srv.URL + "/v1"}
			if prov == "elevenlabs" {
				synth = &tts.ElevenLabs{BaseURL: srv.URL}
			}
			var got []int16
			early := make(chan int, 1)
			guard := time.AfterFunc(hangGuard, func() { close(release) })
			defer guard.Stop()
			err := synth.SynthesizeStream(context.Background(), "The gate is shut.", tts.Voice{Name: "v1"}, func(rate int, s []int16) error {
				if rate != 24000 {
					t.Errorf("rate %d, want 24000", rate)
				}
				got = append(got, s...)
				if len(got) >= first/2 && guard.Stop() {
					early <- len(got)
					close(release)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case n := <-early:
				if n != first/2 {
					t.Errorf("%d samples before the rest was sent, want the %d whole ones", n, first/2)
				}
			default:
				t.Fatal("no sample reached the sink before the provider sent the rest")
			}
			if !slices.Equal(got, samples) {
				t.Errorf("streamed samples differ from those sent (%d of %d)", len(got), len(samples))
			}
		})
	}
}

// Answers that are not whole 16-bit PCM fail with an error that says so,
// after the whole samples went to the sink; a WAV answer is handed over
// whole at its own rate.
func TestHTTPStreamAnswers(t *testing.T) {
	odd, _ := pcmBytes(100)
	wav := audio.EncodeWAV(audio.PCM{Rate: 16000, Samples: make([]int16, 1600)})
	tests := []struct {
		name    string
		body    []byte
		samples int
		calls   int
		rate    int
		err     string
	}{
		{"odd length", odd[:199], 99, 1, 24000, "odd length 199"},
		{"empty", nil, 0, 0, 0, "empty answer"},
		{"wav", wav, 1600, 1, 16000, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "audio/pcm")
				w.Write(tc.body)
			}))
			defer srv.Close()
			var n, calls, rate int
			err := (&tts.OpenAI{BaseURL: srv.URL}).SynthesizeStream(context.Background(), "Hold.", tts.Voice{}, func(r int, s []int16) error {
				n += len(s)
				calls++
				rate = r
				return nil
			})
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one saying %q", err, tc.err)
			}
			if n != tc.samples || calls != tc.calls || rate != tc.rate {
				t.Errorf("%d samples in %d calls at %d Hz, want %d in %d at %d", n, calls, rate, tc.samples, tc.calls, tc.rate)
			}
		})
	}
}
