package realtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// DiscordRate is the rate of the PCM a [Session] hears and speaks: Discord's
// 48 kHz.
const DiscordRate = 48000

// EventKind says what an [Event] carries.
type EventKind int

// The kinds of [Event].
const (
	// EventAudio carries Audio: the next piece of the NPC's spoken answer,
	// 48 kHz mono PCM, ready for the Opus encoder.
	EventAudio EventKind = iota + 1
	// EventPlayerTranscript carries Text: the model's transcription of
	// the player's turn (ItemID is the turn's item), for the session log
	// after correction.
	EventPlayerTranscript
	// EventNPCTranscriptDelta carries Text: a piece of the answer's
	// transcript as the model speaks it.
	EventNPCTranscriptDelta
	// EventNPCTranscript carries the answer's whole transcript when its
	// response ends: Text is what was heard (all of it unless Interrupted,
	// then the part before the cut), Full what the model generated.
	EventNPCTranscript
	// EventToolCall carries Tool: a function call of the model, run.
	EventToolCall
	// EventResponseDone carries Status (completed, cancelled, failed,
	// incomplete): the model has finished a response. A response that
	// called tools is followed by another that answers with their results.
	EventResponseDone
	// EventSpeechStarted tells that the server's voice detection heard the
	// player start speaking (only with [Config.ServerVAD]).
	EventSpeechStarted
	// EventRateLimits carries RateLimits, the provider's remaining
	// allowances.
	EventRateLimits
	// EventError carries Err: a [*ServerError] or a [*ProtocolError]. The
	// session goes on.
	EventError
)

