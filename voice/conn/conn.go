package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
)

// Params identify a voice session: the session id from the main gateway's
// VOICE_STATE_UPDATE and the token and endpoint from VOICE_SERVER_UPDATE.
type Params struct {
	// Endpoint is "host:port" as Discord sends it, or a ws:// URL (tests).
	Endpoint  string
	GuildID   string
	ChannelID string
	UserID    string
	SessionID string
	Token     string
}

// Backoff configures reconnects.
type Backoff struct {
	Initial  time.Duration // default 1 s
	Max      time.Duration // default 30 s
	Attempts int           // default 10
}

// Config configures a connection. Zero values take the defaults noted.
type Config struct {
	Logger *slog.Logger
	// NewE2EE makes the DAVE session. Without it the client offers no DAVE
	// and Discord closes E2EE-required channels with 4017.
	NewE2EE func(userID, channelID uint64) (E2EE, error)
	// Rejoin asks the main gateway for a fresh voice session (a new voice
	// state update) when the old one is gone. Without it, a lost session
	// ends the connection.
	Rejoin  func(ctx context.Context) (Params, error)
	Backoff Backoff
	Dialer  *websocket.Dialer
	// HandshakeTimeout bounds one connect or resume (default 15 s).
	HandshakeTimeout time.Duration
	// ReorderDelay is how long a packet may wait for an earlier one that
	// is missing (default 60 ms).
	ReorderDelay time.Duration
	// PacketBuffer is the capacity of the Packets channel (default 512).
	PacketBuffer int
	// MoveWait is how long a connection the voice gateway closed with
	// 4014 or 4022 waits for Switch (the new voice session of a move)
	// before it ends with a *DisconnectedError (default DefaultMoveWait).
	MoveWait time.Duration
	// KeepaliveInterval is how often an 8-byte keepalive datagram goes out
	// on the UDP socket, as discord.js does, so that a bot that only
	// listens keeps its NAT mapping (default 5 s; negative: never).
	KeepaliveInterval time.Duration
	// Clock times the move wait and keepalives (default: the system
	// clock).
	Clock clock.Clock
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Backoff.Initial == 0 {
		c.Backoff.Initial = time.Second
	}
	if c.Backoff.Max == 0 {
		c.Backoff.Max = 30 * time.Second
	}
	if c.Backoff.Attempts == 0 {
		c.Backoff.Attempts = 10
	}
	if c.Dialer == nil {
		d := *websocket.DefaultDialer
		c.Dialer = &d
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = 15 * time.Second
	}
	if c.ReorderDelay == 0 {
		c.ReorderDelay = 60 * time.Millisecond
	}
	if c.PacketBuffer == 0 {
		c.PacketBuffer = 512
	}
	if c.MoveWait == 0 {
		c.MoveWait = DefaultMoveWait
	}
	if c.KeepaliveInterval == 0 {
		c.KeepaliveInterval = DefaultKeepaliveInterval
	}
	c.Clock = clock.OrReal(c.Clock)
}

// EventKind says what happened.
type EventKind int

// Events.
const (
	EventReady EventKind = iota
	EventUserJoined
	EventUserLeft
	EventSpeaking
	EventReconnecting
	EventResumed
	EventReidentified
	EventClosed
	EventE2EEEpoch
	// EventMoved: Switch connected to the new voice session; ChannelID
	// names its channel. The users of the old channel were reported left
	// when the channel changed.
	EventMoved
	// EventWaitingForMove: the voice gateway closed the session with 4014
	// or 4022, which Discord does when the bot is moved, kicked or
	// disconnected; the connection waits Config.MoveWait for Switch.
	// ChannelID names the channel it was in. EventMoved follows a move;
	// EventClosed with a *DisconnectedError follows when none came.
	EventWaitingForMove
	// EventE2EEFailed: the DAVE session gave up rejoining its group after
	// repeated failures (Err says why); the bot can no longer hear or be
	// heard in the channel until a new voice session starts.
	EventE2EEFailed
)

func (k EventKind) String() string {
	return [...]string{"ready", "user joined", "user left", "speaking", "reconnecting", "resumed", "re-identified",
		"closed", "e2ee epoch", "moved", "waiting for a move", "e2ee failed"}[k]
}

