package table_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

// TestAttackBrokenStreamLosesNoLine: a streaming speech-to-text peer that
// answers the player's line with a message of megabytes, floods it with
// results that never end, or takes the audio and never sends the final
// result, costs the line nothing: the batch endpoint transcribes it, and it
// is recorded and answered with its own words.
func TestAttackBrokenStreamLosesNoLine(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	for _, tc := range []struct {
		name      string
		failure   stttest.Failure
		streaming bool // else the stream opened ahead gets the whole utterance
	}{
		{"streaming/oversized", stttest.Oversized, true},
		{"streaming/flood", stttest.Flood, true},
		{"streaming/hung final", stttest.HangFinal, true},
		{"whole/oversized", stttest.Oversized, false},
		{"whole/flood", stttest.Flood, false},
		{"whole/hung final", stttest.HangFinal, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRigWith(t, 0, nil, func(c *table.Config) {
				c.Providers.STTStreaming = tc.streaming
				// The hung stream is given up on after a second; the
				// batch endpoint then has the rest of a bound no loaded
				// machine reaches.
				c.Settings.StreamFinalTimeout = time.Second
				c.Settings.TranscribeTimeout = 2 * time.Minute
			})
			r.dg.SetFailure(tc.failure)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard only
			defer cancel()
			l, err := r.turn(ctx)
			if err != nil {
				t.Fatalf("%v (line %q, dropped %q)", err, l.Corrected, l.Dropped)
			}
			if l.Dropped != "" || !strings.Contains(l.Corrected, "Grimjaw") || strings.Contains(l.Heard, "again") || len(l.Heard) > 200 {
				t.Fatalf("line %q (heard %.80q…, dropped %q), want the player's words recorded", l.Corrected, l.Heard, l.Dropped)
			}
			if _, batch := streamCalls(r.dg.Calls()); batch != 1 {
				t.Fatalf("%d batch requests, want 1 (the fallback)", batch)
			}
		})
	}
}
