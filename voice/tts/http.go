package tts

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// DefaultTimeout bounds one sentence's synthesis.
const DefaultTimeout = 15 * time.Second

// pcmRate is the rate of the raw PCM both HTTP providers are asked for.
const pcmRate = 24000

// OpenAI synthesises with any OpenAI-compatible /audio/speech endpoint,
// asking for raw 24 kHz PCM (a WAV answer is accepted too).
type OpenAI struct {
	APIKey string
	// BaseURL is the API root including /v1 (https://api.openai.com/v1).
	BaseURL string
	// Model is the model ("tts-1").
	Model string
	// Timeout bounds one sentence (DefaultTimeout).
	Timeout    time.Duration
	HTTPClient *http.Client
}

var _ Streamer = (*OpenAI)(nil)

// Synthesize asks for one sentence; the voice name defaults to "alloy".
func (o *OpenAI) Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error) {
	return collect(func(sink Sink) error { return o.SynthesizeStream(ctx, text, v, sink) })
}

// SynthesizeStream asks for one sentence and hands its speech to sink as it
// arrives; the voice name defaults to "alloy".
func (o *OpenAI) SynthesizeStream(ctx context.Context, text string, v Voice, sink Sink) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return ErrNoText
	}
	base := o.BaseURL
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	model := o.Model
	if model == "" {
		model = "tts-1"
	}
	voice := v.Name
	if voice == "" {
		voice = "alloy"
	}
	body := map[string]any{"model": model, "input": text, "voice": voice, "response_format": "pcm"}
	if v.Speed > 0 {
		body["speed"] = v.Speed
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	if o.APIKey != "" {
		hdr.Set("Authorization", "Bearer "+o.APIKey)
	}
	return post(ctx, "openai", o.HTTPClient, o.Timeout, strings.TrimRight(base, "/")+"/audio/speech", hdr, body, MaxSpeech(text), sink)
}

// ElevenLabs synthesises with ElevenLabs' streaming endpoint
// (/v1/text-to-speech/{voice}/stream), asking for raw 24 kHz PCM.
type ElevenLabs struct {
	APIKey string
	// BaseURL is the API root (https://api.elevenlabs.io).
	BaseURL string
	// Model is the model id ("eleven_flash_v2_5").
	Model string
	// Timeout bounds one sentence (DefaultTimeout).
	Timeout    time.Duration
	HTTPClient *http.Client
}

var _ Streamer = (*ElevenLabs)(nil)

// Synthesize asks for one sentence; v.Name is the voice id and required.
func (e *ElevenLabs) Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error) {
	return collect(func(sink Sink) error { return e.SynthesizeStream(ctx, text, v, sink) })
}

// SynthesizeStream asks for one sentence and hands its speech to sink as it
// arrives; v.Name is the voice id and required.
func (e *ElevenLabs) SynthesizeStream(ctx context.Context, text string, v Voice, sink Sink) error {
	text = strings.TrimSpace(text)
	if text == "" {
		return ErrNoText
	}
	if v.Name == "" {
		return &provider.Error{Provider: "elevenlabs", Op: "request", Err: fmt.Errorf("voice has no ElevenLabs voice id")}
	}
	base := e.BaseURL
	if base == "" {
		base = "https://api.elevenlabs.io"
	}
	model := e.Model
	if model == "" {
		model = "eleven_flash_v2_5"
	}
	body := map[string]any{"text": text, "model_id": model}
	if v.Speed > 0 {
		body["voice_settings"] = map[string]any{"speed": v.Speed}
	}
	u := fmt.Sprintf("%s/v1/text-to-speech/%s/stream?output_format=pcm_%d", strings.TrimRight(base, "/"), url.PathEscape(v.Name), pcmRate)
	hdr := http.Header{"Content-Type": {"application/json"}, "Accept": {"audio/pcm"}, "Xi-Api-Key": {e.APIKey}}
	return post(ctx, "elevenlabs", e.HTTPClient, e.Timeout, u, hdr, body, MaxSpeech(text), sink)
}