// Event is something that happened on the connection.
type Event struct {
	Kind   EventKind
	UserID string
	// ChannelID is set on EventMoved and EventWaitingForMove.
	ChannelID string
	// Err is set on EventClosed when the connection ended abnormally, and
	// on EventReconnecting with the cause.
	Err error
}

// Errors callers branch on.
var (
	// ErrE2EERequired: the channel requires DAVE and it was not offered.
	ErrE2EERequired = errors.New("voice: the channel requires end-to-end encryption (DAVE, close code 4017)")
	// ErrClosed: the connection is closed.
	ErrClosed = errors.New("voice: connection closed")
	// ErrNotReady: the connection is reconnecting; the frame was not sent.
	ErrNotReady = errors.New("voice: not connected")
)

// Stats counts what the connection did.
type Stats struct {
	Received, Delivered, Lost, Late, Sent                     uint64
	Truncated, AuthFailed, UnknownSSRC, Oversized, E2EEFailed uint64
	NotAudio, RTCP, Backpressure                              uint64
	Resumes, Reidentifies, EventsDropped                      uint64
	// Keepalives is the number of UDP keepalive datagrams sent.
	Keepalives uint64
	// NotEncrypted is the number of frames not sent because end-to-end
	// encryption is on and the DAVE session had no key to send with (no
	// group yet, or its recoveries gave up): never sent unencrypted.
	NotEncrypted uint64
}

type counters struct {
	received, delivered, lost, late, sent               atomic.Uint64
	truncated, authFailed, unknownSSRC, oversized, e2ee atomic.Uint64
	notAudio, rtcp, backpressure                        atomic.Uint64
	resumes, reidentifies, eventsDropped                atomic.Uint64
	keepalives                                          atomic.Uint64
	notEncrypted                                        atomic.Uint64
}

// Conn is a voice connection. Its methods are safe for concurrent use.
type Conn struct {
	cfg Config
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	params   Params
	gen      *wsGen
	udp      *net.UDPConn
	ssrc     uint32
	ssrcUser map[uint32]string
	// droppedSSRCs are SSRCs of users who disconnected (op 13) whose
	// receive lanes must end; laneDrops says there are some.
	droppedSSRCs []uint32
	laneDrops    atomic.Bool
	users        map[string]bool
	closeErr     error
	ready        bool
	moving       *mover // a wait for a move after 4014 or 4022
	// failReported is the E2EE session whose failure was reported.
	failReported E2EE

	cipher  atomic.Pointer[rtp.Cipher]
	e2ee    E2EE
	lastSeq atomic.Int64
	userID  uint64

	sendMu   sync.Mutex
	seq      uint16
	ts       uint32
	nonce    uint32
	speaking bool
	// spokeAs is the SSRC the last speaking message (op 5) announced: a
	// new session (a re-identify, a Switch) has a new SSRC, which must be
	// announced before its first frame or listeners drop the frames.
	spokeAs  uint32
	lastSent time.Time

	rc       *reconnect.Reconnector[*wsGen]
	switchMu sync.Mutex // one Switch at a time
	// next says how the reconnector's next dial reconnects (resume or
	// re-identify), from the close code of the lost connection.
	next    atomic.Int32
	resumes atomic.Int32 // failed resumes since the last good connection
	packets chan audio.Packet
	events  chan Event
	// emitMu guards sending on events against closing it.
	emitMu       sync.Mutex
	eventsClosed bool
	stats        counters
	closed       atomic.Bool
	down         chan struct{} // closed when teardown has finished
}

