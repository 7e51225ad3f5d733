// Package realtimetest is a fake OpenAI Realtime server for tests. It
// listens on loopback, speaks the Realtime API's WebSocket event protocol
// (GA event names, or the beta ones), and plays scripted turns: it buffers
// the appended audio, answers a commit with the input transcription, and
// answers response.create with synthesised audio deltas and transcript
// deltas, or with a function call whose output it waits for. It honours
// response.cancel and conversation.item.truncate, and records everything
// the client sent for the test to check.
//
// It does not think: what it says is scripted by [Reply].
package realtimetest

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// Rate is the PCM rate of the protocol's audio.
const Rate = 24000

// Reply scripts one answer of the model.
type Reply struct {
	// Text is the answer's transcript.
	Text string
	// Audio is the answer's speech, 24 kHz mono; nil generates a voiced
	// waveform of about 70 ms per character of Text ([Waveform]).
	Audio []int16
	// Call, when set, makes the answer a function call first: the server
	// sends the call, ends that response, waits for the call's output and
	// the client's next response.create, then speaks Text.
	Call *Call
	// Next, with Call, is what the response after the call's output
	// plays instead of Text and Audio (e.g. another call).
	Next *Reply
	// HoldAfter, when positive, stops the audio after that many deltas
	// until [Server.Release] or a response.cancel.
	HoldAfter int
}

// Call is a function call the model makes.
type Call struct {
	Name      string
	Arguments string // JSON
}

// Options configure a [Server].
type Options struct {
	// APIKey, when set, is the bearer token a client must present.
	APIKey string
	// Beta makes the server use the beta event names
	// (response.audio.delta…) and expect the beta session shape.
	Beta bool
	// Transcript is the input transcription of every committed turn.
	Transcript string
	// Replies are the answers of successive turns; after the last one,
	// Default is used.
	Replies []Reply
	// Default is the answer when Replies are used up.
	Default Reply
	// ChunkMs is the audio per delta (default 40 ms).
	ChunkMs int
}

// Truncation is a conversation.item.truncate the server accepted.
type Truncation struct {
	ItemID     string
	AudioEndMs int
	// SentMs is how much of the item's audio the server had sent.
	SentMs int
}

// FunctionOutput is a function_call_output item the client created.
type FunctionOutput struct {
	CallID, Output string
}

// Server is a fake Realtime server. Its methods are safe for concurrent use.
type Server struct {
	opts Options
	hs   *httptest.Server

	mu       sync.Mutex
	changed  chan struct{}
	received []string         // client event types, in order
	sessions []map[string]any // session.update bodies
	commits  [][]int16        // audio of each committed turn
	truncs   []Truncation
	outputs  []FunctionOutput
	cancels  int
	auth     []string // Authorization headers seen
	betaHdr  []string
	models   []string
	turn     int // replies used
	conns    map[*conn]bool
	release  chan struct{}
	idSeq    int
}

// NewServer starts a server on loopback; it is closed when the test ends.
func NewServer(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := Start(opts)
	tb.Cleanup(s.Close)
	return s
}

// Start starts a server on loopback; the caller closes it.
func Start(opts Options) *Server {
	if opts.ChunkMs <= 0 {
		opts.ChunkMs = 40
	}
	s := &Server{opts: opts, changed: make(chan struct{}), conns: map[*conn]bool{}, release: make(chan struct{})}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the server's ws:// endpoint.
func (s *Server) URL() string { return "ws" + strings.TrimPrefix(s.hs.URL, "http") + "/v1/realtime" }

// Close disconnects every client and stops the server.
func (s *Server) Close() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.ws.Close()
	}
	s.hs.Close()
}

// Release lets held replies go on.
func (s *Server) Release() {
	s.mu.Lock()
	close(s.release)
	s.release = make(chan struct{})
	s.mu.Unlock()
}

