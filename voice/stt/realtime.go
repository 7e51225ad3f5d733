package stt

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// DefaultRealtimeModel is the transcription model of an [OpenAIRealtime]
// session: OpenAI's streaming transcription model, which sends deltas
// while the audio arrives.
const DefaultRealtimeModel = "gpt-realtime-whisper"

// realtimeRate is the Realtime API's PCM rate.
const realtimeRate = 24000

// OpenAIRealtime transcribes with an OpenAI-compatible Realtime API
// transcription session (WebSocket /realtime?intent=transcription): audio
// is appended as the player speaks (input_audio_buffer.append, 24 kHz
// PCM), transcript deltas come back while it arrives
// (conversation.item.input_audio_transcription.delta) and the final
// transcript after the audio is committed at the end of the utterance
// (input_audio_buffer.commit, then ….completed). Turn detection is left to
// the table (turn_detection null). Whole utterances (Transcribe) go to the
// /audio/transcriptions endpoint through Batch. Set the fields before first
// use; it is safe for concurrent use after that.
type OpenAIRealtime struct {
	// APIKey is sent as a bearer token (optional for self-hosted servers).
	APIKey string
	// BaseURL is the API root including /v1 (DefaultOpenAIURL); ws:// or
	// wss:// is derived from it.
	BaseURL string
	// Model is the streaming transcription model (DefaultRealtimeModel).
	Model string
	// Batch transcribes whole utterances, and those whose stream failed
	// (an OpenAI with the same key and URL when nil).
	Batch *OpenAI
	// Dialer opens streams (websocket.DefaultDialer).
	Dialer *websocket.Dialer
}

var _ StreamRecognizer = (*OpenAIRealtime)(nil)

func (o *OpenAIRealtime) batch() *OpenAI {
	if o.Batch != nil {
		return o.Batch
	}
	return &OpenAI{APIKey: o.APIKey, BaseURL: o.BaseURL}
}

// Transcribe transcribes a whole utterance with the batch endpoint.
func (o *OpenAIRealtime) Transcribe(ctx context.Context, pcm audio.PCM, h Hints) (Transcript, error) {
	return o.batch().Transcribe(ctx, pcm, h)
}

// TranscribeBatch is Transcribe: the table's fallback after a failed
// stream.
func (o *OpenAIRealtime) TranscribeBatch(ctx context.Context, pcm audio.PCM, h Hints) (Transcript, error) {
	return o.batch().Transcribe(ctx, pcm, h)
}

