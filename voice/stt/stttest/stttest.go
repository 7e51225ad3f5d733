// Package stttest runs local fakes of speech-to-text services that speak
// their real wire formats (Deepgram's streaming WebSocket and batch API,
// OpenAI's /v1/audio/transcriptions) and record the audio they receive.
package stttest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Failure makes a fake misbehave.
type Failure int

// Failures.
const (
	OK        Failure = iota
	Status500         // HTTP 500 (and a refused WebSocket upgrade)
	Malformed         // a body or message that is not valid JSON
	Hang              // never answer
	// RefuseStream refuses streaming (the WebSocket upgrade fails with
	// HTTP 500); the batch API answers.
	RefuseStream
	// DropStream drops a stream's connection when its audio ends, without
	// a final result; the batch API answers.
	DropStream
	// Oversized answers a stream's audio with one message far larger
	// than any transcript (OversizedText bytes of text); the batch API
	// answers.
	Oversized
	// Flood answers the end of a stream's audio with results that never
	// end (Deepgram: final results; Realtime: transcript deltas), until the
	// client goes away; the batch API answers.
	Flood
	// OversizedBatch answers the batch API with a transcript of
	// OversizedText bytes (the words' timings are the reply's).
	OversizedBatch
	// HangFinal takes a stream's audio (with interim results) and never
	// sends its final result; the batch API answers.
	HangFinal
)

// OversizedText is the length of the transcript an Oversized stream sends.
const OversizedText = 2 << 20

// floodWord is what a Flood or Oversized stream says again and again.
const floodWord = "again "

// Call is one request a fake received.
type Call struct {
	Stream bool
	Query  url.Values
	Header http.Header
	// Form holds multipart fields other than the file (OpenAI).
	Form  map[string][]string
	Audio audio.PCM
}

// Replier gives the transcript for received audio.
type Replier func(c Call) string

type base struct {
	*httptest.Server
	mu      sync.Mutex
	calls   []Call
	reply   Replier
	failure Failure
	delay   time.Duration
	// finalize is the streaming final's delay for audio that came in real
	// time (see Deepgram.SetFinalize).
	finalize time.Duration
	hang     chan struct{}
}

func (b *base) record(c Call) {
	b.mu.Lock()
	b.calls = append(b.calls, c)
	b.mu.Unlock()
}

// Calls returns the requests received so far.
func (b *base) Calls() []Call {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Call(nil), b.calls...)
}

// SetFailure changes how the fake misbehaves from now on.
func (b *base) SetFailure(f Failure) { b.mu.Lock(); b.failure = f; b.mu.Unlock() }

// SetDelay makes the fake wait d before answering: the time it takes to
// transcribe an utterance it receives whole.
func (b *base) SetDelay(d time.Duration) { b.mu.Lock(); b.delay = d; b.mu.Unlock() }

// SetFinalize sets how long a stream's final result takes after the end
// of audio that came in real time. Unset (0), every final takes the
// transcription delay (SetDelay), as if the fake transcribed only once
// the audio ended. A streaming recogniser
// works on the audio as it arrives, so at the end only the backlog is
// left: the final comes finalize plus the transcription delay (SetDelay)
// scaled by the share of the audio that arrived faster than real time
// (all of it when an utterance is sent whole after it ended, a pre-roll's
// worth when it is streamed while the player speaks).
func (b *base) SetFinalize(d time.Duration) { b.mu.Lock(); b.finalize = d; b.mu.Unlock() }

func (b *base) state() (Failure, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failure, b.delay
}

// finalDelay is how long a stream's final result takes after the end of
// its audio: dur seconds of audio received over elapsed wall time.
func (b *base) finalDelay(dur float64, elapsed time.Duration) time.Duration {
	b.mu.Lock()
	delay, finalize := b.delay, b.finalize
	b.mu.Unlock()
	if finalize == 0 || dur <= 0 {
		return finalize + delay
	}
	backlog := min(max(dur-elapsed.Seconds(), 0), dur)
	return finalize + time.Duration(float64(delay)*backlog/dur)
}

// partialWords are the words of text heard in the first dur seconds of
// an utterance: the fake speaks at WordsPerSecond, and always has a word.
func partialWords(text string, dur float64) string {
	ws := strings.Fields(text)
	n := min(max(int(dur*WordsPerSecond), 1), len(ws))
	return strings.Join(ws[:n], " ")
}

// WordsPerSecond is the speaking rate the fakes' interim results assume.
const WordsPerSecond = 2.5

// InterimEvery is how much audio a fake stream takes between interim
// results.
const InterimEvery = 0.5

// Close stops the server, releasing hung requests first.
func (b *base) Close() {
	close(b.hang)
	b.Server.Close()
}

func (b *base) wait(r *http.Request, d time.Duration) bool {
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
	case <-b.hang:
	}
	return false
}