// Dial connects to the voice server and returns when audio can flow.
func Dial(ctx context.Context, p Params, cfg Config) (*Conn, error) {
	cfg.defaults()
	uid, err := gateway.Snowflake(p.UserID)
	if err != nil {
		return nil, fmt.Errorf("voice: user id: %w", err)
	}
	c := &Conn{cfg: cfg, log: cfg.Logger.With("guild", p.GuildID), params: p, userID: uid,
		ssrcUser: map[uint32]string{}, users: map[string]bool{},
		packets: make(chan audio.Packet, cfg.PacketBuffer), events: make(chan Event, 64), down: make(chan struct{})}
	c.lastSeq.Store(gateway.NoSeq)
	c.seq = uint16(rand.Uint32())
	c.ts = rand.Uint32()
	if cfg.NewE2EE != nil {
		ch, err := gateway.Snowflake(p.ChannelID)
		if err != nil {
			return nil, fmt.Errorf("voice: channel id: %w", err)
		}
		if c.e2ee, err = cfg.NewE2EE(uid, ch); err != nil {
			return nil, fmt.Errorf("voice: starting DAVE: %w", err)
		}
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	rc, err := reconnect.New(reconnect.Config[*wsGen]{
		Dial:        c.redial,
		OnReconnect: c.reconnected,
		OnGiveUp:    func(err error) { c.finish(fmt.Errorf("voice: %w", err)) },
		Backoff:     reconnect.Backoff{Initial: cfg.Backoff.Initial, Max: cfg.Backoff.Max},
		MaxAttempts: cfg.Backoff.Attempts,
		Logger:      c.log,
	})
	if err != nil {
		return nil, err
	}
	c.rc = rc
	gen, err := c.connect(ctx, p, false)
	if err != nil {
		c.teardown()
		var ce *closeError
		if errors.As(err, &ce) {
			if action, why := gateway.Classify(ce.code); action == gateway.ActionFatal {
				return nil, fmt.Errorf("%w (%v)", closeErr(action, ce.code, why), ce.err)
			}
		}
		return nil, err
	}
	rc.Use(gen)
	rc.Start(c.ctx)
	return c, nil
}

// Packets delivers received Opus frames. It is closed when the connection
// ends (Close, or a failure that ends it).
func (c *Conn) Packets() <-chan audio.Packet { return c.packets }

// Events delivers connection events. Read it: when it is full, events are
// dropped (and counted).
func (c *Conn) Events() <-chan Event { return c.events }

// SSRC is the connection's own RTP SSRC.
func (c *Conn) SSRC() uint32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ssrc
}

// Users returns the user ids connected to the channel (other than us).
func (c *Conn) Users() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.users))
	for u := range c.users {
		out = append(out, u)
	}
	return out
}

// E2EE returns the DAVE session, or nil. A move to another channel
// replaces it.
func (c *Conn) E2EE() E2EE {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.e2ee
}

// Stats returns the counters.
func (c *Conn) Stats() Stats {
	s := &c.stats
	return Stats{Received: s.received.Load(), Delivered: s.delivered.Load(), Lost: s.lost.Load(), Late: s.late.Load(),
		Sent: s.sent.Load(), Truncated: s.truncated.Load(), AuthFailed: s.authFailed.Load(), UnknownSSRC: s.unknownSSRC.Load(),
		Oversized: s.oversized.Load(), E2EEFailed: s.e2ee.Load(), NotAudio: s.notAudio.Load(), RTCP: s.rtcp.Load(),
		Backpressure: s.backpressure.Load(), Resumes: s.resumes.Load(), Reidentifies: s.reidentifies.Load(),
		EventsDropped: s.eventsDropped.Load(), Keepalives: s.keepalives.Load(),
		NotEncrypted: s.notEncrypted.Load()}
}

func (c *Conn) emit(e Event) {
	c.emitMu.Lock()
	defer c.emitMu.Unlock()
	if c.eventsClosed {
		return
	}
	select {
	case c.events <- e:
	default:
		c.stats.eventsDropped.Add(1)
	}
}

// Switch moves the connection to a new voice session (the bot was moved to
// another channel, or the guild's voice server changed): it leaves the
// current one and connects with p, then reports EventMoved. Frames
// written meanwhile are refused with ErrNotReady. If connecting fails,
// Switch returns the error and the connection rejoins through
// Config.Rejoin with backoff; when that gives up too, the connection ends
// (EventClosed with the error, Packets closed).
func (c *Conn) Switch(ctx context.Context, p Params) error {
	c.switchMu.Lock()
	defer c.switchMu.Unlock()
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	// Closing the connection interrupts a switch.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	// A move that follows a 4014 or 4022 ends the wait for it.
	c.claimMove()
	if closed, err := c.renew(ctx, p, false); err != nil {
		if closed {
			return ErrClosed
		}
		return fmt.Errorf("voice: switching to channel %s at %s: %w", p.ChannelID, p.Endpoint, err)
	}
	c.emit(Event{Kind: EventMoved, ChannelID: p.ChannelID})
	return nil
}