var kindNames = [...]string{"", "audio", "player_transcript", "npc_transcript_delta", "npc_transcript", "tool_call", "response_done", "speech_started", "rate_limits", "error"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is something the session reports; Kind says which fields are set.
type Event struct {
	Kind       EventKind
	ResponseID string
	ItemID     string
	// Audio is 48 kHz mono PCM (EventAudio). The receiver owns it.
	Audio []int16
	// Text is a transcript (EventPlayerTranscript, EventNPCTranscript,
	// EventNPCTranscriptDelta).
	Text string
	// Full, Interrupted and HeardMs describe an EventNPCTranscript.
	Full        string
	Interrupted bool
	HeardMs     int
	// Tool is the call of an EventToolCall.
	Tool *ToolCall
	// Status is an EventResponseDone's status.
	Status     string
	RateLimits []RateLimit
	Err        error
}

// Interruption is what [Session.Interrupt] cut.
type Interruption struct {
	// ItemID is the NPC's audio item truncated; empty when no answer had
	// audio yet.
	ItemID string
	// HeardMs is where the item was truncated: what the players heard,
	// capped at the audio received.
	HeardMs int
	// Heard is the transcript up to the cut, estimated in proportion to
	// the audio heard and ending at a word boundary; Full is the whole
	// transcript received so far.
	Heard, Full string
}

// Session is one realtime conversation with a speech-to-speech model: one
// NPC at one table. Feed it the addressed player's audio with
// [Session.Hear], end the turn with [Session.EndOfTurn], and read the
// answer from [Session.Events]. Its methods are safe for concurrent use,
// but audio should come from one goroutine so its order is kept.
type Session struct {
	cfg Config
	log *slog.Logger
	met Metrics
	clk clock.Clock

	conn    *websocket.Conn
	writeMu sync.Mutex
	evSeq   atomic.Int64

	events chan Event
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // read and idle loops
	tools  sync.WaitGroup // tool calls; waited by the read loop

	turnMu    sync.Mutex // one EndOfTurn at a time
	inMu      sync.Mutex
	in        *audio.Resampler // 48 → 24 kHz
	inBuf     []int16
	inPending int // 24 kHz samples appended since the last commit

	out *audio.Resampler // 24 → 48 kHz; read loop only

	mu              sync.Mutex
	closed          bool
	reason          error
	lastActive      time.Time
	turnStart       time.Time
	waitFirstAudio  bool
	busy            bool   // a response is requested or running (tool rounds included)
	running         bool   // between response.created and response.done
	respID          string // the response running
	lastCreateID    string // event id of the last response.create
	cancelPending   bool   // cancel the response about to be created
	createAfterDone bool   // a turn ended while a cancelled response winds down
	dropped         map[string]bool
	items           map[string]*outItem
	lastAudioItem   string
	calls           map[string]bool
	names           map[string]string // call id → function name
	rounds          map[string]*toolRound
	toolsThisTurn   int
	// finished are the last responses done (a ring): audio and words
	// for them that come after their response.done are dropped.
	finished     [finishedKept]lateResponse
	finishedNext int
}

// maxTranscript bounds the words kept and passed on for one item of an
// answer (64 KiB; two minutes of speech are about 2 KiB): a model that
// streams words without end has the rest dropped and reported once.
const maxTranscript = 64 << 10

// finishedKept is how many responses done are remembered for dropping
// their late audio.
const finishedKept = 16

// lateResponse is a response done; reported is set once its late audio
// was reported.
type lateResponse struct {
	id       string
	reported bool
}

// lateLocked reports whether id is a response already done, and whether
// that is the first time its late output came (to report it once). s.mu
// is held.
func (s *Session) lateLocked(id string) (late, first bool) {
	if id == "" {
		return false, false
	}
	for i := range s.finished {
		if f := &s.finished[i]; f.id == id {
			first, f.reported = !f.reported, true
			return true, first
		}
	}
	return false, false
}

// dropLate drops output of typ for a response already done, reporting
// the first such event of each response as a protocol error; s.mu is
// held and released.
func (s *Session) dropLate(typ, id string, first bool) {
	s.mu.Unlock()
	if first {
		s.protocolError(typ, fmt.Sprintf("output for response %s after its response.done (dropped)", id), nil)
	}
}

// outItem is an audio item of the model's answer.
type outItem struct {
	id, responseID string
	samples        int // 24 kHz samples received
	transcript     strings.Builder
	final          string
	truncated      bool
	heardMs        int
	reported       bool
	overflow       bool // words past maxTranscript came and were dropped
}

func (it *outItem) text() string {
	if it.final != "" {
		return it.final
	}
	return it.transcript.String()
}

func (it *outItem) ms() int { return it.samples * 1000 / wireRate }

// toolRound tracks the function calls of one response: once the response
// is done and every call answered, a new response reads the answers.
type toolRound struct {
	outstanding int
	done        bool
	cancelled   bool
}

// minTurnMs is the shortest turn the API commits.
const minTurnMs = 100

// handshakeTimeout bounds session.created and session.updated.
const handshakeTimeout = 30 * time.Second

// Dial connects to the Realtime API, configures the session
// (session.update) and waits until the server accepted it. The session
// runs until [Session.Close], an idle close, the audio limit, or the
// server ends it; [Session.Err] then tells why.
func Dial(ctx context.Context, cfg Config) (*Session, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	for k, v := range cfg.Header {
		h[k] = append([]string(nil), v...)
	}
	if cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	if cfg.Protocol == Beta {
		h.Set("OpenAI-Beta", "realtime=v1")
	}
	conn, resp, err := cfg.Dialer.DialContext(ctx, cfg.dialURL(), h)
	if err != nil {
		de := &DialError{URL: cfg.dialURL(), Err: err}
		if resp != nil {
			de.Status = resp.StatusCode
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			de.Body = strings.TrimSpace(string(b))
		}
		return nil, de
	}
	conn.SetReadLimit(32 << 20)
	in, err := audio.NewResampler(DiscordRate, wireRate)
	if err != nil {
		conn.Close()
		return nil, err
	}
	out, err := audio.NewResampler(wireRate, DiscordRate)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &Session{
		cfg: cfg, log: cfg.Logger.With("component", "realtime", "model", cfg.Model), met: cfg.Metrics, clk: cfg.Clock,
		conn: conn, in: in, out: out,
		events: make(chan Event, 64), done: make(chan struct{}),
		dropped: map[string]bool{}, items: map[string]*outItem{}, calls: map[string]bool{},
		names: map[string]string{}, rounds: map[string]*toolRound{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	err = s.handshake()
	if !stop() {
		err = fmt.Errorf("realtime handshake: %w", ctx.Err())
	}
	if err != nil {
		s.cancel()
		conn.Close()
		return nil, err
	}
	s.lastActive = s.clk.Now()
	s.wg.Add(1)
	go s.readLoop()
	if cfg.IdleTimeout > 0 {
		s.wg.Add(1)
		go s.idleLoop()
	}
	return s, nil
}

// handshake waits for session.created, sends the configuration and waits
// for session.updated.
func (s *Session) handshake() error {
	s.conn.SetReadDeadline(time.Now().Add(handshakeTimeout))
	defer s.conn.SetReadDeadline(time.Time{})
	if err := s.awaitHandshake(evSessionCreated); err != nil {
		return err
	}
	if err := s.send(context.Background(), sessionUpdateEvent{s.newEvent("session.update"), s.cfg.sessionConfig()}); err != nil {
		return err
	}
	return s.awaitHandshake(evSessionUpdated)
}

func (s *Session) awaitHandshake(want string) error {
	for {
		_, data, err := s.conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("realtime handshake: waiting for %s: %w", want, err)
		}
		var ev serverEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return &ProtocolError{Problem: "handshake: not a JSON event", Err: err}
		}
		switch ev.Type {
		case want:
			return nil
		case evError:
			if ev.Error == nil {
				return &ProtocolError{Event: evError, Problem: "no error object"}
			}
			return fmt.Errorf("realtime handshake: waiting for %s: %w", want, ev.Error)
		}
	}
}

// Events returns the session's events. The channel is closed when the
// session ends; read it until then (a reader that stops stalls the
// session).
func (s *Session) Events() <-chan Event { return s.events }

// Done is closed when the session has ended and its events are drained.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err reports why the session ended: [ErrClosed] after Close, [ErrIdle],
// [ErrAudioLimit], or the connection's failure; nil while it runs.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// Close ends the session and waits for its goroutines. It is idempotent.
func (s *Session) Close() error {
	s.closeWith(ErrClosed)
	s.wg.Wait()
	return nil
}

// Hear sends the addressed player's audio, 48 kHz mono PCM, to the model.
// It returns an error wrapping [ErrAudioLimit] when the audio budget is
// used up (the session then closes).
func (s *Session) Hear(ctx context.Context, pcm48k []int16) error {
	if len(pcm48k) == 0 {
		return nil
	}
	if err := s.closedErr(); err != nil {
		return err
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	s.inBuf = s.in.Process(s.inBuf[:0], pcm48k)
	return s.appendLocked(ctx, s.inBuf)
}

// appendLocked sends 24 kHz samples; s.inMu is held.
func (s *Session) appendLocked(ctx context.Context, pcm24k []int16) error {
	if len(pcm24k) == 0 {
		return nil
	}
	d := samplesDuration(len(pcm24k))
	if err := s.cfg.Budget.Spend(d); err != nil {
		s.closeWith(err)
		return err
	}
	s.met.AudioIn(d)
	s.touch()
	if err := s.send(ctx, appendEvent{s.newEvent("input_audio_buffer.append"), encodePCM(pcm24k)}); err != nil {
		return err
	}
	s.inPending += len(pcm24k)
	return nil
}

// EndOfTurn tells the model the player has finished: it commits the audio
// heard since the last turn and asks for the answer. When the previous
// answer is being interrupted, the new one is requested as soon as the
// server has wound the old one down. It fails when nothing was heard or
// when the model is still answering (call [Session.Interrupt] first).
func (s *Session) EndOfTurn(ctx context.Context) error {
	if s.cfg.ServerVAD {
		return fmt.Errorf("%w: EndOfTurn with ServerVAD: the server ends turns itself", errConfig)
	}
	if err := s.closedErr(); err != nil {
		return err
	}
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	s.mu.Lock()
	winding := s.busy && (s.cancelPending || (s.running && s.dropped[s.respID]) || s.roundCancelled())
	if s.busy && !winding {
		s.mu.Unlock()
		return ErrBusy
	}
	s.mu.Unlock()

	s.inMu.Lock()
	err := s.appendLocked(ctx, s.in.Flush(s.inBuf[:0]))
	pending := s.inPending
	s.inPending = 0
	s.inMu.Unlock()
	if err != nil {
		return err
	}
	if pending == 0 {
		return ErrNothingHeard
	}
	if ms := pending * 1000 / wireRate; ms < minTurnMs {
		_ = s.ClearInput(ctx)
		return fmt.Errorf("%w: a turn of %d ms is shorter than the %d ms the API accepts; dropped", ErrNothingHeard, ms, minTurnMs)
	}
	if err := s.send(ctx, s.newEvent("input_audio_buffer.commit")); err != nil {
		return err
	}

	s.mu.Lock()
	now := s.clk.Now()
	s.turnStart, s.waitFirstAudio, s.lastActive = now, true, now
	s.toolsThisTurn = 0
	for id, it := range s.items {
		if it.reported {
			delete(s.items, id) // a response still winding down keeps its items
		}
	}
	s.lastAudioItem = ""
	if s.busy {
		s.createAfterDone = true
		s.mu.Unlock()
		return nil
	}
	s.busy = true
	s.mu.Unlock()
	return s.createResponse(ctx)
}

// roundCancelled reports whether the running response's tool round was
// interrupted; s.mu is held.
func (s *Session) roundCancelled() bool {
	for _, r := range s.rounds {
		if r.cancelled {
			return true
		}
	}
	return false
}

// createResponse asks for a response; busy is already set.
func (s *Session) createResponse(ctx context.Context) error {
	ev := s.newEvent("response.create")
	s.mu.Lock()
	s.lastCreateID = ev.EventID
	s.respID = ""
	s.mu.Unlock()
	return s.send(ctx, ev)
}

// Interrupt handles a barge-in: it cancels the answer being generated and
// truncates the NPC's last audio item at played, the audio the players
// heard (the model then remembers having said only that). played is capped
// at the audio received. Audio of the cancelled answer still in flight is
// dropped. Calling it when nothing is playing is harmless.
func (s *Session) Interrupt(ctx context.Context, played time.Duration) (Interruption, error) {
	if err := s.closedErr(); err != nil {
		return Interruption{}, err
	}
	var cancelID string
	sendCancel := false
	s.mu.Lock()
	if s.busy {
		switch {
		case s.running:
			s.dropped[s.respID] = true
			cancelID, sendCancel = s.respID, true
			if r := s.rounds[s.respID]; r != nil {
				r.cancelled = true
			}
		case s.respID != "":
			// Done, waiting for its tool calls: just don't continue.
			if r := s.rounds[s.respID]; r != nil {
				r.cancelled = true
			}
		default:
			s.cancelPending = true
		}
		s.createAfterDone = false
	}
	var res Interruption
	truncate := false
	if it := s.items[s.lastAudioItem]; it != nil && it.samples > 0 {
		ms := min(max(int(played/time.Millisecond), 0), it.ms())
		res = Interruption{ItemID: it.id, HeardMs: ms, Full: it.text()}
		res.Heard = cutText(res.Full, ms, it.ms())
		if !it.truncated {
			it.truncated, it.heardMs, truncate = true, ms, true
		} else {
			res.HeardMs = it.heardMs
		}
	}
	s.lastActive = s.clk.Now()
	s.mu.Unlock()

	if sendCancel {
		if err := s.send(ctx, cancelEvent{s.newEvent("response.cancel"), cancelID}); err != nil {
			return res, err
		}
	}
	if truncate {
		if err := s.send(ctx, truncateEvent{s.newEvent("conversation.item.truncate"), res.ItemID, 0, res.HeardMs}); err != nil {
			return res, err
		}
	}
	return res, nil
}

// UpdateInstructions replaces the session's instructions, e.g. with the
// NPC's hot context refreshed for the coming turn. It takes effect from
// the next response.
func (s *Session) UpdateInstructions(ctx context.Context, instructions string) error {
	if err := s.closedErr(); err != nil {
		return err
	}
	return s.send(ctx, sessionUpdateEvent{s.newEvent("session.update"), s.cfg.instructionsUpdate(instructions)})
}

// ClearInput discards the audio heard since the last turn (a line that
// turned out not to be for this NPC).
func (s *Session) ClearInput(ctx context.Context) error {
	if err := s.closedErr(); err != nil {
		return err
	}
	s.inMu.Lock()
	defer s.inMu.Unlock()
	s.in.Reset()
	s.inPending = 0
	return s.send(ctx, s.newEvent("input_audio_buffer.clear"))
}

// Usage is the audio the session's budget has spent.
func (s *Session) Usage() time.Duration { return s.cfg.Budget.Used() }

func (s *Session) newEvent(typ string) clientEvent {
	return clientEvent{Type: typ, EventID: fmt.Sprintf("gx_%d", s.evSeq.Add(1))}
}

// send writes one client event.
func (s *Session) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("realtime: encode event: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.closedErr(); err != nil {
		return err
	}
	dl := time.Now().Add(s.cfg.WriteTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(dl) {
		dl = d
	}
	s.conn.SetWriteDeadline(dl)
	if err := s.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		err = fmt.Errorf("realtime: send event: %w", err)
		s.closeWith(err)
		return err
	}
	return nil
}

func (s *Session) closedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case !s.closed:
		return nil
	case s.reason == ErrClosed:
		return ErrClosed
	}
	return fmt.Errorf("realtime session ended: %w", s.reason)
}

