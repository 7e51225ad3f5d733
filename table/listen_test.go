package table_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

// streamCalls counts the fake Deepgram's streamed and batch requests.
func streamCalls(cs []stttest.Call) (streamed, batch int) {
	for _, c := range cs {
		if c.Stream {
			streamed++
		} else {
			batch++
		}
	}
	return streamed, batch
}

// TestStreamingAddressesEarly: with streaming speech-to-text the utterance
// goes to Deepgram's live endpoint (or an OpenAI Realtime API
// transcription session) while it is spoken, one stream per utterance; its
// interim results name Grimjaw, so his context is started
// from the partial transcript (two NPCs are in the scene, so nothing but
// the words could have chosen him), and the final transcript is what is
// recorded and answered. Without streaming the same line is transcribed
// after it ended and nothing is addressed early.
func TestStreamingAddressesEarly(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	for _, tc := range []struct {
		name      string
		streaming bool
		realtime  bool // OpenAI's Realtime API instead of Deepgram
	}{
		{"deepgram streaming", true, false},
		{"deepgram whole", false, false},
		{"openai realtime streaming", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			oa := stttest.NewOpenAI(func(stttest.Call) string { return heard + " realtime" })
			defer oa.Close()
			r := newRigWith(t, 0, nil, func(c *table.Config) {
				c.Providers.STTStreaming = tc.streaming
				if tc.realtime {
					c.Providers.STT, c.Providers.STTProvider = &stt.OpenAIRealtime{BaseURL: oa.URL()}, table.ProviderOpenAI
				}
				controls := live.NewControls()
				controls.SetScene(live.Scene{Present: []string{"grimjaw", "elara"}})
				c.Controls = controls
			})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard only
			defer cancel()
			l, err := r.turn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if l.Addressee != "grimjaw" || !strings.Contains(l.Corrected, "Grimjaw") {
				t.Fatalf("line %q answered by %q, want Grimjaw's", l.Corrected, l.Addressee)
			}
			// The final transcript (with the fake's marker, which no
			// interim result reached) is the line.
			t.Logf("heard %q; addressed %v, transcribed %v after the utterance closed", l.Heard, l.Timing.Addressed, l.Timing.STT)
			if got, want := len(strings.Fields(l.Heard)), len(strings.Fields(heard))+1; got != want {
				t.Fatalf("heard %q, want the final transcript", l.Heard)
			}
			calls := r.dg.Calls()
			if tc.realtime {
				calls = oa.Calls()
				if n := len(r.dg.Calls()); n != 0 {
					t.Fatalf("%d Deepgram requests with OpenAI configured", n)
				}
			}
			streamed, batch := streamCalls(calls)
			if streamed != 1 || batch != 0 {
				t.Fatalf("%d streamed and %d batch requests, want 1 stream", streamed, batch)
			}
			if got := l.Timing.Addressed != 0; got != tc.streaming {
				t.Fatalf("addressed early: %v (at %v), want %v", got, l.Timing.Addressed, tc.streaming)
			}
		})
	}
}

// TestStreamFailureFallsBack: when the stream cannot be opened, or drops
// without a final result, the utterance is transcribed whole by the batch
// endpoint: it is recorded and answered all the same.
func TestStreamFailureFallsBack(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	for _, tc := range []struct {
		name    string
		failure stttest.Failure
	}{
		{"refused", stttest.RefuseStream},
		{"dropped", stttest.DropStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRigWith(t, 0, nil, func(c *table.Config) { c.Providers.STTStreaming = true })
			r.dg.SetFailure(tc.failure)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard only
			defer cancel()
			l, err := r.turn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if l.Dropped != "" || !strings.Contains(l.Corrected, "Grimjaw") || l.Addressee != "grimjaw" {
				t.Fatalf("line %q (dropped %q) answered by %q, want it recorded and answered", l.Corrected, l.Dropped, l.Addressee)
			}
			if _, batch := streamCalls(r.dg.Calls()); batch != 1 {
				t.Fatalf("%d batch requests, want 1 (the fallback)", batch)
			}
		})
	}
}