// words spreads a transcript's words evenly over dur.
func words(text string, dur float64, offset float64) []map[string]any {
	ws := strings.Fields(text)
	out := make([]map[string]any, 0, len(ws))
	for i, w := range ws {
		start := offset + dur*float64(i)/float64(len(ws))
		end := offset + dur*float64(i+1)/float64(len(ws))
		conf := 0.95
		if strings.ToLower(w) != w { // capitalised words are names: less sure
			conf = 0.62
		}
		out = append(out, map[string]any{
			"word": strings.ToLower(strings.Trim(w, ".,!?")), "punctuated_word": w,
			"start": start, "end": end, "confidence": conf,
		})
	}
	return out
}

// Deepgram is a fake Deepgram: GET /v1/listen upgrades to the streaming
// protocol, POST /v1/listen is the batch API.
type Deepgram struct{ base }

// NewDeepgram starts a fake Deepgram that answers reply's transcript.
func NewDeepgram(reply Replier) *Deepgram {
	d := &Deepgram{base{reply: reply, hang: make(chan struct{})}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/listen", d.listen)
	d.Server = httptest.NewServer(mux)
	return d
}

var upgrader = websocket.Upgrader{}

func (d *Deepgram) listen(w http.ResponseWriter, r *http.Request) {
	failure, delay := d.state()
	if failure == Status500 {
		http.Error(w, `{"err_code":"INTERNAL","err_msg":"fake failure"}`, http.StatusInternalServerError)
		return
	}
	if failure == Hang {
		d.wait(r, time.Hour)
		return
	}
	if websocket.IsWebSocketUpgrade(r) {
		if failure == RefuseStream {
			http.Error(w, `{"err_code":"INTERNAL","err_msg":"fake streaming failure"}`, http.StatusInternalServerError)
			return
		}
		d.stream(w, r, failure, delay)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	body, _ := io.ReadAll(r.Body)
	pcm, err := audio.DecodeWAV(body)
	if err != nil {
		http.Error(w, `{"err_code":"Bad Request","err_msg":"`+err.Error()+`"}`, http.StatusBadRequest)
		return
	}
	c := Call{Query: r.URL.Query(), Header: r.Header.Clone(), Audio: pcm}
	d.record(c)
	if !d.wait(r, delay) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if failure == Malformed {
		io.WriteString(w, `{"results": {"channels": [`)
		return
	}
	text := d.reply(c)
	shown := text
	if failure == OversizedBatch {
		shown = strings.Repeat(floodWord, OversizedText/len(floodWord))
	}
	json.NewEncoder(w).Encode(map[string]any{
		"metadata": map[string]any{"request_id": "fake", "duration": pcm.Duration(), "channels": 1},
		"results": map[string]any{"channels": []any{map[string]any{"alternatives": []any{map[string]any{
			"transcript": shown, "confidence": 0.9, "words": words(text, pcm.Duration(), 0),
		}}}}},
	})
}

func (d *Deepgram) stream(w http.ResponseWriter, r *http.Request, failure Failure, delay time.Duration) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	c := Call{Stream: true, Query: r.URL.Query(), Header: r.Header.Clone()}
	rate := 16000
	fmt.Sscan(c.Query.Get("sample_rate"), &rate)
	c.Audio.Rate = rate
	var sent float64 // seconds of audio already given an interim result
	var first time.Time
	send := func(v any) error { return conn.WriteJSON(v) }
	result := func(text string, start, dur float64, final bool) map[string]any {
		return map[string]any{
			"type": "Results", "channel_index": []int{0, 1}, "duration": dur, "start": start,
			"is_final": final, "speech_final": final, "from_finalize": false,
			"channel": map[string]any{"alternatives": []any{map[string]any{
				"transcript": text, "confidence": 0.9, "words": words(text, dur, start)}}},
			"metadata": map[string]any{"request_id": "fake", "model_info": map[string]any{"name": "fake"}},
		}
	}
	for {
		typ, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		if typ == websocket.BinaryMessage {
			if first.IsZero() {
				first = time.Now()
			}
			for i := 0; i+1 < len(msg); i += 2 {
				c.Audio.Samples = append(c.Audio.Samples, int16(binary.LittleEndian.Uint16(msg[i:])))
			}
			if c.Audio.Duration()-sent >= InterimEvery {
				partial := partialWords(d.reply(c), c.Audio.Duration())
				if send(result(partial, 0, c.Audio.Duration(), false)) != nil {
					return
				}
				sent = c.Audio.Duration()
			}
			continue
		}
		var ctl struct{ Type string }
		if json.Unmarshal(msg, &ctl) != nil || ctl.Type != "CloseStream" {
			continue
		}
		d.record(c)
		if failure == DropStream {
			return
		}
		if failure == HangFinal {
			d.wait(r, time.Hour)
			return
		}
		var elapsed time.Duration
		if !first.IsZero() {
			elapsed = time.Since(first)
		}
		if !d.wait(r, d.finalDelay(c.Audio.Duration(), elapsed)) {
			return
		}
		if failure == Malformed {
			conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"Results","channel":{"alternatives":[`))
			return
		}
		if failure == Flood {
			for at := 0.0; send(result(floodWord, at, 0.1, true)) == nil; at += 0.1 {
			}
			return
		}
		text := d.reply(c)
		dur := c.Audio.Duration()
		if failure == Oversized {
			m := result(text, 0, dur, true)
			m["channel"] = map[string]any{"alternatives": []any{map[string]any{
				"transcript": strings.Repeat(floodWord, OversizedText/len(floodWord)), "confidence": 0.9}}}
			send(m)
			return
		}
		send(result(text, 0, dur, true))
		send(map[string]any{"type": "UtteranceEnd", "channel": []int{0, 1}, "last_word_end": dur})
		send(map[string]any{"type": "Metadata", "request_id": "fake", "duration": dur, "channels": 1})
		conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
		return
	}
}

// OpenAI is a fake OpenAI-compatible transcription server:
// POST /v1/audio/transcriptions with a multipart form, and the Realtime
// API's transcription sessions (GET /v1/realtime?intent=transcription).
type OpenAI struct {
	base
	noSpeech float64
}

// NewOpenAI starts a fake that answers reply's transcript in the format
// the request asks for (json, text or verbose_json).
func NewOpenAI(reply Replier) *OpenAI {
	o := &OpenAI{base: base{reply: reply, hang: make(chan struct{})}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/transcriptions", o.transcribe)
	mux.HandleFunc("GET /v1/realtime", o.realtime)
	o.Server = httptest.NewServer(mux)
	return o
}

// SetNoSpeech sets the no_speech_prob the fake reports.
func (o *OpenAI) SetNoSpeech(p float64) { o.mu.Lock(); o.noSpeech = p; o.mu.Unlock() }

// URL is the base URL clients use ("…/v1").
func (o *OpenAI) URL() string { return o.Server.URL + "/v1" }

func (o *OpenAI) transcribe(w http.ResponseWriter, r *http.Request) {
	failure, delay := o.state()
	if failure == Status500 {
		http.Error(w, `{"error":{"message":"fake failure","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	if failure == Hang {
		o.wait(r, time.Hour)
		return
	}
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		http.Error(w, `{"error":{"message":"`+err.Error()+`"}}`, http.StatusBadRequest)
		return
	}
	f, _, err := r.FormFile("file")
	if err != nil {
		http.Error(w, `{"error":{"message":"file is required"}}`, http.StatusBadRequest)
		return
	}
	b, _ := io.ReadAll(f)
	pcm, err := audio.DecodeWAV(b)
	if err != nil {
		http.Error(w, `{"error":{"message":"`+err.Error()+`"}}`, http.StatusBadRequest)
		return
	}
	c := Call{Header: r.Header.Clone(), Form: r.MultipartForm.Value, Audio: pcm}
	o.record(c)
	if !o.wait(r, delay) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if failure == Malformed {
		io.WriteString(w, `{"text": "unterminated`)
		return
	}
	text := o.reply(c)
	shown := text
	if failure == OversizedBatch {
		shown = strings.Repeat(floodWord, OversizedText/len(floodWord))
	}
	switch r.FormValue("response_format") {
	case "text":
		io.WriteString(w, shown)
	case "verbose_json":
		o.mu.Lock()
		ns := o.noSpeech
		o.mu.Unlock()
		dur := pcm.Duration()
		var ws []map[string]any
		for _, x := range words(text, dur, 0) {
			ws = append(ws, map[string]any{"word": x["punctuated_word"], "start": x["start"], "end": x["end"]})
		}
		json.NewEncoder(w).Encode(map[string]any{
			"task": "transcribe", "language": "english", "duration": dur, "text": shown,
			"segments": []any{map[string]any{"id": 0, "seek": 0, "start": 0, "end": dur, "text": shown,
				"tokens": []int{}, "temperature": 0, "avg_logprob": -0.25, "compression_ratio": 1.1, "no_speech_prob": ns}},
			"words": ws,
		})
	default:
		json.NewEncoder(w).Encode(map[string]any{"text": shown})
	}
}

// realtime is a Realtime API transcription session: session.update, then
// input_audio_buffer.append (24 kHz PCM, base64) with a delta of the words
// heard so far every InterimEvery of audio, and on
// input_audio_buffer.commit the committed item and, after the final
// delay (SetFinalize, SetDelay), its completed transcript. The Call
// records the session's transcription settings in Form (model, prompt,
// language) and its audio at 24 kHz.
func (o *OpenAI) realtime(w http.ResponseWriter, r *http.Request) {
	failure, _ := o.state()
	switch {
	case failure == Hang:
		o.wait(r, time.Hour)
		return
	case failure == Status500 || failure == RefuseStream:
		http.Error(w, `{"error":{"message":"fake failure","type":"server_error"}}`, http.StatusInternalServerError)
		return
	case r.URL.Query().Get("intent") != "transcription":
		http.Error(w, `{"error":{"message":"want intent=transcription"}}`, http.StatusBadRequest)
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer conn.Close()
	c := Call{Stream: true, Query: r.URL.Query(), Header: r.Header.Clone(), Form: map[string][]string{}}
	c.Audio.Rate = 24000
	const item = "item_fake_1"
	var sent float64 // seconds of audio already given a delta
	var said string  // the words already sent as deltas
	var first time.Time
	fail := func(code, msg string) {
		conn.WriteJSON(map[string]any{"type": "error", "event_id": "event_fake",
			"error": map[string]any{"type": "invalid_request_error", "code": code, "message": msg}})
	}
	delta := func(text string) error {
		if !strings.HasPrefix(text, said) || text == said {
			return nil
		}
		d := text[len(said):]
		said = text
		return conn.WriteJSON(map[string]any{"type": "conversation.item.input_audio_transcription.delta",
			"event_id": "event_fake", "item_id": item, "content_index": 0, "delta": d})
	}
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var ev struct {
			Type    string `json:"type"`
			Audio   string `json:"audio"`
			Session struct {
				Type  string `json:"type"`
				Audio struct {
					Input struct {
						Format struct {
							Type string `json:"type"`
							Rate int    `json:"rate"`
						} `json:"format"`
						Transcription struct {
							Model, Prompt, Language string
						} `json:"transcription"`
					} `json:"input"`
				} `json:"audio"`
			} `json:"session"`
		}
		if json.Unmarshal(msg, &ev) != nil {
			fail("invalid_json", "the event is not valid JSON")
			continue
		}
		switch ev.Type {
		case "session.update":
			in := ev.Session.Audio.Input
			if ev.Session.Type != "transcription" || in.Format.Type != "audio/pcm" || in.Format.Rate != 24000 {
				fail("invalid_value", "want a transcription session with 24 kHz audio/pcm")
				continue
			}
			c.Form["model"] = []string{in.Transcription.Model}
			c.Form["prompt"] = []string{in.Transcription.Prompt}
			c.Form["language"] = []string{in.Transcription.Language}
			conn.WriteJSON(map[string]any{"type": "session.updated", "event_id": "event_fake", "session": map[string]any{"type": "transcription"}})
		case "input_audio_buffer.append":
			b, err := base64.StdEncoding.DecodeString(ev.Audio)
			if err != nil {
				fail("invalid_value", "audio is not base64")
				continue
			}
			if first.IsZero() {
				first = time.Now()
			}
			for i := 0; i+1 < len(b); i += 2 {
				c.Audio.Samples = append(c.Audio.Samples, int16(binary.LittleEndian.Uint16(b[i:])))
			}
			if c.Audio.Duration()-sent >= InterimEvery {
				sent = c.Audio.Duration()
				if delta(partialWords(o.reply(c), c.Audio.Duration())) != nil {
					return
				}
			}
		case "input_audio_buffer.commit":
			if len(c.Audio.Samples) == 0 {
				fail("input_audio_buffer_commit_empty", "buffer too small")
				continue
			}
			o.record(c)
			if failure == DropStream {
				return
			}
			if failure == HangFinal {
				o.wait(r, time.Hour)
				return
			}
			conn.WriteJSON(map[string]any{"type": "input_audio_buffer.committed", "event_id": "event_fake",
				"previous_item_id": nil, "item_id": item})
			var elapsed time.Duration
			if !first.IsZero() {
				elapsed = time.Since(first)
			}
			if !o.wait(r, o.finalDelay(c.Audio.Duration(), elapsed)) {
				return
			}
			if failure == Malformed {
				conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"conversation.item.input_audio_transcription.completed","transcript":`))
				return
			}
			if failure == Flood {
				for conn.WriteJSON(map[string]any{"type": "conversation.item.input_audio_transcription.delta",
					"event_id": "event_fake", "item_id": item, "content_index": 0, "delta": floodWord}) == nil {
				}
				return
			}
			text := o.reply(c)
			if failure == Oversized {
				text = strings.Repeat(floodWord, OversizedText/len(floodWord))
			}
			conn.WriteJSON(map[string]any{"type": "conversation.item.input_audio_transcription.completed",
				"event_id": "event_fake", "item_id": item, "content_index": 0, "transcript": text})
		}
	}
}