func (s *Session) touch() {
	s.mu.Lock()
	s.lastActive = s.clk.Now()
	s.mu.Unlock()
}

// closeWith ends the session for reason; the first reason wins.
func (s *Session) closeWith(reason error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed, s.reason = true, reason
	s.mu.Unlock()
	kind := "error"
	switch {
	case errors.Is(reason, ErrClosed):
		kind = "closed"
	case errors.Is(reason, ErrIdle):
		kind = "idle"
	case errors.Is(reason, ErrAudioLimit):
		kind = "audio_limit"
	case errors.Is(reason, errServerClosed):
		kind = "server"
	}
	s.met.Closed(kind)
	s.log.Info("realtime session closed", "reason", reason)
	s.cancel()
	_ = s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	s.conn.Close()
}

var errServerClosed = errors.New("realtime server closed the connection")

// idleLoop closes the session after IdleTimeout without activity.
func (s *Session) idleLoop() {
	defer s.wg.Done()
	wait := s.cfg.IdleTimeout
	for {
		t := s.clk.NewTimer(wait)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		s.mu.Lock()
		idle := s.clk.Now().Sub(s.lastActive)
		s.mu.Unlock()
		if idle >= s.cfg.IdleTimeout {
			s.closeWith(fmt.Errorf("%w: nothing heard or said for %s", ErrIdle, idle))
			return
		}
		wait = s.cfg.IdleTimeout - idle
	}
}