// renew retires the current voice session and connects a new one with p
// (with a new DAVE session when newE2EE). If connecting fails, the
// connection goes on re-identifying with backoff and renew returns the
// error; closed reports that the connection was closed meanwhile.
func (c *Conn) renew(ctx context.Context, p Params, newE2EE bool) (closed bool, err error) {
	c.mu.Lock()
	old := c.gen
	c.ready = false
	c.mu.Unlock()
	if old != nil {
		old.retire()
	}
	gen, err := c.identifyFresh(ctx, p, newE2EE)
	if err != nil {
		if c.ctx.Err() != nil {
			return true, ErrClosed
		}
		c.next.Store(int32(gateway.ActionReidentify))
		c.rc.NotifyDisconnect()
		return false, err
	}
	c.rc.Use(gen)
	return false, nil
}

// ErrNoRejoin: Rejoin was called on a connection without Config.Rejoin.
var ErrNoRejoin = errors.New("voice: no way to rejoin was configured (Config.Rejoin)")

// Rejoin starts a new voice session in the same channel, with a new DAVE
// session, through Config.Rejoin: what a caller does after EventE2EEFailed,
// when the DAVE session gave up and the bot can neither hear nor be heard.
// Frames written meanwhile are refused with ErrNotReady. When connected it
// reports EventReidentified; if connecting fails it returns the error and
// the connection goes on rejoining with backoff, as after a lost session.
func (c *Conn) Rejoin(ctx context.Context) error {
	if c.cfg.Rejoin == nil {
		return ErrNoRejoin
	}
	c.switchMu.Lock()
	defer c.switchMu.Unlock()
	if c.ctx.Err() != nil {
		return ErrClosed
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	p, err := c.cfg.Rejoin(ctx)
	if err != nil {
		return fmt.Errorf("voice: rejoining through the main gateway: %w", err)
	}
	if closed, err := c.renew(ctx, p, true); err != nil {
		if closed {
			return ErrClosed
		}
		return fmt.Errorf("voice: rejoining channel %s at %s: %w", p.ChannelID, p.Endpoint, err)
	}
	c.stats.reidentifies.Add(1)
	c.resumes.Store(0)
	c.emit(Event{Kind: EventReidentified})
	return nil
}

// Close leaves the channel and stops every goroutine of the connection. It
// returns the error that ended the connection, if one did.
func (c *Conn) Close() error {
	c.shutdown()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closeErr
}

// shutdown tears the connection down once and waits until it is down.
func (c *Conn) shutdown() {
	if c.closed.CompareAndSwap(false, true) {
		c.teardown()
		close(c.down)
	}
	<-c.down
}

// teardown stops the goroutines, closes the sockets, then the channels
// once nothing writes to them any more.
func (c *Conn) teardown() {
	c.cancel()
	if c.rc != nil {
		c.rc.Stop()
	}
	// A Switch under way ends (its context is cancelled) before the
	// sockets are closed.
	c.switchMu.Lock()
	c.switchMu.Unlock()
	c.mu.Lock()
	if c.gen != nil {
		c.gen.retire()
	}
	if c.udp != nil {
		c.udp.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
	close(c.packets)
	c.emitMu.Lock()
	c.eventsClosed = true
	close(c.events)
	c.emitMu.Unlock()
}

// wsURL turns an endpoint into the v8 gateway URL.
func wsURL(endpoint string) (string, error) {
	if strings.HasPrefix(endpoint, "ws://") || strings.HasPrefix(endpoint, "wss://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set("v", "8")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	if endpoint == "" {
		return "", errors.New("voice: no endpoint (VOICE_SERVER_UPDATE had none yet)")
	}
	return "wss://" + strings.TrimSuffix(endpoint, "/") + "/?v=8", nil
}

// lost reacts to the end of a WebSocket: resume or re-identify through the
// reconnector, or stop for good as the close code says.
func (c *Conn) lost(gen *wsGen) {
	if gen.retired.Load() || c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	current := c.gen == gen
	c.mu.Unlock()
	if !current {
		return
	}
	code := gen.closeCode()
	action, why := gateway.Classify(code)
	if code == gateway.CloseDisconnected || code == gateway.CloseCallTerminated {
		// A move or a server change closes with these too; its new voice
		// session follows through Switch.
		c.awaitMove(code)
		return
	}
	switch action {
	case gateway.ActionFatal, gateway.ActionStop:
		go c.finish(closeErr(action, code, why))
		return
	}
	c.next.Store(int32(action))
	c.emit(Event{Kind: EventReconnecting, Err: fmt.Errorf("%s: %v", why, gen.err())})
	c.rc.NotifyDisconnect()
}

// closeErr is the error a fatal or stopping close code ends the connection
// with.
func closeErr(action gateway.CloseAction, code int, why string) error {
	switch {
	case code == gateway.CloseE2EERequired:
		return ErrE2EERequired
	case action == gateway.ActionStop:
		return fmt.Errorf("%w: %s", errStopped, why)
	}
	return fmt.Errorf("voice: %s (close code %d)", why, code)
}

// maxResumes is how many failed resumes lead to a new session instead.
const maxResumes = 2

// redial is the reconnector's dial: a resume when the session may still be
// alive, else a new session from the main gateway.
func (c *Conn) redial(ctx context.Context) (*wsGen, error) {
	c.switchMu.Lock()
	defer c.switchMu.Unlock()
	c.mu.Lock()
	p := c.params
	c.mu.Unlock()
	if gateway.CloseAction(c.next.Load()) == gateway.ActionResume && c.resumes.Load() < maxResumes {
		gen, err := c.connect(ctx, p, true)
		if err == nil {
			return gen, nil
		}
		c.resumes.Add(1)
		var ce *closeError
		if errors.As(err, &ce) {
			action, why := gateway.Classify(ce.code)
			switch action {
			case gateway.ActionFatal, gateway.ActionStop:
				go c.finish(closeErr(action, ce.code, why))
				return nil, err
			case gateway.ActionReidentify:
				c.next.Store(int32(gateway.ActionReidentify))
			}
		}
		return nil, err
	}
	if c.cfg.Rejoin == nil {
		err := errors.New("voice: the session is gone and no way to rejoin was configured")
		go c.finish(err)
		return nil, err
	}
	np, err := c.cfg.Rejoin(ctx)
	if err != nil {
		return nil, fmt.Errorf("voice: rejoining through the main gateway: %w", err)
	}
	gen, err := c.identifyFresh(ctx, np, false)
	var ce *closeError
	if errors.As(err, &ce) {
		if action, why := gateway.Classify(ce.code); action == gateway.ActionFatal || action == gateway.ActionStop {
			go c.finish(closeErr(action, ce.code, why))
		}
	}
	return gen, err
}

// identifyFresh starts a new session with p; a new channel or voice server
// (or newE2EE) gets a new DAVE session, and a new channel's users replace
// those of the old one (reported left).
func (c *Conn) identifyFresh(ctx context.Context, p Params, newE2EE bool) (*wsGen, error) {
	c.mu.Lock()
	old := c.params
	// SSRCs belong to a session: the new one announces its speakers.
	clear(c.ssrcUser)
	var gone []string
	if p.ChannelID != old.ChannelID {
		for u := range c.users {
			gone = append(gone, u)
		}
		clear(c.users)
	}
	c.mu.Unlock()
	for _, u := range gone {
		c.emit(Event{Kind: EventUserLeft, UserID: u})
	}
	// A DAVE group belongs to a channel on one voice server; a DAVE
	// session that gave up is not used again.
	c.mu.Lock()
	if r, ok := c.e2ee.(E2EERecovery); ok && r.Failed() != nil {
		newE2EE = true
	}
	c.mu.Unlock()
	if (newE2EE || p.ChannelID != old.ChannelID || p.Endpoint != old.Endpoint) && c.cfg.NewE2EE != nil {
		ch, err := gateway.Snowflake(p.ChannelID)
		if err != nil {
			return nil, err
		}
		e, err := c.cfg.NewE2EE(c.userID, ch)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.e2ee = e
		c.mu.Unlock()
	}
	gen, err := c.connect(ctx, p, false)
	if err != nil {
		return nil, err
	}
	c.next.Store(int32(gateway.ActionResume))
	return gen, nil
}

// reconnected runs when the reconnector installed a new connection.
func (c *Conn) reconnected(gen *wsGen) {
	if gen.wasResume {
		c.stats.resumes.Add(1)
		c.emit(Event{Kind: EventResumed})
	} else {
		c.stats.reidentifies.Add(1)
		c.emit(Event{Kind: EventReidentified})
	}
	c.resumes.Store(0)
	c.next.Store(int32(gateway.ActionResume))
}

// finish ends the connection after an unrecoverable close.
func (c *Conn) finish(err error) {
	if c.ctx.Err() != nil {
		return
	}
	c.mu.Lock()
	if errors.Is(err, errStopped) {
		c.closeErr = nil
	} else {
		c.closeErr = err
	}
	c.mu.Unlock()
	if !errors.Is(err, errStopped) {
		c.log.Error("voice connection ended", "err", err)
	}
	c.emit(Event{Kind: EventClosed, Err: c.closeErr})
	c.cancel()
	// Packets and Events close once the goroutines have stopped; finish may
	// run on the reconnector's loop, which teardown stops.
	go c.shutdown()
}

var errStopped = errors.New("voice: disconnected")

// connect opens a WebSocket and either identifies (a new session: ready, UDP
// discovery, select protocol, session description) or resumes.
func (c *Conn) connect(ctx context.Context, p Params, resume bool) (*wsGen, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HandshakeTimeout)
	defer cancel()
	u, err := wsURL(p.Endpoint)
	if err != nil {
		return nil, err
	}
	ws, err := dialWS(ctx, c.cfg.Dialer, u)
	if err != nil {
		return nil, fmt.Errorf("voice: connecting to %s: %w", p.Endpoint, err)
	}
	gen := newGen(ws)
	c.wg.Add(1)
	go c.readLoop(gen)
	fail := func(err error) error {
		gen.close(websocket.CloseNormalClosure)
		<-gen.done
		if code := gen.closeCode(); code != 0 && code != websocket.CloseNormalClosure {
			return &closeError{code: code, err: err}
		}
		return err
	}
	var hello gateway.Hello
	if err := gen.await(ctx, gen.hello, &hello); err != nil {
		return nil, fail(fmt.Errorf("voice: waiting for hello: %w", err))
	}
	interval := heartbeatInterval(hello.HeartbeatInterval)

	if resume {
		if err := gen.sendJSON(gateway.OpResume, gateway.Resume{ServerID: p.GuildID, SessionID: p.SessionID,
			Token: p.Token, SeqAck: int(c.lastSeq.Load())}); err != nil {
			return nil, fail(err)
		}
		if err := gen.await(ctx, gen.resumed, nil); err != nil {
			return nil, fail(fmt.Errorf("voice: waiting for resumed: %w", err))
		}
		gen.wasResume = true
		c.installGen(gen, p)
		c.startHeartbeat(gen, interval)
		return gen, nil
	}

	maxDAVE := 0
	if c.e2ee != nil {
		maxDAVE = 1
	}
	c.lastSeq.Store(gateway.NoSeq)
	if err := gen.sendJSON(gateway.OpIdentify, gateway.Identify{ServerID: p.GuildID, UserID: p.UserID,
		SessionID: p.SessionID, Token: p.Token, MaxDAVEProtocolVersion: maxDAVE}); err != nil {
		return nil, fail(err)
	}
	// Heartbeats start now: the handshake may outlast an interval.
	c.startHeartbeat(gen, interval)
	var ready gateway.Ready
	if err := gen.await(ctx, gen.ready, &ready); err != nil {
		return nil, fail(fmt.Errorf("voice: waiting for ready: %w", err))
	}
	mode, err := rtp.ChooseMode(ready.Modes)
	if err != nil {
		return nil, fail(err)
	}
	server, err := netip.ParseAddr(ready.IP)
	if err != nil {
		return nil, fail(fmt.Errorf("voice: ready names IP %q: %w", ready.IP, err))
	}
	udp, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, uint16(ready.Port))))
	if err != nil {
		return nil, fail(fmt.Errorf("voice: UDP to %s:%d: %w", ready.IP, ready.Port, err))
	}
	ext, err := discover(ctx, udp, ready.SSRC)
	if err != nil {
		udp.Close()
		return nil, fail(err)
	}
	if err := gen.sendJSON(gateway.OpSelectProtocol, gateway.SelectProtocol{Protocol: "udp",
		Data: gateway.SelectProtocolData{Address: ext.Addr().String(), Port: int(ext.Port()), Mode: mode}}); err != nil {
		udp.Close()
		return nil, fail(err)
	}
	var sd gateway.SessionDescription
	if err := gen.await(ctx, gen.session, &sd); err != nil {
		udp.Close()
		return nil, fail(fmt.Errorf("voice: waiting for the session description: %w", err))
	}
	ciph, err := rtp.NewCipher(sd.Mode, sd.SecretKey)
	if err != nil {
		udp.Close()
		return nil, fail(err)
	}
	c.cipher.Store(ciph)
	c.mu.Lock()
	oldUDP := c.udp
	c.udp, c.ssrc = udp, ready.SSRC
	c.mu.Unlock()
	if oldUDP != nil {
		oldUDP.Close()
	}
	c.installGen(gen, p)
	udpDone := make(chan struct{})
	c.wg.Add(2)
	go func() {
		defer close(udpDone)
		c.readUDP(udp)
	}()
	go c.keepalive(udp, udpDone)
	if c.e2ee != nil {
		out, err := c.e2ee.SessionDescription(sd.DAVEProtocolVersion)
		if err != nil {
			return nil, fail(fmt.Errorf("voice: starting DAVE: %w", err))
		}
		c.sendAll(gen, out)
	}
	c.mu.Lock()
	c.ready = true
	c.mu.Unlock()
	c.announceSpeaking(gen, ready.SSRC)
	c.emit(Event{Kind: EventReady})
	c.log.Info("voice connected", "mode", mode, "ssrc", ready.SSRC, "dave", sd.DAVEProtocolVersion)
	return gen, nil
}

