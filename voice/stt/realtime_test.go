package stt_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

// TestRealtimeStream: a Realtime API transcription session gets the
// campaign's names in its prompt and the utterance as 24 kHz PCM; deltas
// of the words so far come back while the audio is sent, each an interim
// result growing the last, and the committed item's transcript is the
// final one.
func TestRealtimeStream(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	fake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer fake.Close()
	rt := &stt.OpenAIRealtime{BaseURL: fake.URL(), APIKey: "sk-test", Model: "gpt-realtime-whisper"}
	ctx := context.Background()
	s, err := rt.Stream(ctx, stt.Hints{Keyterms: campaign, Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var interims []string
	var finals int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range s.Results() {
			switch r.Kind {
			case stt.Interim:
				interims = append(interims, r.Transcript.Text)
			case stt.Final:
				finals++
			}
		}
	}()
	for i := 0; i < len(u.Audio.Samples); i += 320 {
		if err := s.Send(u.Audio.Samples[i:min(i+320, len(u.Audio.Samples))]); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := s.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	wg.Wait()
	if tr.Text != said || len(tr.Words) != len(strings.Fields(said)) {
		t.Fatalf("final %q with %d words, want %q", tr.Text, len(tr.Words), said)
	}
	if len(interims) < 2 || finals != 1 {
		t.Fatalf("interims %q and %d finals, want growing interims and one final", interims, finals)
	}
	for i, p := range interims {
		if !strings.HasPrefix(said, p) || i > 0 && len(p) <= len(interims[i-1]) {
			t.Fatalf("interim %d %q does not grow the words so far (%q)", i, p, interims)
		}
	}
	calls := fake.Calls()
	if len(calls) != 1 || !calls[0].Stream {
		t.Fatalf("calls %+v, want one stream", calls)
	}
	c := calls[0]
	if c.Header.Get("Authorization") != "Bearer sk-test" || c.Form["model"][0] != "gpt-realtime-whisper" ||
		c.Form["language"][0] != "en" || !strings.Contains(c.Form["prompt"][0], "Tower of Whispers") {
		t.Errorf("session %v, header %v", c.Form, c.Header)
	}
	// The server got the utterance at 24 kHz: as long, as loud.
	if c.Audio.Rate != 24000 || (c.Audio.Duration()-u.Audio.Duration()) > 0.05 || c.Audio.Duration() < u.Audio.Duration() {
		t.Errorf("server got %.3fs at %d Hz for %.3fs of speech", c.Audio.Duration(), c.Audio.Rate, u.Audio.Duration())
	}
	if in, out := u.Audio.RMS(), c.Audio.RMS(); out < in-1 || out > in+1 {
		t.Errorf("level %.1f dBFS sent, %.1f received", in, out)
	}
}

// TestRealtimeStreamFailures: a refused session, a dropped one, a
// malformed event and a session with no audio each end the stream with a
// clear result; the batch endpoint still transcribes the utterance.
func TestRealtimeStreamFailures(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	fake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer fake.Close()
	rt := &stt.OpenAIRealtime{BaseURL: fake.URL()}
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		failure stttest.Failure
		audio   bool
		open    bool // the stream opens
		empty   bool // an empty transcript, no error
	}{
		{"refused", stttest.RefuseStream, true, false, false},
		{"dropped", stttest.DropStream, true, true, false},
		{"malformed", stttest.Malformed, true, true, false},
		{"no audio", stttest.OK, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.SetFailure(tc.failure)
			defer fake.SetFailure(stttest.OK)
			s, err := rt.OpenStream(ctx, stt.Hints{})
			if !tc.open {
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Status != 500 {
					t.Fatalf("open: %v, want a provider error with status 500", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tc.audio {
				if err := s.Send(u.Audio.Samples); err != nil {
					t.Fatal(err)
				}
			}
			tr, err := s.Finish(ctx)
			if tc.empty {
				if err != nil || tr.Text != "" {
					t.Fatalf("%q, %v; want no transcript and no error", tr.Text, err)
				}
				return
			}
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Provider != "openai-realtime" {
				t.Fatalf("%q, %v; want an openai-realtime provider error", tr.Text, err)
			}
			t.Log(err)
			fake.SetFailure(stttest.OK)
			if tr, err := rt.TranscribeBatch(ctx, u.Audio, stt.Hints{}); err != nil || tr.Text != said {
				t.Fatalf("batch after a failed stream: %q, %v", tr.Text, err)
			}
		})
	}
}
