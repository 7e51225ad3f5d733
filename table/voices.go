package table

import (
	"context"
	"log/slog"
	"sync"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// Voices speaks for the NPCs: each NPC's persona picks a speech synthesis
// provider and a voice (voice.provider, voice.id, voice.speed); the
// configured default serves the others. Sentences are synthesised as they
// arrive and played as paced Opus frames (package playback). It implements
// Speaker.
type Voices struct {
	// Default speaks for NPCs whose persona names no provider, or one that
	// is not configured.
	Default tts.Synthesizer
	// DefaultVoice is the default voice name.
	DefaultVoice string
	// ByProvider are the other configured providers, by name ("openai",
	// "elevenlabs", "espeak").
	ByProvider map[string]tts.Synthesizer
	// Clock paces playback (default the system clock).
	Clock  clock.Clock
	Logger *slog.Logger

	warned sync.Map // provider names already warned about
}

type writerFunc func([]byte) error

func (f writerFunc) WriteOpus(b []byte) error { return f(b) }

// Speak implements Speaker.
func (v *Voices) Speak(ctx context.Context, voice npc.Voice, sentences <-chan string, send func([]byte) error) ([]string, error) {
	log := v.Logger
	if log == nil {
		log = slog.Default()
	}
	// A voice id belongs to its provider: when the persona's provider is
	// not configured, the default provider speaks with its default voice.
	synth, name := v.Default, voice.ID
	if voice.Provider != "" {
		if s, ok := v.ByProvider[voice.Provider]; ok {
			synth = s
		} else {
			name = ""
			if _, seen := v.warned.LoadOrStore(voice.Provider, true); !seen {
				log.Warn("an NPC's voice provider is not configured; the default voice speaks for it", "provider", voice.Provider)
			}
		}
	}
	if name == "" {
		name = v.DefaultVoice
	}
	opts := []playback.Option{playback.WithLogger(log)}
	if v.Clock != nil {
		opts = append(opts, playback.WithClock(v.Clock))
	}
	p, err := playback.New(writerFunc(send), opts...)
	if err != nil {
		return nil, err
	}
	res, err := p.Play(ctx, sentences, synth, tts.Voice{Name: name, Speed: voice.Speed})
	return res.Said, err
}