// Send sends a raw message to every connected client (for error and
// malformed-event tests).
func (s *Server) Send(raw string) {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.writeRaw([]byte(raw))
	}
}

// Disconnect closes every client connection abruptly.
func (s *Server) Disconnect() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.ws.Close()
	}
}

// State is a copy of what the server has recorded.
type State struct {
	Received  []string
	Sessions  []map[string]any
	Commits   [][]int16
	Truncs    []Truncation
	Outputs   []FunctionOutput
	Cancels   int
	Auth      []string
	BetaHdr   []string
	Models    []string
	Connected int
}

// Count is how many client events of type typ were received.
func (st State) Count(typ string) int {
	n := 0
	for _, t := range st.Received {
		if t == typ {
			n++
		}
	}
	return n
}

// State returns a copy of the recorded state.
func (s *Server) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return State{
		Received: append([]string(nil), s.received...), Sessions: append([]map[string]any(nil), s.sessions...),
		Commits: append([][]int16(nil), s.commits...), Truncs: append([]Truncation(nil), s.truncs...),
		Outputs: append([]FunctionOutput(nil), s.outputs...), Cancels: s.cancels,
		Auth: append([]string(nil), s.auth...), BetaHdr: append([]string(nil), s.betaHdr...),
		Models: append([]string(nil), s.models...), Connected: len(s.conns),
	}
}

// Wait blocks until cond holds for the recorded state or ctx ends; it
// reports whether cond held.
func (s *Server) Wait(ctx context.Context, cond func(State) bool) bool {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s.State()) {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// record changes state under the lock and wakes waiters.
func (s *Server) record(f func()) {
	s.mu.Lock()
	f()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idSeq++
	return fmt.Sprintf("%s_%04d", prefix, s.idSeq)
}

func (s *Server) nextReply() Reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn < len(s.opts.Replies) {
		r := s.opts.Replies[s.turn]
		s.turn++
		return r
	}
	return s.opts.Default
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	s.record(func() {
		s.auth = append(s.auth, auth)
		s.betaHdr = append(s.betaHdr, r.Header.Get("OpenAI-Beta"))
		s.models = append(s.models, r.URL.Query().Get("model"))
	})
	if s.opts.APIKey != "" && auth != "Bearer "+s.opts.APIKey {
		http.Error(w, `{"error":{"type":"invalid_request_error","code":"invalid_api_key","message":"Incorrect API key provided"}}`, http.StatusUnauthorized)
		return
	}
	if r.URL.Query().Get("model") == "" {
		http.Error(w, `{"error":{"message":"missing model"}}`, http.StatusBadRequest)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	c := &conn{s: s, ws: ws, items: map[string]int{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	s.record(func() { s.conns[c] = true })
	defer func() {
		c.cancel()
		c.wg.Wait()
		ws.Close()
		s.record(func() { delete(s.conns, c) })
	}()
	c.send(map[string]any{"type": "session.created", "session": map[string]any{
		"type": "realtime", "object": "realtime.session", "id": s.newID("sess"), "model": r.URL.Query().Get("model"),
	}})
	c.readLoop()
}

// conn is one client connection.
type conn struct {
	s       *Server
	ws      *websocket.Conn
	writeMu sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup // the response goroutine

	mu       sync.Mutex
	buf      []int16
	items    map[string]int // item id → samples sent
	active   string         // response in progress
	waiting  string         // call id whose output the next response needs
	cancelCh chan struct{}
}

func (c *conn) writeRaw(b []byte) {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_ = c.ws.WriteMessage(websocket.TextMessage, b)
}

func (c *conn) send(ev map[string]any) {
	ev["event_id"] = c.s.newID("event")
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err) // our own maps always marshal
	}
	c.writeRaw(b)
}

// name returns a server event's name in the server's dialect.
func (c *conn) name(ga string) string {
	if !c.s.opts.Beta {
		return ga
	}
	switch ga {
	case "response.output_audio.delta":
		return "response.audio.delta"
	case "response.output_audio.done":
		return "response.audio.done"
	case "response.output_audio_transcript.delta":
		return "response.audio_transcript.delta"
	case "response.output_audio_transcript.done":
		return "response.audio_transcript.done"
	case "conversation.item.added":
		return "conversation.item.created"
	}
	return ga
}

func (c *conn) fail(eventID, typ, code, param, msg string) {
	var p any
	if param != "" {
		p = param
	}
	c.send(map[string]any{"type": "error", "error": map[string]any{
		"type": typ, "code": code, "message": msg, "param": p, "event_id": eventID,
	}})
}

func (c *conn) readLoop() {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var ev map[string]any
		if err := json.Unmarshal(data, &ev); err != nil {
			c.fail("", "invalid_request_error", "invalid_json", "", "The event is not valid JSON.")
			continue
		}
		typ, _ := ev["type"].(string)
		id, _ := ev["event_id"].(string)
		c.s.record(func() { c.s.received = append(c.s.received, typ) })
		switch typ {
		case "session.update":
			c.sessionUpdate(id, ev)
		case "input_audio_buffer.append":
			c.appendAudio(id, ev)
		case "input_audio_buffer.commit":
			c.commit(id)
		case "input_audio_buffer.clear":
			c.mu.Lock()
			c.buf = nil
			c.mu.Unlock()
			c.send(map[string]any{"type": "input_audio_buffer.cleared"})
		case "response.create":
			c.responseCreate(id)
		case "response.cancel":
			c.responseCancel(id)
		case "conversation.item.truncate":
			c.truncate(id, ev)
		case "conversation.item.create":
			c.itemCreate(id, ev)
		case "":
			c.fail(id, "invalid_request_error", "invalid_event", "type", "The 'type' field is missing.")
		default:
			c.fail(id, "invalid_request_error", "invalid_event", "type", fmt.Sprintf("Invalid value: '%s'.", typ))
		}
	}
}

