package stt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// Deepgram defaults.
const (
	DefaultDeepgramURL   = "https://api.deepgram.com"
	DefaultDeepgramModel = "nova-3"
	// DefaultEndpointing is the silence after which Deepgram marks a
	// result speech_final.
	DefaultEndpointing = 300 * time.Millisecond
	// DefaultTimeout bounds one transcription.
	DefaultTimeout = 10 * time.Second
)

// Deepgram transcribes with Deepgram's API: streaming over WebSocket, with
// the batch endpoint as fallback when the stream cannot be opened. Set the
// fields before first use; it is safe for concurrent use after that.
type Deepgram struct {
	// APIKey authenticates ("Authorization: Token <key>").
	APIKey string
	// BaseURL is the API root (DefaultDeepgramURL); ws:// or wss:// is
	// derived from it for streaming.
	BaseURL string
	// Model is the model name (DefaultDeepgramModel). Keyterms are sent as
	// keyterm parameters, which only nova-3 understands.
	Model string
	// Endpointing is Deepgram's end-of-speech silence (DefaultEndpointing).
	Endpointing time.Duration
	// Timeout bounds one transcription (DefaultTimeout).
	Timeout time.Duration
	// NoFallback disables the batch fallback.
	NoFallback bool
	// HTTPClient makes batch requests (http.DefaultClient).
	HTTPClient *http.Client
	// Dialer opens streams (websocket.DefaultDialer).
	Dialer *websocket.Dialer
	// Logger receives fallbacks; nil discards.
	Logger *slog.Logger
}

var _ Recognizer = (*Deepgram)(nil)

func (d *Deepgram) base() string {
	if d.BaseURL == "" {
		return DefaultDeepgramURL
	}
	return strings.TrimRight(d.BaseURL, "/")
}

func (d *Deepgram) timeout(p audio.PCM) time.Duration {
	t := d.Timeout
	if t == 0 {
		t = DefaultTimeout
	}
	return t
}

func (d *Deepgram) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Logger
}

// query builds the listen parameters shared by streaming and batch.
func (d *Deepgram) query(h Hints, stream bool) url.Values {
	q := url.Values{}
	model := d.Model
	if model == "" {
		model = DefaultDeepgramModel
	}
	q.Set("model", model)
	q.Set("punctuate", "true")
	q.Set("smart_format", "true")
	if h.Language != "" {
		q.Set("language", h.Language)
	}
	for _, k := range h.Keyterms {
		if k = strings.TrimSpace(k); k != "" {
			q.Add("keyterm", k)
		}
	}
	if stream {
		ep := d.Endpointing
		if ep == 0 {
			ep = DefaultEndpointing
		}
		q.Set("encoding", "linear16")
		q.Set("sample_rate", strconv.Itoa(audio.Rate))
		q.Set("channels", "1")
		q.Set("interim_results", "true")
		q.Set("endpointing", strconv.FormatInt(ep.Milliseconds(), 10))
		q.Set("utterance_end_ms", "1000")
		q.Set("vad_events", "true")
	}
	return q
}

