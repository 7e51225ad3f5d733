// Package llmtest is a local fake of an OpenAI-compatible chat-completions
// endpoint for tests. It speaks the real wire format — JSON requests,
// server-sent-event streams of chat.completion.chunk objects ending in
// [DONE], tool-call deltas, usage chunks, and OpenAI-style error bodies — so
// the code under test runs its real client against it.
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Request is a chat-completions request as the fake received it.
type Request = openai.ChatCompletionRequest

// AsksJSON reports whether req asks for a JSON object (response_format
// json_object).
func AsksJSON(req Request) bool {
	return req.ResponseFormat != nil && req.ResponseFormat.Type == openai.ChatCompletionResponseFormatTypeJSONObject
}

// Reply is what the fake answers to one request.
type Reply struct {
	// Text is streamed in pieces of about ChunkSize characters.
	Text string
	// ToolCalls are sent as tool-call deltas (before any text).
	ToolCalls []Call
	// Status, if not 0 or 200, makes the fake answer with that HTTP status
	// and an OpenAI error body; RetryAfter, if set, is sent as its
	// Retry-After header.
	Status     int
	RetryAfter string
	// Delay holds the response back before its first byte; ChunkDelay is
	// the pause between chunks.
	Delay, ChunkDelay time.Duration
	// Broken sends a malformed event after the first chunk.
	Broken bool
	// NoUsage omits the usage chunk.
	NoUsage bool
	// Endless streams Text again and again, ignoring max_tokens, until the
	// client goes away.
	Endless bool
}

// Call is a function call the model makes.
type Call struct {
	Name string
	Args string
}

// Handler picks the reply to a request; n counts requests from 1.
type Handler func(n int, req openai.ChatCompletionRequest) Reply

// Server is a running fake.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	handler  Handler
	requests []openai.ChatCompletionRequest
}

// New starts a fake that answers with h. Close it when done.
func New(h Handler) *Server {
	s := &Server{handler: h}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.Server = httptest.NewServer(mux)
	return s
}

// Script returns a handler that gives the replies in order and then repeats
// the last.
func Script(replies ...Reply) Handler {
	return func(n int, _ openai.ChatCompletionRequest) Reply {
		if n-1 < len(replies) {
			return replies[n-1]
		}
		return replies[len(replies)-1]
	}
}

// URL is the base URL to configure clients with (…/v1).
func (s *Server) URL() string { return s.Server.URL + "/v1" }

// Requests returns the requests received so far.
func (s *Server) Requests() []openai.ChatCompletionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]openai.ChatCompletionRequest(nil), s.requests...)
}

// SetHandler replaces the handler.
func (s *Server) SetHandler(h Handler) {
	s.mu.Lock()
	s.handler = h
	s.mu.Unlock()
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	h := s.handler
	s.mu.Unlock()
	reply := h(n, req)

	if reply.Delay > 0 {
		select {
		case <-time.After(reply.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		if reply.RetryAfter != "" {
			w.Header().Set("Retry-After", reply.RetryAfter)
		}
		writeError(w, reply.Status, fmt.Sprintf("fake error %d", reply.Status))
		return
	}
	if !req.Stream {
		writeCompletion(w, req, reply)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		if reply.ChunkDelay > 0 {
			select {
			case <-time.After(reply.ChunkDelay):
			case <-r.Context().Done():
				return false
			}
		}
		return true
	}
	chunk := func(d openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) openai.ChatCompletionStreamResponse {
		return openai.ChatCompletionStreamResponse{ID: "chatcmpl-fake", Object: "chat.completion.chunk",
			Created: time.Now().Unix(), Model: req.Model,
			Choices: []openai.ChatCompletionStreamChoice{{Index: 0, Delta: d, FinishReason: finish}}}
	}
	if !send(chunk(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}, "")) {
		return
	}
	for i, c := range reply.ToolCalls {
		idx := i
		call := openai.ToolCall{Index: &idx, ID: fmt.Sprintf("call_%d_%d", n, i), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name}}
		if !send(chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{call}}, "")) {
			return
		}
		// Arguments arrive in two pieces, as real servers split them.
		half := len(c.Args) / 2
		for _, part := range []string{c.Args[:half], c.Args[half:]} {
			d := openai.ToolCall{Index: &idx, Function: openai.FunctionCall{Arguments: part}}
			if !send(chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{d}}, "")) {
				return
			}
		}
	}
	for reply.Endless {
		for _, piece := range pieces(reply.Text, 12) {
			if !send(chunk(openai.ChatCompletionStreamChoiceDelta{Content: piece}, "")) {
				return
			}
		}
	}
	for i, piece := range pieces(reply.Text, 12) {
		if !send(chunk(openai.ChatCompletionStreamChoiceDelta{Content: piece}, "")) {
			return
		}
		if reply.Broken && i == 0 {
			fmt.Fprint(w, "data: {\"choices\": [{\"delta\": {\"content\": \n\n")
			if flusher != nil {
				flusher.Flush()
			}
			return
		}
	}
	finish := openai.FinishReasonStop
	if len(reply.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	send(chunk(openai.ChatCompletionStreamChoiceDelta{}, finish))
	if !reply.NoUsage && req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(openai.ChatCompletionStreamResponse{ID: "chatcmpl-fake", Object: "chat.completion.chunk", Model: req.Model,
			Choices: []openai.ChatCompletionStreamChoice{},
			Usage: &openai.Usage{PromptTokens: PromptTokens(req), CompletionTokens: (len(reply.Text) + 3) / 4,
				TotalTokens: PromptTokens(req) + (len(reply.Text)+3)/4}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// PromptTokens is the fake's token count for a request's messages: one
// token per four characters.
func PromptTokens(req openai.ChatCompletionRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
	}
	return (n + 3) / 4
}

func writeCompletion(w http.ResponseWriter, req openai.ChatCompletionRequest, reply Reply) {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply.Text}
	finish := openai.FinishReasonStop
	for i, c := range reply.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: fmt.Sprintf("call_%d", i), Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Args}})
		finish = openai.FinishReasonToolCalls
	}
	resp := openai.ChatCompletionResponse{ID: "chatcmpl-fake", Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   openai.Usage{PromptTokens: PromptTokens(req), CompletionTokens: (len(reply.Text) + 3) / 4}}
	w.Header().Set("Content-Type", "application/json")
	if reply.Broken {
		fmt.Fprint(w, `{"choices": [`)
		return
	}
	_ = json.NewEncoder(w).Encode(resp)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":"fake_error","code":"%d"}}`, msg, status)
}

// pieces splits s into chunks of about n bytes on rune boundaries.
func pieces(s string, n int) []string {
	var out []string
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
		if b.Len() >= n {
			out = append(out, b.String())
			b.Reset()
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
