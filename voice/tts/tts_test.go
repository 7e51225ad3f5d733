package tts_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/tts"
	"github.com/glyphoxa/glyphoxa/voice/tts/ttstest"
)

func TestEspeak(t *testing.T) {
	audiotest.Need(t, "espeak-ng")
	ctx := context.Background()
	short, err := tts.Espeak{}.Synthesize(ctx, "Welcome to Ironhold.", tts.Voice{})
	if err != nil {
		t.Fatal(err)
	}
	long, err := tts.Espeak{}.Synthesize(ctx, "Welcome to Ironhold, traveller. The Tower of Whispers lies beyond the northern gate.", tts.Voice{Name: "en-us+m3", Pitch: 30})
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]audio.PCM{"short": short, "long": long} {
		if p.Rate != 22050 {
			t.Errorf("%s: rate %d, want espeak-ng's 22050", name, p.Rate)
		}
		if lvl := p.RMS(); lvl < -35 {
			t.Errorf("%s: %.1f dBFS, not audible", name, lvl)
		}
	}
	if short.Duration() < 0.8 || long.Duration() < 3*short.Duration() {
		t.Errorf("durations %.2fs and %.2fs do not fit the texts", short.Duration(), long.Duration())
	}
	// Text that looks like an option is spoken, not parsed.
	if _, err := (tts.Espeak{}).Synthesize(ctx, "--help", tts.Voice{}); err != nil {
		t.Errorf("--help: %v", err)
	}
	if _, err := (tts.Espeak{}).Synthesize(ctx, "  ", tts.Voice{}); !errors.Is(err, tts.ErrNoText) {
		t.Errorf("blank text: %v, want ErrNoText", err)
	}
	_, err = tts.Espeak{Path: "/nonexistent/espeak-ng"}.Synthesize(ctx, "hello", tts.Voice{})
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Errorf("missing program: %v, want a provider.Error", err)
	} else {
		t.Log(err)
	}
}

func TestHTTPProviders(t *testing.T) {
	fake := ttstest.New()
	defer fake.Close()
	const text = "The gate of Ironhold opens at dawn."
	tests := []struct {
		name  string
		synth tts.Synthesizer
		voice tts.Voice
		check func(t *testing.T, r ttstest.Request)
	}{
		{"openai", &tts.OpenAI{APIKey: "sk", BaseURL: fake.URL + "/v1"}, tts.Voice{Name: "onyx", Speed: 1.1}, func(t *testing.T, r ttstest.Request) {
			if r.Path != "/v1/audio/speech" || r.Body["input"] != text || r.Body["voice"] != "onyx" || r.Body["response_format"] != "pcm" || r.Body["speed"] != 1.1 {
				t.Errorf("request %+v", r)
			}
			if r.Header.Get("Authorization") != "Bearer sk" {
				t.Errorf("Authorization %q", r.Header.Get("Authorization"))
			}
		}},
		{"elevenlabs", &tts.ElevenLabs{APIKey: "xi", BaseURL: fake.URL}, tts.Voice{Name: "voice123"}, func(t *testing.T, r ttstest.Request) {
			if r.Path != "/v1/text-to-speech/voice123/stream" || r.Query != "output_format=pcm_24000" || r.Body["text"] != text {
				t.Errorf("request %+v", r)
			}
			if r.Header.Get("Xi-Api-Key") != "xi" {
				t.Errorf("xi-api-key %q", r.Header.Get("Xi-Api-Key"))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := len(fake.Requests())
			p, err := tc.synth.Synthesize(context.Background(), text, tc.voice)
			if err != nil {
				t.Fatal(err)
			}
			want := time.Duration(len(text)) * ttstest.PerChar
			if p.Rate != ttstest.Rate || time.Duration(p.Duration()*float64(time.Second)) != want {
				t.Errorf("got %.3fs at %d Hz, want %v at %d", p.Duration(), p.Rate, want, ttstest.Rate)
			}
			reqs := fake.Requests()
			if len(reqs) != n+1 {
				t.Fatalf("%d requests", len(reqs)-n)
			}
			tc.check(t, reqs[n])

			for _, f := range []struct {
				name string
				f    ttstest.Failure
			}{{"5xx", ttstest.Status500}, {"json instead of audio", ttstest.Malformed}, {"timeout", ttstest.Hang}} {
				fake.SetFailure(f.f)
				// A short timeout only for the fake that hangs: with it on
				// every request, a loaded machine timed out the 5xx answer
				// (which must say HTTP 500) and the request after recovery.
				timeout := time.Duration(0) // the provider's default
				if f.f == ttstest.Hang {
					timeout = 200 * time.Millisecond
				}
				setTimeout(tc.synth, timeout)
				_, err := tc.synth.Synthesize(context.Background(), text, tc.voice)
				// The request after recovery has the provider's default
				// again (a 200 ms bound left over from the hang failed it
				// at load 35).
				setTimeout(tc.synth, 0)
				var pe *provider.Error
				if !errors.As(err, &pe) || pe.Provider != tc.name {
					t.Errorf("%s: error %v, want a %s provider.Error", f.name, err, tc.name)
				} else {
					t.Logf("%s: %v", f.name, err)
				}
				if f.f == ttstest.Status500 && !strings.Contains(err.Error(), "HTTP 500") {
					t.Errorf("5xx error does not say so: %v", err)
				}
				fake.SetFailure(ttstest.OK)
			}
			if _, err := tc.synth.Synthesize(context.Background(), text, tc.voice); err != nil {
				t.Errorf("after recovery: %v", err)
			}
		})
	}
	if _, err := (&tts.ElevenLabs{BaseURL: fake.URL}).Synthesize(context.Background(), text, tts.Voice{}); err == nil {
		t.Error("ElevenLabs without a voice id was accepted")
	}
}

// setTimeout sets an HTTP provider's per-sentence timeout (0: its default).
func setTimeout(synth tts.Synthesizer, d time.Duration) {
	switch s := synth.(type) {
	case *tts.OpenAI:
		s.Timeout = d
	case *tts.ElevenLabs:
		s.Timeout = d
	}
}