// announceSpeaking tells a new session at once that the bot is in the
// middle of speaking (op 5 for its new SSRC, after a re-identify or a
// Switch mid-utterance), rather than with the next frame: a listener drops
// packets from an SSRC no op 5 has named yet (discord.js does), and op 5
// travels through the gateway while the frame right behind it goes
// straight over UDP, so announced with the frame, the first frame under
// the new SSRC was lost (PROBE29, heard by discord.js).
func (c *Conn) announceSpeaking(gen *wsGen, ssrc uint32) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if !c.speaking || c.spokeAs == ssrc {
		return
	}
	if err := gen.sendJSON(gateway.OpSpeaking, gateway.Speaking{Speaking: gateway.SpeakingMicrophone, SSRC: ssrc}); err != nil {
		c.log.Warn("voice: announcing speaking under the new SSRC", "ssrc", ssrc, "err", err)
		return
	}
	c.spokeAs = ssrc
}

// dialWS opens the WebSocket. The dialer honours only ctx's deadline once
// TCP is connected; here ending ctx (Close, a cancelled switch) also ends
// an opening handshake the server does not answer.
func dialWS(ctx context.Context, dialer *websocket.Dialer, u string) (*websocket.Conn, error) {
	d := *dialer
	var stop func() bool
	if d.NetDialTLSContext == nil && d.NetDial == nil {
		netDial := d.NetDialContext
		if netDial == nil {
			netDial = (&net.Dialer{}).DialContext
		}
		d.NetDialContext = func(dctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := netDial(dctx, network, addr)
			if err != nil {
				return nil, err
			}
			// ctx, not dctx: the dialer cancels dctx when it returns.
			stop = context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
			return nc, nil
		}
	}
	ws, _, err := d.DialContext(ctx, u, nil)
	if stop != nil {
		stop()
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return ws, err
}

func (c *Conn) installGen(gen *wsGen, p Params) {
	c.mu.Lock()
	c.gen, c.params = gen, p
	c.mu.Unlock()
}

// discover finds our external address with UDP IP discovery, retrying.
func discover(ctx context.Context, udp *net.UDPConn, ssrc uint32) (netip.AddrPort, error) {
	req := gateway.DiscoveryRequest(ssrc)
	buf := make([]byte, 1500)
	for attempt := 0; attempt < 5; attempt++ {
		if err := ctx.Err(); err != nil {
			return netip.AddrPort{}, err
		}
		if _, err := udp.Write(req); err != nil {
			return netip.AddrPort{}, fmt.Errorf("voice: IP discovery: %w", err)
		}
		deadline := time.Now().Add(time.Second)
		for {
			udp.SetReadDeadline(deadline)
			n, err := udp.Read(buf)
			if err != nil {
				break // timeout: send again
			}
			if ap, ok := gateway.ParseDiscoveryResponse(buf[:n]); ok {
				udp.SetReadDeadline(time.Time{})
				return ap, nil
			}
		}
	}
	return netip.AddrPort{}, errors.New("voice: no answer to UDP IP discovery")
}

func (c *Conn) startHeartbeat(gen *wsGen, interval time.Duration) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-gen.done:
				return
			case <-t.C:
			}
			if !gen.acked.Swap(false) && gen.beats.Load() > 0 {
				c.log.Warn("voice heartbeat not acknowledged; reconnecting")
				gen.drop()
				return
			}
			gen.beats.Add(1)
			if err := gen.sendJSON(gateway.OpHeartbeat, gateway.Heartbeat{T: time.Now().UnixMilli(), SeqAck: int(c.lastSeq.Load())}); err != nil {
				gen.drop()
				return
			}
		}
	}()
}

