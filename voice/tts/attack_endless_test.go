package tts_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/tts"
	"github.com/glyphoxa/glyphoxa/voice/tts/ttstest"
)

// TestAttackEndlessSpeech: a speech service that answers a sentence with
// audio that never ends fails the sentence with ErrTooLong once the audio
// passes what its text can take (tts.MaxSpeech), having handed over no more
// than that; it is neither cut silently at the answer's byte limit and
// taken as the sentence (23 minutes of it) nor waited out.
func TestAttackEndlessSpeech(t *testing.T) {
	fake := ttstest.New()
	defer fake.Close()
	fake.SetFailure(ttstest.Endless)
	const text = "The gate of Ironhold opens at dawn."
	for name, synth := range map[string]tts.Streamer{
		// A long timeout: the bound, not the clock, must end the answer.
		"openai":     &tts.OpenAI{BaseURL: fake.URL + "/v1", Timeout: 10 * time.Minute},
		"elevenlabs": &tts.ElevenLabs{BaseURL: fake.URL, Timeout: 10 * time.Minute},
	} {
		t.Run(name, func(t *testing.T) {
			var samples, rate int
			err := synth.SynthesizeStream(context.Background(), text, tts.Voice{Name: "v1"}, func(r int, s []int16) error {
				samples += len(s)
				rate = r
				return nil
			})
			got := time.Duration(samples) * time.Second / time.Duration(max(rate, 1))
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Provider != name || !errors.Is(err, tts.ErrTooLong) {
				t.Fatalf("%v of speech for %d characters, error %v; want a %s provider error saying it is too long", got, len(text), err, name)
			}
			t.Log(err)
			if limit := tts.MaxSpeech(text); got > limit {
				t.Errorf("%v of speech handed over, more than the %v the text can take", got, limit)
			}
		})
	}
}
