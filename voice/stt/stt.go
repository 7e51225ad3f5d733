package stt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
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

// ErrTooLarge is wrapped when a streaming provider sends more than one
// utterance can need: a message over MaxMessage bytes, or over MaxText
// bytes of transcript for one stream. The stream fails at once (the
// utterance then goes to the batch endpoint) instead of holding all a
// broken or hostile peer sends until the time-out.
var ErrTooLarge = errors.New("the provider sent more than an utterance can need")

// Bounds of what one stream takes from its provider.
const (
	// MaxMessage bounds one message of a stream (1 MiB; a result with
	// per-word timings of a minute's speech is a few tens of kilobytes).
	MaxMessage = 1 << 20
	// MaxText bounds one stream's transcript, the final and interim
	// results' text added up (64 KiB; a minute's speech is about 1 KiB).
	MaxText = 64 << 10
)

func checkAudio(p audio.PCM) error {
	if p.Rate != audio.Rate {
		return fmt.Errorf("%w: audio at %d Hz, want %d", ErrNoAudio, p.Rate, audio.Rate)
	}
	if len(p.Samples) == 0 {
		return fmt.Errorf("%w: empty audio", ErrNoAudio)
	}
	return nil
}

// tooLarge is the error of a stream that ended because its provider sent
// too much: err is the connection's read error (websocket.ErrReadLimit
// for a message over MaxMessage), nil for a transcript over MaxText.
func tooLarge(name string, err error) error {
	what := fmt.Errorf("%w: more than %d bytes of transcript in one stream", ErrTooLarge, MaxText)
	if err != nil {
		what = fmt.Errorf("%w: a message over %d bytes (%w)", ErrTooLarge, MaxMessage, err)
	}
	return &provider.Error{Provider: name, Op: "stream", Err: what}
}

// maxAnswer bounds a batch endpoint's answer (4 MiB).
const maxAnswer = 4 << 20

// readAnswer reads a batch endpoint's answer; one over maxAnswer is an
// ErrTooLarge, not a truncated answer that fails to decode.
func readAnswer(name string, resp *http.Response) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, &provider.Error{Provider: name, Op: "read response", Status: resp.StatusCode, Err: err}
	}
	if len(b) > maxAnswer && resp.StatusCode == http.StatusOK {
		return nil, &provider.Error{Provider: name, Op: "read response", Status: resp.StatusCode,
			Err: fmt.Errorf("%w: an answer over %d bytes", ErrTooLarge, maxAnswer)}
	}
	return b, nil
}

// checkText refuses a transcript longer than any utterance can say
// (MaxText): a broken or hostile provider's text is not a player's line.
func checkText(name string, t Transcript) (Transcript, error) {
	if len(t.Text) > MaxText {
		return Transcript{}, &provider.Error{Provider: name, Op: "decode response",
			Err: fmt.Errorf("%w: a transcript of %d bytes (at most %d)", ErrTooLarge, len(t.Text), MaxText)}
	}
	return t, nil
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