func (c *Conn) sendAll(gen *wsGen, out []Outbound) {
	for _, o := range out {
		var err error
		if o.Binary != nil {
			err = gen.sendBinary(o.Op, o.Binary)
		} else {
			err = gen.sendJSON(o.Op, o.JSON)
		}
		if err != nil {
			c.log.Warn("sending a DAVE message", "op", o.Op, "err", err)
		}
	}
}

// closeError carries the close code of a failed handshake.
type closeError struct {
	code int
	err  error
}

func (e *closeError) Error() string { return fmt.Sprintf("%v (close code %d)", e.err, e.code) }
func (e *closeError) Unwrap() error { return e.err }

// userForSSRC returns the user of an SSRC.
func (c *Conn) userForSSRC(ssrc uint32) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.ssrcUser[ssrc]
	return u, ok
}

func parseUint(s string) uint64 {
	v, _ := strconv.ParseUint(s, 10, 64)
	return v
}

// Heartbeat intervals: the voice gateway's hello asks for one (Discord's is
// 13.75 s); one that is missing or not a number gets Discord's, and one
// outside [minHeartbeat, maxHeartbeat] is brought inside it. A gateway
// asking for a heartbeat every millisecond would have the bot flood it and
// reconnect at every late answer; one asking for none in a day would leave
// a dead connection unnoticed.
const (
	defaultHeartbeat = 13750 * time.Millisecond
	minHeartbeat     = time.Second
	maxHeartbeat     = time.Minute
)

// heartbeatInterval is the interval the bot heartbeats at for a hello's
// heartbeat_interval (milliseconds).
func heartbeatInterval(ms float64) time.Duration {
	switch {
	case math.IsNaN(ms) || ms <= 0:
		return defaultHeartbeat
	case ms < float64(minHeartbeat/time.Millisecond):
		return minHeartbeat
	case ms > float64(maxHeartbeat/time.Millisecond):
		return maxHeartbeat
	}
	return time.Duration(ms * float64(time.Millisecond))
}