func (c *conn) sessionUpdate(id string, ev map[string]any) {
	sess, ok := ev["session"].(map[string]any)
	if !ok {
		c.fail(id, "invalid_request_error", "missing_required_parameter", "session", "Missing required parameter: 'session'.")
		return
	}
	if !c.s.opts.Beta && sess["type"] != "realtime" {
		c.fail(id, "invalid_request_error", "missing_required_parameter", "session.type", "Missing required parameter: 'session.type'.")
		return
	}
	if c.s.opts.Beta {
		if _, ok := sess["audio"]; ok {
			c.fail(id, "invalid_request_error", "unknown_parameter", "session.audio", "Unknown parameter: 'session.audio'.")
			return
		}
	}
	c.s.record(func() { c.s.sessions = append(c.s.sessions, sess) })
	c.send(map[string]any{"type": "session.updated", "session": sess})
}

func (c *conn) appendAudio(id string, ev map[string]any) {
	b64, _ := ev["audio"].(string)
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b)%2 != 0 {
		c.fail(id, "invalid_request_error", "invalid_value", "audio", "Invalid 'audio'. Expected base64-encoded 16-bit PCM.")
		return
	}
	pcm := make([]int16, len(b)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	c.mu.Lock()
	c.buf = append(c.buf, pcm...)
	c.mu.Unlock()
}

func (c *conn) commit(id string) {
	c.mu.Lock()
	buf := c.buf
	c.buf = nil
	c.mu.Unlock()
	if ms := len(buf) * 1000 / Rate; ms < 100 {
		c.fail(id, "invalid_request_error", "input_audio_buffer_commit_empty", "",
			fmt.Sprintf("Error committing input audio buffer: buffer too small. Expected at least 100ms of audio, but buffer only has %dms of audio.", ms))
		return
	}
	item := c.s.newID("item")
	c.s.record(func() { c.s.commits = append(c.s.commits, buf) })
	c.send(map[string]any{"type": "input_audio_buffer.committed", "item_id": item, "previous_item_id": nil})
	c.send(map[string]any{"type": c.name("conversation.item.added"), "item": map[string]any{
		"id": item, "type": "message", "role": "user", "content": []any{map[string]any{"type": "input_audio", "transcript": nil}},
	}})
	if c.s.opts.Transcript != "" {
		c.send(map[string]any{"type": "conversation.item.input_audio_transcription.completed", "item_id": item, "content_index": 0, "transcript": c.s.opts.Transcript})
	}
}

