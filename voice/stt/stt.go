package stt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Word is one recognised word.
type Word struct {
	// Text is the word as written (punctuated where the provider does so).
	Text string
	// Start and End are offsets into the audio.
	Start, End time.Duration
	// Confidence is the provider's confidence, 0 to 1.
	Confidence float64
}

// Transcript is what a recogniser heard.
type Transcript struct {
	Text string
	// Words carry per-word timing and confidence; providers without word
	// confidences give every word the utterance's confidence.
	Words []Word
	// Confidence is the provider's confidence in the whole text, 0 to 1.
	Confidence float64
}

// Hints steer recognition.
type Hints struct {
	// Keyterms are the campaign's names and terms to boost (Deepgram
	// keyterms, the Whisper prompt, pocketsphinx's vocabulary).
	Keyterms []string
	// Language is a BCP-47 code ("en"); empty lets the provider choose.
	Language string
}

// Recognizer transcribes one utterance of 16 kHz mono audio. An empty
// Transcript with a nil error means there was no speech. Implementations
// are safe for concurrent use.
type Recognizer interface {
	Transcribe(ctx context.Context, pcm audio.PCM, h Hints) (Transcript, error)
}

// ErrNoAudio is returned for empty audio or audio at the wrong rate.
var ErrNoAudio = errors.New("no usable audio")

func checkAudio(p audio.PCM) error {
	if p.Rate != audio.Rate {
		return fmt.Errorf("%w: audio at %d Hz, want %d", ErrNoAudio, p.Rate, audio.Rate)
	}
	if len(p.Samples) == 0 {
		return fmt.Errorf("%w: empty audio", ErrNoAudio)
	}
	return nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// joinWords makes a transcript's text from its words.
func joinWords(ws []Word) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.Text
	}
	return strings.Join(parts, " ")
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// Stream is one streaming transcription: audio goes in as it is spoken and
// the final transcript comes out soon after the speaker stops. Send and
// Finish are for one goroutine; Close may be called at any time.
type Stream interface {
	Send(pcm []int16) error
	Finish(ctx context.Context) (Transcript, error)
	Close() error
}

// StreamRecognizer is a Recognizer that can also transcribe while the player is
// still speaking. A [Transcriber] uses it when the recogniser has it.
type StreamRecognizer interface {
	Recognizer
	OpenStream(ctx context.Context, h Hints) (Stream, error)
}
