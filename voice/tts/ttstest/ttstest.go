// Package ttstest runs local fakes of speech synthesis services that speak
// their wire formats (OpenAI's /v1/audio/speech, ElevenLabs' streaming
// endpoint) and answer with a tone as long as the text would take to say.
package ttstest

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Failure makes a fake misbehave.
type Failure int

// Failures.
const (
	OK        Failure = iota
	Status500         // HTTP 500 with a JSON error
	Malformed         // a JSON body where audio belongs
	Hang              // never answer
	// Endless answers with speech that never ends: the text's tone, then
	// more of it until the client goes away.
	Endless
)

// Request is one request a fake received.
type Request struct {
	Path   string
	Query  string
	Header http.Header
	Body   map[string]any
}

// Server is a fake speech service.
type Server struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []Request
	failure Failure
	delay   time.Duration
	hang    chan struct{}
}

// Rate is the sample rate of the fakes' raw PCM.
const Rate = 24000

// PerChar is how long the fakes' speech lasts per character of text.
const PerChar = 60 * time.Millisecond

// New starts a fake serving both POST /v1/audio/speech (OpenAI) and
// POST /v1/text-to-speech/{voice}/stream (ElevenLabs).
func New() *Server {
	s := &Server{hang: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/audio/speech", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "input") })
	mux.HandleFunc("POST /v1/text-to-speech/{voice}/stream", func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, "text") })
	s.Server = httptest.NewServer(mux)
	return s
}

// Close stops the server, releasing hung requests first.
func (s *Server) Close() { close(s.hang); s.Server.Close() }

// SetFailure changes how the fake misbehaves from now on.
func (s *Server) SetFailure(f Failure) { s.mu.Lock(); s.failure = f; s.mu.Unlock() }

// SetDelay makes the fake wait d before the first audio.
func (s *Server) SetDelay(d time.Duration) { s.mu.Lock(); s.delay = d; s.mu.Unlock() }

// Requests returns what the fake received.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, field string) {
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	failure, delay := s.failure, s.delay
	s.mu.Unlock()
	switch failure {
	case Status500:
		http.Error(w, `{"error":{"message":"fake failure"}}`, http.StatusInternalServerError)
		return
	case Hang:
		select {
		case <-r.Context().Done():
		case <-s.hang:
		}
		return
	case Malformed:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"detail": {"status": "quota_exceeded"`)
		return
	}
	text, _ := body[field].(string)
	if strings.TrimSpace(text) == "" {
		http.Error(w, `{"error":{"message":"empty input"}}`, http.StatusBadRequest)
		return
	}
	select {
	case <-time.After(delay):
	case <-r.Context().Done():
		return
	}
	w.Header().Set("Content-Type", "audio/pcm")
	pcm := Tone(time.Duration(len(text)) * PerChar)
	// Stream in 100 ms chunks, as the real services do.
	fl, _ := w.(http.Flusher)
	chunk := Rate / 10 * 2
	for i := 0; i < len(pcm) || failure == Endless; i += chunk {
		if i >= len(pcm) {
			i = 0
		}
		if _, err := w.Write(pcm[i:min(i+chunk, len(pcm))]); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// Tone is d of a 240 Hz tone at -12 dBFS as 16-bit little-endian PCM at
// Rate. It is made from one period, so the fake costs next to nothing.
func Tone(d time.Duration) []byte {
	const period = Rate / 240
	var cycle [2 * period]byte
	for i := range period {
		v := int16(8000 * math.Sin(2*math.Pi*float64(i)/period))
		binary.LittleEndian.PutUint16(cycle[2*i:], uint16(v))
	}
	n := int(d.Seconds() * Rate)
	b := make([]byte, 2*n)
	for i := 0; i < len(b); i += len(cycle) {
		copy(b[i:], cycle[:])
	}
	return b
}