// Transcribe streams the utterance and returns the final transcript,
// falling back to the batch endpoint when the stream cannot be opened.
func (d *Deepgram) Transcribe(ctx context.Context, pcm audio.PCM, h Hints) (Transcript, error) {
	if err := checkAudio(pcm); err != nil {
		return Transcript{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout(pcm))
	defer cancel()
	s, err := d.Stream(ctx, h)
	if err != nil {
		if d.NoFallback || ctx.Err() != nil {
			return Transcript{}, err
		}
		d.logger().Warn("deepgram stream unavailable, using batch", "err", err)
		return d.TranscribeBatch(ctx, pcm, h)
	}
	defer s.Close()
	return transcribeOn(ctx, s, pcm)
}

// TranscribeStream sends a whole utterance through st, a stream opened
// ahead of it (OpenStream, when the player started speaking), and returns
// its final transcript: what Transcribe does once it has opened its
// stream, without the wait for the connection. It does not close st.
func (d *Deepgram) TranscribeStream(ctx context.Context, st Stream, pcm audio.PCM) (Transcript, error) {
	if err := checkAudio(pcm); err != nil {
		return Transcript{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout(pcm))
	defer cancel()
	return transcribeOn(ctx, st, pcm)
}

// transcribeOn sends pcm through st in 100 ms chunks and finishes it.
func transcribeOn(ctx context.Context, st Stream, pcm audio.PCM) (Transcript, error) {
	for i := 0; i < len(pcm.Samples); i += audio.Rate / 10 { // 100 ms chunks
		if err := st.Send(pcm.Samples[i:min(i+audio.Rate/10, len(pcm.Samples))]); err != nil {
			return Transcript{}, err
		}
	}
	return st.Finish(ctx)
}

// TranscribeBatch sends the utterance to the batch (pre-recorded) endpoint.
func (d *Deepgram) TranscribeBatch(ctx context.Context, pcm audio.PCM, h Hints) (Transcript, error) {
	if err := checkAudio(pcm); err != nil {
		return Transcript{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout(pcm))
	defer cancel()
	u := d.base() + "/v1/listen?" + d.query(h, false).Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(audio.EncodeWAV(pcm)))
	if err != nil {
		return Transcript{}, &provider.Error{Provider: "deepgram", Op: "request", Err: err}
	}
	req.Header.Set("Authorization", "Token "+d.APIKey)
	req.Header.Set("Content-Type", "audio/wav")
	client := d.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return Transcript{}, &provider.Error{Provider: "deepgram", Op: "request", Err: err}
	}
	defer resp.Body.Close()
	body, err := readAnswer("deepgram", resp)
	if err != nil {
		return Transcript{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Transcript{}, &provider.Error{Provider: "deepgram", Op: "request", Status: resp.StatusCode, Body: snippet(body)}
	}
	var r struct {
		Results *struct {
			Channels []struct {
				Alternatives []dgAlternative `json:"alternatives"`
			} `json:"channels"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Transcript{}, &provider.Error{Provider: "deepgram", Op: "decode response", Body: snippet(body), Err: err}
	}
	if r.Results == nil {
		return Transcript{}, &provider.Error{Provider: "deepgram", Op: "decode response", Body: snippet(body), Err: errors.New("no results")}
	}
	if len(r.Results.Channels) == 0 || len(r.Results.Channels[0].Alternatives) == 0 {
		return Transcript{}, nil
	}
	return checkText("deepgram", r.Results.Channels[0].Alternatives[0].transcript(0))
}

type dgAlternative struct {
	Transcript string  `json:"transcript"`
	Confidence float64 `json:"confidence"`
	Words      []struct {
		Word           string  `json:"word"`
		PunctuatedWord string  `json:"punctuated_word"`
		Start          float64 `json:"start"`
		End            float64 `json:"end"`
		Confidence     float64 `json:"confidence"`
	} `json:"words"`
}

// transcript converts an alternative whose times are relative to offset.
func (a dgAlternative) transcript(offset float64) Transcript {
	t := Transcript{Text: a.Transcript, Confidence: a.Confidence}
	for _, w := range a.Words {
		text := w.PunctuatedWord
		if text == "" {
			text = w.Word
		}
		t.Words = append(t.Words, Word{Text: text, Start: seconds(offset + w.Start), End: seconds(offset + w.End), Confidence: w.Confidence})
	}
	return t
}

// ResultKind says what a streaming message was.
type ResultKind int

// Kinds of streaming results.
const (
	// Interim is a provisional transcript of the audio so far.
	Interim ResultKind = iota + 1
	// Final is a transcript that will not change.
	Final
	// SpeechStarted: the provider heard speech begin.
	SpeechStarted
	// UtteranceEnd: the provider saw the end of an utterance.
	UtteranceEnd
)

// Result is one message of a stream.
type Result struct {
	Kind       ResultKind
	Transcript Transcript
	// SpeechFinal is set on a Final result that ends at an endpoint.
	SpeechFinal bool
	// At is the offset into the stream the result refers to (its start,
	// or the last word's end for UtteranceEnd).
	At time.Duration
}

// DeepgramStream is one open streaming transcription. Send audio, then
// Finish; Results delivers interim and final results as they come. Close
// releases it. Send and Finish are for one goroutine.
type DeepgramStream struct {
	conn    *websocket.Conn
	results chan Result
	done    chan struct{}
	mu      sync.Mutex
	finals  []Transcript
	text    int // bytes of final text so far (MaxText)
	err     error
	closed  sync.Once
	buf     []byte
	// wmu orders the writes of Send, Finish and KeepAlive: the
	// connection takes one writer at a time. finished: CloseStream was
	// sent.
	wmu      sync.Mutex
	finished bool
	// writeTimeout bounds each write (the Deepgram's Timeout): a provider
	// that stops reading fails the write instead of blocking it for ever.
	writeTimeout time.Duration
}

// Stream opens a streaming transcription of 16 kHz mono linear PCM.
func (d *Deepgram) Stream(ctx context.Context, h Hints) (*DeepgramStream, error) {
	u, err := url.Parse(d.base() + "/v1/listen")
	if err != nil {
		return nil, &provider.Error{Provider: "deepgram", Op: "connect", Err: fmt.Errorf("base url %q: %w", d.BaseURL, err)}
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	}
	u.RawQuery = d.query(h, true).Encode()
	dialer := d.Dialer
	if dialer == nil {
		dialer = websocket.DefaultDialer
	}
	hdr := http.Header{"Authorization": {"Token " + d.APIKey}}
	conn, resp, err := dialer.DialContext(ctx, u.String(), hdr)
	if err != nil {
		pe := &provider.Error{Provider: "deepgram", Op: "connect", Err: err}
		if resp != nil {
			pe.Status = resp.StatusCode
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			pe.Body = snippet(b)
		}
		return nil, pe
	}
	conn.SetReadLimit(MaxMessage)
	s := &DeepgramStream{conn: conn, results: make(chan Result, 64), done: make(chan struct{}), writeTimeout: d.timeout(audio.PCM{})}
	go s.read()
	return s, nil
}

// Results delivers the stream's results; it is closed when the stream
// ends. Results not read are dropped once the buffer (64) is full; Finish
// does not depend on them.
func (s *DeepgramStream) Results() <-chan Result { return s.results }

// Send sends audio.
func (s *DeepgramStream) Send(pcm []int16) error {
	s.buf = s.buf[:0]
	for _, v := range pcm {
		s.buf = binary.LittleEndian.AppendUint16(s.buf, uint16(v))
	}
	if err := s.write(websocket.BinaryMessage, s.buf); err != nil {
		return &provider.Error{Provider: "deepgram", Op: "stream", Err: err}
	}
	return nil
}

func (s *DeepgramStream) write(typ int, msg []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeLocked(typ, msg)
}

// writeLocked writes one message within the write timeout; s.wmu is held.
func (s *DeepgramStream) writeLocked(typ int, msg []byte) error {
	s.conn.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	return s.conn.WriteMessage(typ, msg)
}

// KeepAliveEvery is how often a stream that waits for its audio must be
// kept alive (KeepAlive): Deepgram closes a stream that received no audio
// for 10 seconds.
const KeepAliveEvery = 4 * time.Second

// KeepAlive keeps an open stream that has no audio to send yet from being
// closed (Deepgram's KeepAlive message). It may be called while another
// goroutine sends; after Finish it does nothing.
func (s *DeepgramStream) KeepAlive() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.finished {
		return nil
	}
	if err := s.writeLocked(websocket.TextMessage, []byte(`{"type":"KeepAlive"}`)); err != nil {
		return &provider.Error{Provider: "deepgram", Op: "keep alive", Err: err}
	}
	return nil
}

// Finish tells Deepgram the audio is complete, waits for the last results
// and returns the final transcript (the final results joined).
func (s *DeepgramStream) Finish(ctx context.Context) (Transcript, error) {
	s.wmu.Lock()
	s.finished = true
	err := s.writeLocked(websocket.TextMessage, []byte(`{"type":"CloseStream"}`))
	s.wmu.Unlock()
	if err != nil {
		return Transcript{}, &provider.Error{Provider: "deepgram", Op: "stream", Err: err}
	}
	select {
	case <-s.done:
	case <-ctx.Done():
		s.Close()
		return Transcript{}, &provider.Error{Provider: "deepgram", Op: "wait for final result", Err: ctx.Err()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return Transcript{}, s.err
	}
	var t Transcript
	var conf float64
	for _, f := range s.finals {
		if f.Text == "" {
			continue
		}
		t.Words = append(t.Words, f.Words...)
		if t.Text != "" {
			t.Text += " "
		}
		t.Text += f.Text
		conf += f.Confidence
	}
	if n := len(s.finals); n > 0 {
		t.Confidence = conf / float64(n)
	}
	return t, nil
}

// Close closes the connection and waits for the reader to stop.
func (s *DeepgramStream) Close() error {
	s.closed.Do(func() { s.conn.Close() })
	<-s.done
	return nil
}

// read runs until the server closes the stream.
func (s *DeepgramStream) read() {
	defer close(s.done)
	defer close(s.results)
	for {
		typ, msg, err := s.conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			switch {
			case errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure:
			case errors.Is(err, websocket.ErrReadLimit):
				s.fail(tooLarge("deepgram", err))
				s.closed.Do(func() { s.conn.Close() })
			default:
				s.fail(&provider.Error{Provider: "deepgram", Op: "stream", Err: err})
			}
			return
		}
		if typ != websocket.TextMessage {
			continue
		}
		r, ok, err := parseDeepgram(msg)
		if err != nil {
			s.fail(err)
			s.closed.Do(func() { s.conn.Close() })
			return
		}
		if !ok {
			continue
		}
		if r.Kind == Final {
			s.mu.Lock()
			s.finals = append(s.finals, r.Transcript)
			s.text += len(r.Transcript.Text)
			over := s.text > MaxText
			s.mu.Unlock()
			if over {
				s.fail(tooLarge("deepgram", nil))
				s.closed.Do(func() { s.conn.Close() })
				return
			}
		}
		select {
		case s.results <- r:
		default:
		}
	}
}

func (s *DeepgramStream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// parseDeepgram reads one streaming message; ok is false for messages that
// carry no result (Metadata).
func parseDeepgram(msg []byte) (Result, bool, error) {
	var m struct {
		Type        string          `json:"type"`
		Start       float64         `json:"start"`
		IsFinal     bool            `json:"is_final"`
		SpeechFinal bool            `json:"speech_final"`
		Timestamp   float64         `json:"timestamp"`
		LastWordEnd float64         `json:"last_word_end"`
		Channel     json.RawMessage `json:"channel"`
		Description string          `json:"description"`
		Message     string          `json:"message"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return Result{}, false, &provider.Error{Provider: "deepgram", Op: "decode message", Body: snippet(msg), Err: err}
	}
	switch m.Type {
	case "Results":
		// channel is an object here (an array of indexes elsewhere).
		var ch struct {
			Alternatives []dgAlternative `json:"alternatives"`
		}
		if len(m.Channel) == 0 {
			return Result{}, false, &provider.Error{Provider: "deepgram", Op: "decode message", Body: snippet(msg), Err: errors.New("result without channel")}
		}
		if err := json.Unmarshal(m.Channel, &ch); err != nil {
			return Result{}, false, &provider.Error{Provider: "deepgram", Op: "decode message", Body: snippet(msg), Err: err}
		}
		r := Result{Kind: Interim, SpeechFinal: m.SpeechFinal, At: seconds(m.Start)}
		if m.IsFinal {
			r.Kind = Final
		}
		if len(ch.Alternatives) > 0 {
			// Word times in streaming results are already relative to the
			// stream's start.
			r.Transcript = ch.Alternatives[0].transcript(0)
		}
		return r, true, nil
	case "SpeechStarted":
		return Result{Kind: SpeechStarted, At: seconds(m.Timestamp)}, true, nil
	case "UtteranceEnd":
		return Result{Kind: UtteranceEnd, At: seconds(m.LastWordEnd)}, true, nil
	case "Error":
		return Result{}, false, &provider.Error{Provider: "deepgram", Op: "stream", Err: fmt.Errorf("%s: %s", m.Description, m.Message)}
	default:
		return Result{}, false, nil
	}
}

var _ StreamRecognizer = (*Deepgram)(nil)

// OpenStream is Stream as a [StreamRecognizer].
func (d *Deepgram) OpenStream(ctx context.Context, h Hints) (Stream, error) {
	s, err := d.Stream(ctx, h)
	if err != nil {
		return nil, err
	}
	return s, nil
}