// OpenStream is Stream as a [StreamRecognizer].
func (o *OpenAIRealtime) OpenStream(ctx context.Context, h Hints) (Stream, error) {
	s, err := o.Stream(ctx, h)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// realtimeEvent is a server event of a transcription session; only the
// fields read here.
type realtimeEvent struct {
	Type       string `json:"type"`
	ItemID     string `json:"item_id"`
	Delta      string `json:"delta"`
	Transcript string `json:"transcript"`
	Error      *struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// Stream opens a transcription session for 16 kHz mono PCM.
func (o *OpenAIRealtime) Stream(ctx context.Context, h Hints) (*RealtimeStream, error) {
	base := o.BaseURL
	if base == "" {
		base = DefaultOpenAIURL
	}
	u, err := url.Parse(strings.TrimRight(base, "/") + "/realtime")
	if err != nil {
		return nil, &provider.Error{Provider: "openai-realtime", Op: "connect", Err: fmt.Errorf("base url %q: %w", o.BaseURL, err)}
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	case "http":
		u.Scheme = "ws"
	}
	u.RawQuery = url.Values{"intent": {"transcription"}}.Encode()
	dialer := o.Dialer
	if dialer == nil {
		dialer = websocket.DefaultDialer
	}
	hdr := http.Header{}
	if o.APIKey != "" {
		hdr.Set("Authorization", "Bearer "+o.APIKey)
	}
	conn, resp, err := dialer.DialContext(ctx, u.String(), hdr)
	if err != nil {
		pe := &provider.Error{Provider: "openai-realtime", Op: "connect", Err: err}
		if resp != nil {
			pe.Status = resp.StatusCode
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			pe.Body = snippet(b)
		}
		return nil, pe
	}
	model := o.Model
	if model == "" {
		model = DefaultRealtimeModel
	}
	tr := map[string]any{"model": model}
	if p := Prompt(h.Keyterms); p != "" {
		tr["prompt"] = p
	}
	if h.Language != "" {
		tr["language"] = h.Language
	}
	update := map[string]any{"type": "session.update", "session": map[string]any{
		"type": "transcription",
		"audio": map[string]any{"input": map[string]any{
			"format":         map[string]any{"type": "audio/pcm", "rate": realtimeRate},
			"transcription":  tr,
			"turn_detection": nil,
		}},
	}}
	// A server that takes the connection and reads nothing fails the
	// configuration within the write time-out (or the context's end)
	// instead of blocking the utterance for ever.
	deadline := time.Now().Add(streamWriteTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetWriteDeadline(deadline)
	if err := conn.WriteJSON(update); err != nil {
		conn.Close()
		return nil, &provider.Error{Provider: "openai-realtime", Op: "configure session", Err: err}
	}
	rs, err := audio.NewResampler(audio.Rate, realtimeRate)
	if err != nil {
		conn.Close()
		return nil, err
	}
	conn.SetReadLimit(MaxMessage)
	s := &RealtimeStream{conn: conn, rs: rs, results: make(chan Result, 64), done: make(chan struct{}),
		finished: make(chan struct{}), partial: map[string]string{}, completed: map[string]string{}}
	go s.read()
	return s, nil
}

// RealtimeStream is one open transcription session. Send audio, then
// Finish; Results delivers interim results (the text so far) and final
// ones as they come. Close releases it. Send and Finish are for one
// goroutine.
type RealtimeStream struct {
	conn    *websocket.Conn
	rs      *audio.Resampler
	pcm     []int16
	sent    bool // audio was sent: the resampler's tail is due
	results chan Result
	done    chan struct{} // the reader stopped
	closed  sync.Once

	mu        sync.Mutex
	items     []string          // item ids in the order they were first heard of
	partial   map[string]string // deltas so far, by item
	completed map[string]string // final transcripts, by item
	committed string            // the item the final commit made
	empty     bool              // the commit found no audio
	finished  chan struct{}     // the committed item is transcribed (or empty)
	finOnce   sync.Once
	text      int // bytes of transcript kept so far (MaxText)
	err       error
}

// Results delivers the stream's results; it is closed when the stream
// ends. Results not read are dropped once the buffer (64) is full; Finish
// does not depend on them.
func (s *RealtimeStream) Results() <-chan Result { return s.results }

// Send sends 16 kHz audio (resampled to the API's 24 kHz).
func (s *RealtimeStream) Send(pcm []int16) error {
	s.sent = s.sent || len(pcm) > 0
	s.pcm = s.rs.Process(s.pcm[:0], pcm)
	return s.appendAudio(s.pcm)
}

func (s *RealtimeStream) appendAudio(pcm []int16) error {
	if len(pcm) == 0 {
		return nil
	}
	b := make([]byte, 0, 2*len(pcm))
	for _, v := range pcm {
		b = binary.LittleEndian.AppendUint16(b, uint16(v))
	}
	ev := map[string]any{"type": "input_audio_buffer.append", "audio": base64.StdEncoding.EncodeToString(b)}
	if err := s.write(ev); err != nil {
		return &provider.Error{Provider: "openai-realtime", Op: "stream", Err: err}
	}
	return nil
}

// streamWriteTimeout bounds each write of a Realtime stream, its
// session.update included: a server that stops reading (or never reads)
// fails the write instead of blocking it for ever.
const streamWriteTimeout = DefaultTimeout

// write sends one client event within streamWriteTimeout.
func (s *RealtimeStream) write(ev any) error {
	s.conn.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	return s.conn.WriteJSON(ev)
}

// Finish commits the audio and returns its final transcript.
func (s *RealtimeStream) Finish(ctx context.Context) (Transcript, error) {
	if s.sent {
		if err := s.appendAudio(s.rs.Flush(s.pcm[:0])); err != nil {
			return Transcript{}, err
		}
	}
	if err := s.write(map[string]any{"type": "input_audio_buffer.commit"}); err != nil {
		return Transcript{}, &provider.Error{Provider: "openai-realtime", Op: "stream", Err: err}
	}
	select {
	case <-s.finished:
	case <-s.done:
	case <-ctx.Done():
		s.Close()
		return Transcript{}, &provider.Error{Provider: "openai-realtime", Op: "wait for the transcript", Err: ctx.Err()}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.empty {
		return Transcript{}, nil
	}
	text, ok := s.completed[s.committed]
	if s.committed == "" || !ok {
		if s.err != nil {
			return Transcript{}, s.err
		}
		return Transcript{}, &provider.Error{Provider: "openai-realtime", Op: "wait for the transcript", Err: errors.New("the session ended without a transcript")}
	}
	// Earlier items (a server that segments on its own) come first.
	var parts []string
	for _, id := range s.items {
		if t := strings.TrimSpace(s.completed[id]); t != "" {
			parts = append(parts, t)
		}
		if id == s.committed {
			break
		}
	}
	if len(parts) == 0 {
		parts = []string{strings.TrimSpace(text)}
	}
	out := Transcript{Text: strings.Join(parts, " "), Confidence: 1}
	for _, f := range strings.Fields(out.Text) {
		out.Words = append(out.Words, Word{Text: f, Confidence: 1})
	}
	return out, nil
}

// Close closes the connection and waits for the reader to stop.
func (s *RealtimeStream) Close() error {
	s.closed.Do(func() { s.conn.Close() })
	<-s.done
	return nil
}

func (s *RealtimeStream) finish() { s.finOnce.Do(func() { close(s.finished) }) }

// read runs until the connection closes.
func (s *RealtimeStream) read() {
	defer close(s.done)
	defer close(s.results)
	for {
		_, msg, err := s.conn.ReadMessage()
		if err != nil {
			var ce *websocket.CloseError
			switch {
			case errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure:
			case errors.Is(err, websocket.ErrReadLimit):
				s.fail(tooLarge("openai-realtime", err))
				s.closed.Do(func() { s.conn.Close() })
			default:
				s.fail(&provider.Error{Provider: "openai-realtime", Op: "stream", Err: err})
			}
			return
		}
		var ev realtimeEvent
		if err := json.Unmarshal(msg, &ev); err != nil {
			s.fail(&provider.Error{Provider: "openai-realtime", Op: "decode event", Body: snippet(msg), Err: err})
			s.closed.Do(func() { s.conn.Close() })
			return
		}
		r, ok := s.apply(ev)
		s.mu.Lock()
		over := s.text > MaxText
		s.mu.Unlock()
		if over {
			s.fail(tooLarge("openai-realtime", nil))
			s.closed.Do(func() { s.conn.Close() })
			return
		}
		if ok {
			select {
			case s.results <- r:
			default:
			}
		}
	}
}

// apply takes one server event; ok says it is a result to deliver.
func (s *RealtimeStream) apply(ev realtimeEvent) (Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := func(id string) {
		if _, ok := s.partial[id]; !ok {
			s.partial[id] = ""
			s.items = append(s.items, id)
		}
	}
	switch ev.Type {
	case "conversation.item.input_audio_transcription.delta":
		seen(ev.ItemID)
		s.partial[ev.ItemID] += ev.Delta
		s.text += len(ev.Delta)
		return Result{Kind: Interim, Transcript: Transcript{Text: s.soFar()}}, true
	case "conversation.item.input_audio_transcription.completed":
		seen(ev.ItemID)
		s.completed[ev.ItemID] = ev.Transcript
		s.text += len(ev.Transcript)
		if ev.ItemID == s.committed {
			s.finish()
		}
		return Result{Kind: Final, Transcript: Transcript{Text: strings.TrimSpace(ev.Transcript), Confidence: 1}}, true
	case "conversation.item.input_audio_transcription.failed":
		s.failLocked(&provider.Error{Provider: "openai-realtime", Op: "transcribe", Err: fmt.Errorf("item %s: %s", ev.ItemID, ev.errorText())})
		s.finish()
	case "input_audio_buffer.committed":
		seen(ev.ItemID)
		s.committed = ev.ItemID
		if _, ok := s.completed[ev.ItemID]; ok {
			s.finish()
		}
	case "error":
		if ev.Error != nil && ev.Error.Code == "input_audio_buffer_commit_empty" {
			s.empty = true
		} else {
			s.failLocked(&provider.Error{Provider: "openai-realtime", Op: "stream", Err: errors.New(ev.errorText())})
		}
		s.finish()
	}
	return Result{}, false
}

// soFar is the text heard so far: completed items, then the others' deltas.
func (s *RealtimeStream) soFar() string {
	var parts []string
	for _, id := range s.items {
		t, ok := s.completed[id]
		if !ok {
			t = s.partial[id]
		}
		if t = strings.TrimSpace(t); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}

func (ev realtimeEvent) errorText() string {
	if ev.Error == nil {
		return "unknown error"
	}
	if ev.Error.Code != "" {
		return ev.Error.Code + ": " + ev.Error.Message
	}
	return ev.Error.Message
}

func (s *RealtimeStream) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failLocked(err)
}

func (s *RealtimeStream) failLocked(err error) {
	if s.err == nil {
		s.err = err
	}
}