func (c *conn) responseCreate(id string) {
	c.mu.Lock()
	if c.active != "" {
		active := c.active
		c.mu.Unlock()
		c.fail(id, "invalid_request_error", "conversation_already_has_active_response",
			"", fmt.Sprintf("Conversation already has an active response in progress: %s. Wait until the response is finished before creating a new one.", active))
		return
	}
	if c.waiting != "" {
		call := c.waiting
		c.mu.Unlock()
		c.fail(id, "invalid_request_error", "missing_function_call_output", "",
			fmt.Sprintf("(fake) response.create before the output of function call %s.", call))
		return
	}
	resp := c.s.newID("resp")
	c.active = resp
	c.cancelCh = make(chan struct{})
	cancel := c.cancelCh
	c.mu.Unlock()
	reply := c.s.nextReply()
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.respond(resp, reply, cancel)
	}()
}

func (c *conn) responseCancel(id string) {
	c.mu.Lock()
	active, ch := c.active, c.cancelCh
	if active != "" {
		c.cancelCh = nil
	}
	c.mu.Unlock()
	if active == "" || ch == nil {
		c.fail(id, "invalid_request_error", "response_cancel_not_active", "", "Cancellation failed: no active response found.")
		return
	}
	c.s.record(func() { c.s.cancels++ })
	close(ch)
}

func (c *conn) truncate(id string, ev map[string]any) {
	item, _ := ev["item_id"].(string)
	endF, ok := ev["audio_end_ms"].(float64)
	c.mu.Lock()
	sent, known := c.items[item]
	c.mu.Unlock()
	sentMs := sent * 1000 / Rate
	switch {
	case !known:
		c.fail(id, "invalid_request_error", "item_truncate_invalid_item_id", "item_id", fmt.Sprintf("Item with item_id not found: %s", item))
	case !ok || endF < 0 || endF != math.Trunc(endF):
		c.fail(id, "invalid_request_error", "invalid_value", "audio_end_ms", "Invalid 'audio_end_ms': expected a non-negative integer.")
	case int(endF) > sentMs:
		c.fail(id, "invalid_request_error", "invalid_value", "audio_end_ms",
			fmt.Sprintf("audio_end_ms %d is longer than the item's audio (%d ms).", int(endF), sentMs))
	default:
		c.s.record(func() {
			c.s.truncs = append(c.s.truncs, Truncation{ItemID: item, AudioEndMs: int(endF), SentMs: sentMs})
		})
		c.send(map[string]any{"type": "conversation.item.truncated", "item_id": item, "content_index": 0, "audio_end_ms": int(endF)})
	}
}

func (c *conn) itemCreate(id string, ev map[string]any) {
	item, _ := ev["item"].(map[string]any)
	if item == nil || item["type"] != "function_call_output" {
		c.fail(id, "invalid_request_error", "invalid_value", "item.type", "This fake only accepts function_call_output items.")
		return
	}
	callID, _ := item["call_id"].(string)
	out, _ := item["output"].(string)
	c.mu.Lock()
	if c.waiting == callID {
		c.waiting = ""
	}
	c.mu.Unlock()
	c.s.record(func() { c.s.outputs = append(c.s.outputs, FunctionOutput{CallID: callID, Output: out}) })
	c.send(map[string]any{"type": c.name("conversation.item.added"), "item": map[string]any{
		"id": c.s.newID("item"), "type": "function_call_output", "call_id": callID, "output": out,
	}})
}