// emit hands an event to the reader, unless the session is ending.
func (s *Session) emit(ev Event) {
	select {
	case s.events <- ev:
	case <-s.ctx.Done():
	}
}

func (s *Session) protocolError(event, problem string, err error) {
	perr := &ProtocolError{Event: event, Problem: problem, Err: err}
	s.met.Error("protocol")
	s.log.Warn("realtime protocol error", "err", perr)
	s.emit(Event{Kind: EventError, Err: perr})
}

// readLoop handles server events until the connection ends.
func (s *Session) readLoop() {
	defer s.wg.Done()
	defer close(s.done)
	defer close(s.events)
	var err error
	for {
		var typ int
		var data []byte
		typ, data, err = s.conn.ReadMessage()
		if err != nil {
			break
		}
		if typ != websocket.TextMessage {
			s.protocolError("", fmt.Sprintf("a %d-byte binary message; events are JSON text", len(data)), nil)
			continue
		}
		s.handle(data)
	}
	var ce *websocket.CloseError
	if errors.As(err, &ce) {
		err = fmt.Errorf("%w: %w", errServerClosed, err)
	} else {
		err = fmt.Errorf("realtime: read: %w", err)
	}
	s.closeWith(err)
	s.tools.Wait()
}

// handle dispatches one server event.
func (s *Session) handle(data []byte) {
	var ev serverEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		typ := ""
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(data, &head) == nil {
			typ = head.Type
		}
		s.protocolError(typ, fmt.Sprintf("cannot decode %q", snippet(data)), err)
		return
	}
	if ev.Type == "" {
		s.protocolError("", fmt.Sprintf("no type in %q", snippet(data)), nil)
		return
	}
	switch canonical(ev.Type) {
	case evError:
		s.onError(ev)
	case evSpeechStarted:
		s.touch()
		s.emit(Event{Kind: EventSpeechStarted, ItemID: ev.ItemID})
	case evInputTranscript:
		s.emit(Event{Kind: EventPlayerTranscript, ItemID: ev.ItemID, Text: strings.TrimSpace(ev.Transcript)})
	case evInputTranscriptFailed:
		serr := ev.Error
		if serr == nil {
			serr = &ServerError{Type: "transcription_failed"}
		}
		s.met.Error("transcription_failed")
		s.emit(Event{Kind: EventError, ItemID: ev.ItemID, Err: fmt.Errorf("transcribing the player's turn %s: %w", ev.ItemID, serr)})
	case evResponseCreated:
		s.onResponseCreated(ev)
	case evOutputItemAdded:
		s.onItemAdded(ev)
	case evAudioDelta:
		s.onAudioDelta(ev)
	case evAudioDone:
		s.onAudioDone(ev)
	case evTranscriptDelta, evTextDelta:
		s.onTranscriptDelta(ev)
	case evTranscriptDone, evTextDone:
		text := ev.Transcript
		if canonical(ev.Type) == evTextDone {
			text = ev.Text
		}
		if len(text) > maxTranscript {
			s.protocolError(ev.Type, fmt.Sprintf("a transcript of %d bytes for item %s, more than %d; the words streamed are kept",
				len(text), ev.ItemID, maxTranscript), nil)
			break
		}
		s.mu.Lock()
		if it := s.items[ev.ItemID]; it != nil {
			it.final = text
		}
		s.mu.Unlock()
	case evFunctionArgsDone:
		s.onFunctionCall(ev)
	case evResponseDone:
		s.onResponseDone(ev)
	case evRateLimits:
		for _, rl := range ev.RateLimits {
			s.met.RateLimit(rl.Name, rl.Remaining)
			if rl.Remaining <= 0 {
				s.log.Warn("realtime rate limit exhausted", "limit", rl.Name, "reset_seconds", rl.ResetSeconds)
			}
		}
		s.emit(Event{Kind: EventRateLimits, RateLimits: ev.RateLimits})
	default:
		s.log.Debug("realtime event", "type", ev.Type)
	}
}

