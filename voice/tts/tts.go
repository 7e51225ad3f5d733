// Package tts synthesises NPC speech behind one interface, [Synthesizer],
// with a [Voice] per NPC.
//
// Providers:
//   - [Local]: the best offline voices installed — [Festival]'s and
//     [Flite]'s, else [Espeak]'s (Debian's espeak-ng), which stays the last
//     fallback; the default.
//   - [Festival], [Flite], [Espeak]: one offline engine each. Festival is
//     kept running between sentences (it takes over a second to start, a
//     sentence then tens of milliseconds); flite and espeak-ng run once a
//     sentence.
//   - [OpenAI]: any OpenAI-compatible /v1/audio/speech endpoint.
//   - [ElevenLabs]: ElevenLabs' HTTP streaming endpoint.
//
// A provider's speech for a sentence is bounded by its text ([MaxSpeech]):
// endless audio from a broken or hostile service fails the sentence with
// [ErrTooLong].
//
// Synthesis works a sentence at a time: the player (package
// voice/playback) starts the first sentence while the model is still
// writing the next, so a provider's latency counts once per turn, not once
// per sentence.
package tts

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Voice is how an NPC sounds.
type Voice struct {
	// Name is the provider's voice: an espeak-ng voice ("en-us+m3"), an
	// OpenAI voice ("onyx"), an ElevenLabs voice id.
	Name string
	// Speed scales the speaking rate; 0 means the provider's default (1).
	Speed float64
	// Pitch is espeak-ng's pitch, 0 to 99; 0 means its default (50).
	Pitch int
}

// Synthesizer turns one sentence into speech. Implementations are safe for
// concurrent use.
type Synthesizer interface {
	Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error)
}

// ErrNoText is returned for empty text.
var ErrNoText = errors.New("nothing to say")

// ErrBadVoice is wrapped when a provider does not have the voice asked for.
var ErrBadVoice = errors.New("no such voice")

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// ErrTooLong is wrapped when a provider's speech for a sentence runs past
// what its text can take (MaxSpeech): a broken or hostile service's
// endless audio ends the sentence with this error.
var ErrTooLong = errors.New("the speech is longer than its text can take")

// MaxSpeech is the longest speech accepted for text: 10 s, plus 1 s a
// character (speech at a normal rate takes about 70 ms a character, at a
// quarter of the speed under 300 ms).
func MaxSpeech(text string) time.Duration {
	return 10*time.Second + time.Duration(utf8.RuneCountInString(text))*time.Second
}
