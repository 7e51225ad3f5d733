package stt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"mime/multipart"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// OpenAI defaults.
const (
	DefaultOpenAIURL   = "https://api.openai.com/v1"
	DefaultOpenAIModel = "whisper-1"
)

// OpenAI transcribes with any OpenAI-compatible /audio/transcriptions
// endpoint (OpenAI, or a self-hosted Whisper server). The campaign's names
// go in the prompt. Whisper invents text for silence and noise ("thanks for
// watching"); the guard drops such results: audio without voiced speech is
// not sent at all, segments Whisper itself rates as probably not speech are
// dropped, and stock phrases are dropped unless the audio holds enough
// speech to have said them. Set the fields before first use; it is safe for
// concurrent use after that.
type OpenAI struct {
	// APIKey is sent as a bearer token (optional for self-hosted servers).
	APIKey string
	// BaseURL is the API root including /v1 (DefaultOpenAIURL).
	BaseURL string
	// Model is the model name (DefaultOpenAIModel).
	Model string
	// Timeout bounds one transcription (DefaultTimeout).
	Timeout time.Duration
	// HTTPClient makes the requests (http.DefaultClient).
	HTTPClient *http.Client
}

var _ Recognizer = (*OpenAI)(nil)

// Prompt is the Whisper prompt for a campaign's terms: Whisper follows the
// spelling of names it has seen in the prompt.
func Prompt(keyterms []string) string {
	var ks []string
	for _, k := range keyterms {
		if k = strings.TrimSpace(k); k != "" {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return ""
	}
	p := "A tabletop role-playing session. Names: " + strings.Join(ks, ", ") + "."
	if len(p) > 800 { // Whisper reads at most 224 tokens of prompt
		p = p[:800]
	}
	return p
}

// Transcribe sends the utterance as a WAV file.
func (o *OpenAI) Transcribe(ctx context.Context, pcm audio.PCM, h Hints) (Transcript, error) {
	if err := checkAudio(pcm); err != nil {
		return Transcript{}, err
	}
	voiced := VoicedDuration(pcm)
	if voiced < minVoiced {
		return Transcript{}, nil // silence or noise: Whisper would make something up
	}
	t := o.Timeout
	if t == 0 {
		t = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "utterance.wav")
	if err != nil {
		return Transcript{}, &provider.Error{Provider: "openai", Op: "request", Err: err}
	}
	fw.Write(audio.EncodeWAV(pcm))
	model := o.Model
	if model == "" {
		model = DefaultOpenAIModel
	}
	mw.WriteField("model", model)
	if strings.HasPrefix(model, "gpt-4o") {
		// The gpt-4o transcription models answer plain json only: no
		// segments, so no word timings and no no-speech probability.
		mw.WriteField("response_format", "json")
	} else {
		mw.WriteField("response_format", "verbose_json")
		mw.WriteField("timestamp_granularities[]", "word")
		mw.WriteField("timestamp_granularities[]", "segment")
	}
	mw.WriteField("temperature", "0")
	if p := Prompt(h.Keyterms); p != "" {
		mw.WriteField("prompt", p)
	}
	if h.Language != "" {
		mw.WriteField("language", h.Language)
	}
	mw.Close()

	base := o.BaseURL
	if base == "" {
		base = DefaultOpenAIURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/audio/transcriptions", &body)
	if err != nil {
		return Transcript{}, &provider.Error{Provider: "openai", Op: "request", Err: err}
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	client := o.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Transcript{}, &provider.Error{Provider: "openai", Op: "request", Err: err}
	}
	defer resp.Body.Close()
	b, err := readAnswer("openai", resp)
	if err != nil {
		return Transcript{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Transcript{}, &provider.Error{Provider: "openai", Op: "request", Status: resp.StatusCode, Body: snippet(b)}
	}
	var r struct {
		Text     *string `json:"text"`
		Segments []struct {
			Start            float64 `json:"start"`
			End              float64 `json:"end"`
			Text             string  `json:"text"`
			AvgLogprob       float64 `json:"avg_logprob"`
			NoSpeechProb     float64 `json:"no_speech_prob"`
			CompressionRatio float64 `json:"compression_ratio"`
		} `json:"segments"`
		Words []struct {
			Word  string  `json:"word"`
			Start float64 `json:"start"`
			End   float64 `json:"end"`
		} `json:"words"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return Transcript{}, &provider.Error{Provider: "openai", Op: "decode response", Body: snippet(b), Err: err}
	}
	if r.Text == nil {
		return Transcript{}, &provider.Error{Provider: "openai", Op: "decode response", Body: snippet(b), Err: errors.New("no text field")}
	}
	out := Transcript{Text: strings.TrimSpace(*r.Text), Confidence: 1}
	noSpeech := 0.0
	if len(r.Segments) > 0 {
		// Keep the segments that are speech; a word's confidence is its
		// segment's mean token probability.
		var kept []string
		var confSum, durSum float64
		type span struct{ start, end, conf float64 }
		var spans []span
		for _, s := range r.Segments {
			if s.NoSpeechProb > 0.6 && s.AvgLogprob < -1 || s.CompressionRatio > 2.4 {
				continue
			}
			c := math.Exp(s.AvgLogprob)
			kept = append(kept, strings.TrimSpace(s.Text))
			spans = append(spans, span{s.Start, s.End, c})
			confSum += c * (s.End - s.Start)
			durSum += s.End - s.Start
		}
		out.Text = strings.Join(kept, " ")
		if durSum > 0 {
			out.Confidence = confSum / durSum
		}
		for _, w := range r.Words {
			c := -1.0
			for _, s := range spans {
				if w.Start >= s.start-0.01 && w.Start <= s.end+0.01 {
					c = s.conf
					break
				}
			}
			if c < 0 {
				continue // in a dropped segment
			}
			out.Words = append(out.Words, Word{Text: strings.TrimSpace(w.Word), Start: seconds(w.Start), End: seconds(w.End), Confidence: c})
		}
		for _, s := range r.Segments {
			noSpeech = max(noSpeech, s.NoSpeechProb)
		}
	} else {
		for _, f := range strings.Fields(out.Text) {
			out.Words = append(out.Words, Word{Text: f, Confidence: out.Confidence})
		}
	}
	if isHallucination(out.Text, voiced, noSpeech) {
		return Transcript{}, nil
	}
	return checkText("openai", out)
}

// minVoiced is the least voiced speech worth transcribing.
const minVoiced = 100 * time.Millisecond

// VoicedDuration is how much of pcm (16 kHz) the voice activity detector
// finds voiced.
func VoicedDuration(pcm audio.PCM) time.Duration {
	v := audio.NewVAD()
	var n int
	for i := 0; i+audio.FrameSamples <= len(pcm.Samples); i += audio.FrameSamples {
		if voiced, _ := v.Frame(pcm.Samples[i : i+audio.FrameSamples]); voiced {
			n++
		}
	}
	return time.Duration(n) * 20 * time.Millisecond
}

// hallucinations are what Whisper writes for silence, music and noise,
// learnt from subtitled videos.
var hallucinations = []string{
	"thanks for watching", "thank you for watching", "thank you so much for watching",
	"please subscribe", "like and subscribe", "subscribe to my channel",
	"subtitles by the amara org community", "subtitles by", "transcribed by",
	"see you next time", "see you in the next video", "bye", "you", "thank you",
	"music", "applause", "silence",
}

// isHallucination reports whether text is a stock phrase Whisper invents,
// and either Whisper doubts there was speech or there was too little
// voicing to have said it (100 ms a word plus 200 ms).
func isHallucination(text string, voiced time.Duration, noSpeech float64) bool {
	norm := strings.Join(strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
	if norm == "" {
		return false
	}
	for _, h := range hallucinations {
		if norm == h || strings.HasPrefix(norm, h+" ") && len(norm) < len(h)+12 {
			return noSpeech > 0.3 || voiced < time.Duration(len(strings.Fields(norm)))*100*time.Millisecond+200*time.Millisecond
		}
	}
	return false
}