func (s *Session) onError(ev serverEvent) {
	if ev.Error == nil {
		s.protocolError(evError, "no error object", nil)
		return
	}
	kind := ev.Error.Code
	if kind == "" {
		kind = ev.Error.Type
	}
	s.met.Error(kind)
	s.log.Warn("realtime server error", "err", ev.Error)
	s.mu.Lock()
	if ev.Error.EventID != "" && ev.Error.EventID == s.lastCreateID && s.respID == "" {
		// The response we asked for will not come.
		s.busy, s.cancelPending = false, false
	}
	s.mu.Unlock()
	s.emit(Event{Kind: EventError, Err: ev.Error})
}

func (s *Session) onResponseCreated(ev serverEvent) {
	if ev.Response == nil || ev.Response.ID == "" {
		s.protocolError(ev.Type, "no response id", nil)
		return
	}
	id := ev.Response.ID
	s.mu.Lock()
	s.respID, s.busy, s.running = id, true, true
	cancel := s.cancelPending
	if cancel {
		s.cancelPending = false
		s.dropped[id] = true
	}
	s.mu.Unlock()
	if cancel {
		_ = s.send(s.ctx, cancelEvent{s.newEvent("response.cancel"), id})
	}
}

func (s *Session) onItemAdded(ev serverEvent) {
	if ev.Item == nil {
		s.protocolError(ev.Type, "no item", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Item.Type {
	case "function_call":
		s.names[ev.Item.CallID] = ev.Item.Name
	case "message":
		if s.items[ev.Item.ID] == nil {
			s.items[ev.Item.ID] = &outItem{id: ev.Item.ID, responseID: ev.ResponseID}
		}
	}
}

// item returns the audio item id, creating it; s.mu is held.
func (s *Session) item(id, responseID string) *outItem {
	it := s.items[id]
	if it == nil {
		it = &outItem{id: id, responseID: responseID}
		s.items[id] = it
	}
	if it.responseID == "" {
		it.responseID = responseID
	}
	return it
}

func (s *Session) onAudioDelta(ev serverEvent) {
	if ev.ItemID == "" {
		s.protocolError(ev.Type, "no item_id", nil)
		return
	}
	pcm, err := decodePCM(ev.Delta)
	if err != nil {
		s.protocolError(ev.Type, "bad audio delta", err)
		return
	}
	s.mu.Lock()
	if late, first := s.lateLocked(ev.ResponseID); late {
		s.dropLate(ev.Type, ev.ResponseID, first)
		return
	}
	if s.dropped[ev.ResponseID] {
		s.mu.Unlock()
		return
	}
	it := s.item(ev.ItemID, ev.ResponseID)
	if it.truncated {
		s.mu.Unlock()
		return
	}
	it.samples += len(pcm)
	s.lastAudioItem = ev.ItemID
	now := s.clk.Now()
	s.lastActive = now
	first := s.waitFirstAudio
	s.waitFirstAudio = false
	start := s.turnStart
	s.mu.Unlock()

	d := samplesDuration(len(pcm))
	if err := s.cfg.Budget.Spend(d); err != nil {
		_ = s.send(s.ctx, cancelEvent{s.newEvent("response.cancel"), ev.ResponseID})
		s.closeWith(err)
		return
	}
	s.met.AudioOut(d)
	if first && !start.IsZero() {
		s.met.FirstAudio(now.Sub(start))
	}
	if out := s.out.Process(nil, pcm); len(out) > 0 {
		s.emit(Event{Kind: EventAudio, ResponseID: ev.ResponseID, ItemID: ev.ItemID, Audio: out})
	}
}

func (s *Session) onAudioDone(ev serverEvent) {
	s.mu.Lock()
	if late, first := s.lateLocked(ev.ResponseID); late {
		s.dropLate(ev.Type, ev.ResponseID, first)
		return
	}
	drop := s.dropped[ev.ResponseID]
	if it := s.items[ev.ItemID]; it != nil && it.truncated {
		drop = true
	}
	s.mu.Unlock()
	if drop {
		s.out.Reset()
		return
	}
	if tail := s.out.Flush(nil); len(tail) > 0 {
		s.emit(Event{Kind: EventAudio, ResponseID: ev.ResponseID, ItemID: ev.ItemID, Audio: tail})
	}
}

func (s *Session) onTranscriptDelta(ev serverEvent) {
	s.mu.Lock()
	if late, first := s.lateLocked(ev.ResponseID); late {
		s.dropLate(ev.Type, ev.ResponseID, first)
		return
	}
	it := s.item(ev.ItemID, ev.ResponseID)
	if it.transcript.Len()+len(ev.Delta) > maxTranscript {
		first := !it.overflow
		it.overflow = true
		s.mu.Unlock()
		if first {
			s.protocolError(ev.Type, fmt.Sprintf("item %s of response %s has more than %d bytes of words; the rest is dropped",
				ev.ItemID, ev.ResponseID, maxTranscript), nil)
		}
		return
	}
	it.transcript.WriteString(ev.Delta)
	drop := s.dropped[ev.ResponseID] || it.truncated
	s.mu.Unlock()
	if !drop && ev.Delta != "" {
		s.emit(Event{Kind: EventNPCTranscriptDelta, ResponseID: ev.ResponseID, ItemID: ev.ItemID, Text: ev.Delta})
	}
}

func (s *Session) onResponseDone(ev serverEvent) {
	if ev.Response == nil || ev.Response.ID == "" {
		s.protocolError(ev.Type, "no response id", nil)
		return
	}
	r := ev.Response
	s.mu.Lock()
	if late, first := s.lateLocked(r.ID); late {
		// A duplicate: the response is settled already.
		s.dropLate(ev.Type, r.ID, first)
		return
	}
	s.mu.Unlock()
	status := r.Status
	if status == "" {
		status = "completed"
	}
	s.met.Response(status)
	if status == "failed" {
		serr := &ServerError{Type: "response_failed"}
		if r.StatusDetails != nil && r.StatusDetails.Error != nil {
			serr = r.StatusDetails.Error
		}
		s.met.Error(serr.Code)
		s.emit(Event{Kind: EventError, ResponseID: r.ID, Err: fmt.Errorf("response %s failed: %w", r.ID, serr)})
	}

	var transcripts []Event
	s.mu.Lock()
	for _, it := range s.items {
		if it.responseID != r.ID || it.reported {
			continue
		}
		it.reported = true
		full := it.text()
		if full == "" && it.samples == 0 {
			continue
		}
		e := Event{Kind: EventNPCTranscript, ResponseID: r.ID, ItemID: it.id, Text: full, Full: full}
		if it.truncated {
			e.Interrupted, e.HeardMs = true, it.heardMs
			e.Text = cutText(full, it.heardMs, it.ms())
		} else if s.dropped[r.ID] {
			e.Interrupted, e.HeardMs = true, it.ms()
		}
		transcripts = append(transcripts, e)
	}
	if s.respID == r.ID {
		s.running = false
	}
	if rd := s.rounds[r.ID]; rd != nil {
		rd.done = true
		if s.dropped[r.ID] {
			rd.cancelled = true
		}
	}
	create := s.finishLocked(r.ID)
	delete(s.dropped, r.ID)
	s.finished[s.finishedNext] = lateResponse{id: r.ID}
	s.finishedNext = (s.finishedNext + 1) % finishedKept
	s.mu.Unlock()

	for _, e := range transcripts {
		s.emit(e)
	}
	s.emit(Event{Kind: EventResponseDone, ResponseID: r.ID, Status: status})
	if create {
		_ = s.createResponse(s.ctx)
	}
}

// finishLocked settles a response that is done or whose tool call ended:
// it reports whether to ask for the next response (tool results to read,
// or a turn that ended while this one was cancelled). s.mu is held.
func (s *Session) finishLocked(id string) bool {
	if r := s.rounds[id]; r != nil {
		if !r.done || r.outstanding > 0 {
			return false
		}
		delete(s.rounds, id)
		if !r.cancelled && !s.closed {
			s.respID = ""
			return true
		}
	}
	if s.respID == id || s.respID == "" {
		s.respID = ""
		s.busy = false
		s.cancelPending = false
	}
	if s.createAfterDone && !s.closed {
		s.createAfterDone = false
		s.busy = true
		return true
	}
	return false
}

// errToolBudget is the tool output once a turn has made too many calls.
var errToolBudget = errors.New("tool budget for this reply is used up; answer now with what you know")

func (s *Session) onFunctionCall(ev serverEvent) {
	if ev.CallID == "" {
		s.protocolError(ev.Type, "no call_id", nil)
		return
	}
	s.mu.Lock()
	if s.calls[ev.CallID] {
		s.mu.Unlock()
		return
	}
	s.calls[ev.CallID] = true
	name := ev.Name
	if name == "" {
		name = s.names[ev.CallID]
	}
	r := s.rounds[ev.ResponseID]
	if r == nil {
		r = &toolRound{}
		s.rounds[ev.ResponseID] = r
	}
	r.outstanding++
	s.toolsThisTurn++
	over := s.toolsThisTurn > s.cfg.MaxToolCalls
	s.tools.Add(1)
	s.mu.Unlock()
	go s.runTool(ev.ResponseID, ToolCall{CallID: ev.CallID, Name: name, Args: json.RawMessage(ev.Arguments)}, over)
}

// runTool runs one call and sends its output; it belongs to s.tools.
func (s *Session) runTool(responseID string, call ToolCall, over bool) {
	defer s.tools.Done()
	start := s.clk.Now()
	var err error
	switch {
	case over:
		err = errToolBudget
	case !s.declared(call.Name):
		err = fmt.Errorf("there is no tool %q", call.Name)
	case !isJSONObject(call.Args):
		err = fmt.Errorf("the arguments of %s are not a JSON object: %q", call.Name, snippet(call.Args))
	default:
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ToolTimeout)
		call.Output, err = s.cfg.Runner.RunTool(ctx, call.Name, call.Args)
		cancel()
		if err != nil {
			err = fmt.Errorf("tool %s: %w", call.Name, err)
		}
	}
	if err != nil {
		call.Err, call.Output = err, errorOutput(err)
	}
	call.Duration = s.clk.Now().Sub(start)
	s.met.ToolCall(call.Name, err)
	sendErr := s.send(s.ctx, itemCreateEvent{s.newEvent("conversation.item.create"), functionOutput{"function_call_output", call.CallID, call.Output}})

	s.mu.Lock()
	create := false
	if r := s.rounds[responseID]; r != nil {
		r.outstanding--
		if sendErr != nil {
			r.cancelled = true
		}
		create = s.finishLocked(responseID)
	}
	s.mu.Unlock()
	// Reported before the answer is asked for, so it comes before the
	// answer's events.
	s.emit(Event{Kind: EventToolCall, ResponseID: responseID, Tool: &call})
	if create {
		_ = s.createResponse(s.ctx)
	}
}

func (s *Session) declared(name string) bool {
	if s.cfg.Runner == nil {
		return false
	}
	for _, t := range s.cfg.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func isJSONObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

func samplesDuration(n int) time.Duration {
	return time.Duration(n) * time.Second / wireRate
}

// cutText estimates the part of text spoken in heardMs of totalMs: the
// same fraction of its characters, rounded down to a word boundary.
func cutText(text string, heardMs, totalMs int) string {
	if totalMs <= 0 || heardMs <= 0 {
		return ""
	}
	if heardMs >= totalMs {
		return text
	}
	runes := []rune(text)
	n := len(runes) * heardMs / totalMs
	if n < len(runes) && runes[n] != ' ' {
		// Back up to the start of the word being spoken.
		for n > 0 && runes[n-1] != ' ' {
			n--
		}
	}
	return strings.TrimSpace(string(runes[:n]))
}

func snippet(b []byte) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