// maxAnswer bounds one sentence's answer (64 MiB, about 20 minutes of
// 24 kHz speech); the speech itself is bounded by MaxSpeech of the text.
const maxAnswer = 64 << 20

// readSize is how much of a raw PCM answer is read at a time: about 85 ms
// of 24 kHz speech, so that the first frames play while the rest arrives.
const readSize = 4096

// post sends a JSON request and hands the raw 16-bit PCM answer to sink as
// it arrives. A WAV answer is accepted too; it is read whole (its header
// may put the data anywhere) and handed over at once. Speech longer than
// limit fails with ErrTooLong, having handed over at most limit of it.
func post(ctx context.Context, name string, client *http.Client, timeout time.Duration, u string, hdr http.Header, body any, limit time.Duration, sink Sink) error {
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	if client == nil {
		client = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return &provider.Error{Provider: name, Op: "request", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return &provider.Error{Provider: name, Op: "request", Err: err}
	}
	req.Header = hdr
	resp, err := client.Do(req)
	if err != nil {
		return &provider.Error{Provider: name, Op: "request", Err: err}
	}
	defer resp.Body.Close()
	answer := bufio.NewReaderSize(io.LimitReader(resp.Body, maxAnswer+1), readSize)
	tooLong := func(d time.Duration) error {
		return &provider.Error{Provider: name, Op: "read audio", Err: fmt.Errorf("%w: more than %v", ErrTooLong, d)}
	}
	if resp.StatusCode != http.StatusOK {
		data, err := io.ReadAll(answer)
		if err != nil {
			return &provider.Error{Provider: name, Op: "read audio", Status: resp.StatusCode, Err: err}
		}
		return &provider.Error{Provider: name, Op: "request", Status: resp.StatusCode, Body: snippet(data)}
	}
	if ct := resp.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/") {
		data, _ := io.ReadAll(answer)
		return &provider.Error{Provider: name, Op: "read audio", Body: snippet(data), Err: fmt.Errorf("answer is %s, not audio", ct)}
	}
	if head, _ := answer.Peek(4); bytes.Equal(head, []byte("RIFF")) {
		data, err := io.ReadAll(answer)
		if err != nil {
			return &provider.Error{Provider: name, Op: "read audio", Status: resp.StatusCode, Err: err}
		}
		if len(data) > maxAnswer {
			return &provider.Error{Provider: name, Op: "read audio", Err: fmt.Errorf("%w: a WAV answer over %d bytes", ErrTooLong, maxAnswer)}
		}
		pcm, err := audio.DecodeWAV(data)
		if err != nil {
			return &provider.Error{Provider: name, Op: "read audio", Err: err}
		}
		if time.Duration(pcm.Duration()*float64(time.Second)) > limit {
			return tooLong(limit)
		}
		return sink(pcm.Rate, pcm.Samples)
	}
	// Raw PCM: whole samples go to sink as they arrive; a read may end
	// inside a sample, whose first byte waits for the next read.
	buf := make([]byte, readSize)
	have, total := 0, 0
	most := 2 * int(limit.Seconds()*pcmRate) // bytes of speech accepted
	for {
		n, err := answer.Read(buf[have:])
		have += n
		total += n
		if total > most {
			return tooLong(limit)
		}
		if whole := have &^ 1; whole > 0 {
			s := make([]int16, whole/2)
			for i := range s {
				s[i] = int16(binary.LittleEndian.Uint16(buf[2*i:]))
			}
			if err := sink(pcmRate, s); err != nil {
				return err
			}
			copy(buf, buf[whole:have])
			have -= whole
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return &provider.Error{Provider: name, Op: "read audio", Status: resp.StatusCode, Err: err}
		}
	}
	switch {
	case total == 0:
		return &provider.Error{Provider: name, Op: "read audio", Err: fmt.Errorf("empty answer")}
	case have != 0:
		return &provider.Error{Provider: name, Op: "read audio", Err: fmt.Errorf("odd length %d for 16-bit PCM", total)}
	}
	return nil
}