// respond plays one reply as a response.
func (c *conn) respond(resp string, r Reply, cancel chan struct{}) {
	c.send(map[string]any{"type": "response.created", "response": map[string]any{"id": resp, "object": "realtime.response", "status": "in_progress", "output": []any{}}})
	if r.Call != nil {
		c.functionCall(resp, *r.Call, func() {
			// The next response.create, once the client has sent the
			// call's output, speaks the reply.
			next := Reply{Text: r.Text, Audio: r.Audio, HoldAfter: r.HoldAfter}
			if r.Next != nil {
				next = *r.Next
			}
			c.s.mu.Lock()
			c.s.opts.Replies = append([]Reply{next}, c.s.opts.Replies[c.s.turn:]...)
			c.s.turn = 0
			c.s.mu.Unlock()
			c.mu.Lock()
			c.active = ""
			c.mu.Unlock()
		})
		return
	}
	item := c.s.newID("item")
	c.mu.Lock()
	c.items[item] = 0
	c.mu.Unlock()
	c.send(map[string]any{"type": "response.output_item.added", "response_id": resp, "output_index": 0,
		"item": map[string]any{"id": item, "object": "realtime.item", "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}})
	c.send(map[string]any{"type": "response.content_part.added", "response_id": resp, "item_id": item, "output_index": 0, "content_index": 0,
		"part": map[string]any{"type": "audio", "transcript": ""}})

	pcm := r.Audio
	if pcm == nil {
		pcm = Waveform(r.Text)
	}
	words := strings.Fields(r.Text)
	chunk := Rate * c.s.opts.ChunkMs / 1000
	nChunks := max(1, (len(pcm)+chunk-1)/chunk)
	status, said := "completed", 0
	c.s.mu.Lock()
	release := c.s.release
	c.s.mu.Unlock()
	for i := 0; i < nChunks; i++ {
		if r.HoldAfter > 0 && i == r.HoldAfter {
			select {
			case <-release:
			case <-cancel:
			case <-c.ctx.Done():
				return
			}
		}
		select {
		case <-cancel:
			status = "cancelled"
		case <-c.ctx.Done():
			return
		default:
		}
		if status == "cancelled" {
			break
		}
		part := pcm[i*chunk : min(len(pcm), (i+1)*chunk)]
		b := make([]byte, 2*len(part))
		for k, v := range part {
			binary.LittleEndian.PutUint16(b[2*k:], uint16(v))
		}
		// Words go out in step with the audio, each chunk's just before
		// it (as the real service's transcript runs ahead of its audio):
		// a client that has a chunk's audio has its words.
		for said < len(words) && said*nChunks < (i+1)*len(words) {
			d := words[said]
			if said > 0 {
				d = " " + d
			}
			said++
			c.send(map[string]any{"type": c.name("response.output_audio_transcript.delta"), "response_id": resp, "item_id": item,
				"output_index": 0, "content_index": 0, "delta": d})
		}
		c.mu.Lock()
		c.items[item] += len(part)
		c.mu.Unlock()
		c.send(map[string]any{"type": c.name("response.output_audio.delta"), "response_id": resp, "item_id": item,
			"output_index": 0, "content_index": 0, "delta": base64.StdEncoding.EncodeToString(b)})
	}
	transcript := strings.Join(words[:said], " ")
	c.send(map[string]any{"type": c.name("response.output_audio.done"), "response_id": resp, "item_id": item, "output_index": 0, "content_index": 0})
	c.send(map[string]any{"type": c.name("response.output_audio_transcript.done"), "response_id": resp, "item_id": item, "output_index": 0, "content_index": 0, "transcript": transcript})
	c.send(map[string]any{"type": "response.output_item.done", "response_id": resp, "output_index": 0,
		"item": map[string]any{"id": item, "type": "message", "role": "assistant", "status": map[bool]string{true: "incomplete", false: "completed"}[status == "cancelled"]}})
	c.mu.Lock()
	c.active = ""
	c.mu.Unlock()
	done := map[string]any{"id": resp, "object": "realtime.response", "status": status,
		"output": []any{map[string]any{"id": item, "type": "message", "role": "assistant"}}}
	if status == "cancelled" {
		done["status_details"] = map[string]any{"type": "cancelled", "reason": "client_cancelled"}
	}
	c.send(map[string]any{"type": "response.done", "response": done})
	c.send(map[string]any{"type": "rate_limits.updated", "rate_limits": []any{
		map[string]any{"name": "requests", "limit": 1000, "remaining": 999, "reset_seconds": 0.06},
		map[string]any{"name": "tokens", "limit": 50000, "remaining": 49000, "reset_seconds": 1.2},
	}})
}

// functionCall sends one function call and ends its response, calling
// beforeDone just before response.done.
func (c *conn) functionCall(resp string, call Call, beforeDone func()) {
	item, callID := c.s.newID("item"), c.s.newID("call")
	c.mu.Lock()
	c.waiting = callID
	c.mu.Unlock()
	c.send(map[string]any{"type": "response.output_item.added", "response_id": resp, "output_index": 0,
		"item": map[string]any{"id": item, "type": "function_call", "status": "in_progress", "name": call.Name, "call_id": callID, "arguments": ""}})
	half := len(call.Arguments) / 2
	for _, d := range []string{call.Arguments[:half], call.Arguments[half:]} {
		c.send(map[string]any{"type": "response.function_call_arguments.delta", "response_id": resp, "item_id": item, "output_index": 0, "call_id": callID, "delta": d})
	}
	c.send(map[string]any{"type": "response.function_call_arguments.done", "response_id": resp, "item_id": item, "output_index": 0,
		"call_id": callID, "name": call.Name, "arguments": call.Arguments})
	c.send(map[string]any{"type": "response.output_item.done", "response_id": resp, "output_index": 0,
		"item": map[string]any{"id": item, "type": "function_call", "status": "completed", "name": call.Name, "call_id": callID, "arguments": call.Arguments}})
	beforeDone()
	c.send(map[string]any{"type": "response.done", "response": map[string]any{"id": resp, "object": "realtime.response", "status": "completed",
		"output": []any{map[string]any{"id": item, "type": "function_call", "name": call.Name, "call_id": callID, "arguments": call.Arguments}}}})
}

// Waveform generates a voiced, speech-like signal for text at 24 kHz:
// per word a syllable of a 140 Hz buzz with harmonics under a smooth
// envelope, and a short pause between words; about 70 ms per character.
func Waveform(text string) []int16 {
	words := strings.Fields(text)
	if len(words) == 0 {
		words = []string{"..."}
	}
	var out []int16
	for _, w := range words {
		n := Rate * 70 * len([]rune(w)) / 1000
		for i := range n {
			t := float64(i) / Rate
			env := math.Sin(math.Pi * float64(i) / float64(n))
			var v float64
			for h := 1; h <= 6; h++ {
				v += math.Sin(2*math.Pi*140*float64(h)*t) / float64(h)
			}
			out = append(out, int16(9000*env*v/2))
		}
		out = append(out, make([]int16, Rate*60/1000)...)
	}
	return out
}

// Speech synthesises text with espeak-ng and returns it at 24 kHz, for a
// reply that is real speech.
func Speech(ctx context.Context, text string) ([]int16, error) {
	pcm, err := tts.Espeak{}.Synthesize(ctx, text, tts.Voice{Name: "en-us"})
	if err != nil {
		return nil, fmt.Errorf("realtimetest: synthesise %q: %w", text, err)
	}
	r, err := audio.NewResampler(pcm.Rate, Rate)
	if err != nil {
		return nil, err
	}
	return r.Flush(r.Process(nil, pcm.Samples)), nil
}
