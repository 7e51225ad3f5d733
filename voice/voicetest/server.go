// Package voicetest is a fake Discord voice server for tests: a voice
// gateway (WebSocket, v8) and a UDP media relay on loopback that implement
// the server side of the protocol — hello, ready, IP discovery, session
// description in either rtpsize mode, heartbeats, speaking, client connect
// and disconnect, resume with replay of missed messages — and relay
// encrypted media between clients like Discord's SFU: transport encryption
// is removed and re-applied per receiver, the DAVE payload is untouched.
// The relay picks each receiver's transport counter; it skips a counter
// under which a packet without a header extension would show the
// extension profile 0xBEDE where discord.js looks for one (see sealFor).
//
// The gateway's DAVE role is a [DAVEHandler] (package voice/dave/davetest
// implements it); [Config.Observe] shows the relayed payloads, so tests can
// check that media really travels DAVE-encrypted.
//
// A client that closes its WebSocket normally (1000 or 1001) has left the
// channel: the others are told (op 13), as when Discord moves a member
// elsewhere.
//
// Faults can be injected: drop a client's WebSocket, close it with a code,
// take a client out of its channel as a move or a kick does (Kick), refuse
// identifies with a close code, pause UDP relaying, play a NAT that
// forgets silent clients, or send a client raw datagrams. UDP keepalives
// (8-byte datagrams, as discord.js sends every 5 s) are counted.
package voicetest

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
)

// Config configures the fake.
type Config struct {
	// Modes offered in ready (default: both rtpsize modes, XChaCha first).
	Modes []string
	// HeartbeatInterval sent in hello (default 5 s). A client that misses
	// one acknowledgement reconnects, so a short interval would make tests
	// pass or fail by how fast a loaded machine answers.
	HeartbeatInterval time.Duration
	// DAVEVersion sent in the session description (0: no DAVE). With a
	// DAVE handler, the fake plays the DAVE external sender.
	DAVEVersion int
	// DAVE handles the server's DAVE role, if set.
	DAVE DAVEHandler
	// RequireDAVE closes clients that offer no DAVE with 4017.
	RequireDAVE bool
	// Channel, if set, names the voice channel an identify joins (Discord
	// knows it from the session and token). Clients see, hear and share a
	// DAVE group only with clients of their own channel. Without it every
	// client is in one channel.
	Channel func(id gateway.Identify) string
	// ChannelDAVE, if set, returns the DAVE handler of a channel; it takes
	// the place of DAVE.
	ChannelDAVE func(channel string) DAVEHandler
	// Observe, if set, sees every media payload the relay forwards: the
	// sender, the RTP header and the payload with transport encryption
	// removed (the DAVE frame, when DAVE is on). It must not keep payload.
	Observe func(fromUserID string, h rtp.Header, payload []byte)
	// NATTimeout, if set, plays a NAT in front of every client: media for
	// a client that sent no datagram (media, keepalive, discovery) for
	// longer than this, by Clock, is dropped (see NATDropped), as a
	// router that forgot the UDP mapping would.
	NATTimeout time.Duration
	// Clock is the time NATTimeout is measured with (default: the system
	// clock).
	Clock  clock.Clock
	Logger *slog.Logger
}

// DAVEHandler is the voice gateway's DAVE role (external sender, commit
// arbitration, welcomes), driven by the fake. The fake calls it from one
// goroutine at a time and delivers what each call returns, in order,
// before the next call.
type DAVEHandler interface {
	// Joined is called when a client's session is described; it returns
	// messages for clients (by user id).
	Joined(userID string) []Delivery
	// Left is called when a client disconnects.
	Left(userID string) []Delivery
	// FromClient handles a client's DAVE message (ops 23, 26, 28, 31).
	FromClient(userID string, op gateway.Op, payload []byte) []Delivery
}

// Delivery is a message for one client.
type Delivery struct {
	UserID string
	Op     gateway.Op
	// JSON for text ops, Binary for binary ones.
	JSON   any
	Binary []byte
}

// Server is a running fake voice server.
type Server struct {
	cfg  Config
	http *httptest.Server
	udp  *net.UDPConn
	log  *slog.Logger

	mu       sync.Mutex
	clients  map[string]*client // by user id
	byAddr   map[netip.AddrPort]*client
	nextSSRC uint32
	udpPause atomic.Bool
	refuse   atomic.Int32

	relayed, dropped atomic.Int64
	resealed         atomic.Int64
	natDropped       atomic.Int64
	resumes          atomic.Int64
	keepalives       map[string]int // by user id
	strayKeepalives  int            // from addresses not yet selected
	// daveMu serialises DAVE handler calls with the delivery of their
	// results, so that messages reach clients in the order produced.
	daveMu sync.Mutex
	wg     sync.WaitGroup
	closed chan struct{}
}

type client struct {
	userID, sessionID, token string
	channel                  string
	ssrc                     uint32
	dave                     int // max_dave_protocol_version offered
	mode                     string
	cipher                   *rtp.Cipher
	addr                     netip.AddrPort
	counter                  uint32
	heard                    time.Time // the last datagram from addr, by Config.Clock

	mu   sync.Mutex
	ws   *websocket.Conn
	seq  int
	sent []sent // for resume replay
}

type sent struct {
	seq    int
	binary bool
	data   []byte
}

// New starts a fake voice server.
func New(cfg Config) (*Server, error) {
	if len(cfg.Modes) == 0 {
		cfg.Modes = []string{rtp.ModeXChaCha20, rtp.ModeAES256GCM}
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, udp: udp, log: cfg.Logger, clients: map[string]*client{}, byAddr: map[netip.AddrPort]*client{},
		keepalives: map[string]int{}, nextSSRC: 1000, closed: make(chan struct{})}
	s.http = httptest.NewServer(http.HandlerFunc(s.serveWS))
	s.wg.Add(1)
	go s.relay()
	return s, nil
}

// Endpoint is the URL clients dial.
func (s *Server) Endpoint() string { return "ws://" + strings.TrimPrefix(s.http.URL, "http://") + "/" }

// Close stops the server.
func (s *Server) Close() {
	select {
	case <-s.closed:
		return
	default:
	}
	close(s.closed)
	s.mu.Lock()
	for _, c := range s.clients {
		c.mu.Lock()
		if c.ws != nil {
			c.ws.Close()
		}
		c.mu.Unlock()
	}
	s.mu.Unlock()
	s.http.CloseClientConnections()
	s.http.Close()
	s.udp.Close()
	s.wg.Wait()
}

// Relayed is the number of media packets forwarded to receivers.
func (s *Server) Relayed() int64 { return s.relayed.Load() }

// SSRC returns a client's SSRC.
func (s *Server) SSRC(userID string) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.clients[userID]; c != nil {
		return c.ssrc
	}
	return 0
}

// DropWS cuts a client's WebSocket without a close frame, as a network
// failure would. The client may resume.
func (s *Server) DropWS(userID string) {
	s.mu.Lock()
	c := s.clients[userID]
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.ws != nil {
		c.ws.UnderlyingConn().Close()
	}
	c.mu.Unlock()
}

// SendRaw writes data to a client's WebSocket as one message, text or
// binary, outside the sequence of its gateway messages (a broken or
// hostile gateway's).
func (s *Server) SendRaw(userID string, binary bool, data []byte) {
	s.mu.Lock()
	c := s.clients[userID]
	s.mu.Unlock()
	if c == nil {
		return
	}
	mt := websocket.TextMessage
	if binary {
		mt = websocket.BinaryMessage
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ws != nil {
		c.ws.WriteMessage(mt, data)
	}
}

// CloseWS closes a client's WebSocket with a close code.
func (s *Server) CloseWS(userID string, code int) {
	s.mu.Lock()
	c := s.clients[userID]
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ws != nil {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
		c.ws.Close()
	}
}

// PauseUDP stops (true) or resumes (false) relaying media.
func (s *Server) PauseUDP(paused bool) { s.udpPause.Store(paused) }

// PausedDropped is how many media datagrams the server dropped because
// UDP was paused when it read them.
func (s *Server) PausedDropped() int64 { return s.dropped.Load() }

// RefuseIdentify closes every identify from now on with code (for example
// 4006, session no longer valid); 0 accepts them again.
func (s *Server) RefuseIdentify(code int) { s.refuse.Store(int32(code)) }

// Connected reports whether userID is in the server's channels.
func (s *Server) Connected(userID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[userID] != nil
}

// InjectUDP sends a raw datagram to a client's UDP address.
func (s *Server) InjectUDP(userID string, datagram []byte) error {
	s.mu.Lock()
	c := s.clients[userID]
	s.mu.Unlock()
	if c == nil || !c.addr.IsValid() {
		return fmt.Errorf("client %s has no UDP address yet", userID)
	}
	_, err := s.udp.WriteToUDPAddrPort(datagram, c.addr)
	return err
}

// Seal encrypts a media payload for a client as if another SSRC sent it,
// for tests that craft packets.
func (s *Server) Seal(userID string, h rtp.Header, payload []byte) ([]byte, error) {
	s.mu.Lock()
	c := s.clients[userID]
	s.mu.Unlock()
	if c == nil || c.cipher == nil {
		return nil, fmt.Errorf("client %s has no session yet", userID)
	}
	hb, _ := h.Marshal()
	return s.sealFor(c, hb, payload), nil
}

// SealWithCounter encrypts a media payload for a client under the given
// transport counter, leaving the client's counter alone; with SetCounter
// a test can steer the relay onto a chosen nonce.
func (s *Server) SealWithCounter(userID string, h rtp.Header, payload []byte, counter uint32) ([]byte, error) {
	s.mu.Lock()
	c := s.clients[userID]
	s.mu.Unlock()
	if c == nil || c.cipher == nil {
		return nil, fmt.Errorf("client %s has no session yet", userID)
	}
	hb, err := h.Marshal()
	if err != nil {
		return nil, fmt.Errorf("marshalling the header: %w", err)
	}
	return c.cipher.Seal(nil, hb, payload, counter), nil
}

// SetCounter sets the transport counter of the last packet sealed for a
// client: the next packet the relay (or Seal) sends it uses counter+1.
func (s *Server) SetCounter(userID string, counter uint32) error {
	s.mu.Lock()
	c := s.clients[userID]
	s.mu.Unlock()
	if c == nil {
		return fmt.Errorf("no client %s", userID)
	}
	c.mu.Lock()
	c.counter = counter
	c.mu.Unlock()
	return nil
}

// Resealed is the number of packets the relay sealed again under the next
// counter because their first ciphertext bytes read as an RTP extension
// profile (see sealFor).
func (s *Server) Resealed() int64 { return s.resealed.Load() }

// sealFor transport-encrypts a payload for a client under its next
// counter. A packet whose header has no extension (X bit clear, no CSRC)
// and whose first two ciphertext bytes, right after the 12-byte header,
// happen to read BE DE (one packet in 65,536) is sealed again under the
// following counter. @discordjs/voice 0.19.2 (VoiceReceiver.parsePacket)
// takes those two bytes for the one-byte extension profile without
// looking at the X bit, cuts 4 × (the next two bytes) bytes off the
// payload and so loses the frame (davey refuses what is left as
// unencrypted): issue 29, FRAMELOSS. By RFC 3550 §5.1 and the voice spec
// (discord-voice-dave.md C.1 and C.2: an extension preamble only if X=1)
// those bytes are ciphertext and the packet is valid. The fake plays
// Discord's SFU, which picks the counter per receiver, and any counter
// not used before is right (receivers read it from the packet); taking
// the next keeps the interop tests about glyphoxa, not that bug.
func (s *Server) sealFor(c *client, header, payload []byte) []byte {
	for {
		c.mu.Lock()
		c.counter++
		ctr := c.counter
		c.mu.Unlock()
		out := c.cipher.Seal(nil, header, payload, ctr)
		if !readsAsExtension(header, out) {
			return out
		}
		s.resealed.Add(1)
	}
}

// readsAsExtension reports whether a sealed packet without an RTP header
// extension has, where an extension's profile would be, the bytes of the
// one-byte-header profile (0xBEDE), in its ciphertext.
func readsAsExtension(header, pkt []byte) bool {
	const fixedHeader, extensionBit = 12, 0x10
	return len(header) == fixedHeader && header[0]&extensionBit == 0 &&
		len(pkt) >= fixedHeader+2 && pkt[fixedHeader] == 0xBE && pkt[fixedHeader+1] == 0xDE
}

// Send delivers messages to clients.
func (s *Server) Send(ds []Delivery) {
	for _, d := range ds {
		s.mu.Lock()
		c := s.clients[d.UserID]
		s.mu.Unlock()
		if c == nil {
			continue
		}
		if d.Binary != nil {
			c.sendBinary(d.Op, d.Binary)
		} else {
			c.sendJSON(d.Op, d.JSON)
		}
	}
}

// dave returns the DAVE handler of a channel, or nil.
func (s *Server) dave(channel string) DAVEHandler {
	if s.cfg.ChannelDAVE != nil {
		return s.cfg.ChannelDAVE(channel)
	}
	return s.cfg.DAVE
}

// daveCall runs a DAVE handler call of a channel and delivers its
// messages, to clients of that channel, before any other call runs.
func (s *Server) daveCall(channel string, f func(DAVEHandler) []Delivery) {
	h := s.dave(channel)
	if h == nil {
		return
	}
	s.daveMu.Lock()
	defer s.daveMu.Unlock()
	for _, d := range f(h) {
		s.mu.Lock()
		c := s.clients[d.UserID]
		s.mu.Unlock()
		if c == nil || c.channel != channel {
			continue
		}
		if d.Binary != nil {
			c.sendBinary(d.Op, d.Binary)
		} else {
			c.sendJSON(d.Op, d.JSON)
		}
	}
}

func (c *client) sendJSON(op gateway.Op, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	b, _ := gateway.EncodeText(op, v, c.seq)
	c.sent = append(c.sent, sent{seq: c.seq, data: b})
	if c.ws != nil {
		c.ws.WriteMessage(websocket.TextMessage, b)
	}
}

func (c *client) sendBinary(op gateway.Op, payload []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	b := gateway.EncodeServerBinary(c.seq, op, payload)
	c.sent = append(c.sent, sent{seq: c.seq, binary: true, data: b})
	if c.ws != nil {
		c.ws.WriteMessage(websocket.BinaryMessage, b)
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("v") != "8" {
		http.Error(w, "voice gateway v8 only", http.StatusBadRequest)
		return
	}
	ws, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.wg.Add(1)
	defer s.wg.Done()
	defer ws.Close()
	hello, _ := gateway.EncodeText(gateway.OpHello, gateway.Hello{HeartbeatInterval: float64(s.cfg.HeartbeatInterval.Milliseconds())}, gateway.NoSeq)
	ws.WriteMessage(websocket.TextMessage, hello)
	var me *client
	for {
		mt, data, err := ws.ReadMessage()
		if err != nil {
			if me != nil {
				me.mu.Lock()
				current := me.ws == ws
				if current {
					me.ws = nil
				}
				me.mu.Unlock()
				if current && websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
					s.leave(me)
				}
			}
			return
		}
		if mt == websocket.BinaryMessage {
			m, err := gateway.ParseClientBinary(data)
			if err != nil || me == nil {
				continue
			}
			s.daveCall(me.channel, func(h DAVEHandler) []Delivery { return h.FromClient(me.userID, m.Op, m.Payload) })
			continue
		}
		m, err := gateway.ParseText(data)
		if err != nil {
			ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(gateway.CloseDecodeError, "bad json"), time.Now().Add(time.Second))
			return
		}
		switch m.Op {
		case gateway.OpHeartbeat:
			var hb gateway.Heartbeat
			m.Decode(&hb)
			b, _ := gateway.EncodeText(gateway.OpHeartbeatAck, gateway.HeartbeatAck{T: hb.T}, gateway.NoSeq)
			if me != nil {
				me.mu.Lock()
				ws.WriteMessage(websocket.TextMessage, b)
				me.mu.Unlock()
			} else {
				ws.WriteMessage(websocket.TextMessage, b)
			}
		case gateway.OpIdentify:
			var id gateway.Identify
			if m.Decode(&id) != nil || id.Token == "" {
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(gateway.CloseAuthFailed, ""), time.Now().Add(time.Second))
				return
			}
			if code := int(s.refuse.Load()); code != 0 {
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, "identify refused"), time.Now().Add(time.Second))
				return
			}
			if s.cfg.RequireDAVE && id.MaxDAVEProtocolVersion < 1 {
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(gateway.CloseE2EERequired, "E2EE required"), time.Now().Add(time.Second))
				return
			}
			me = s.identify(ws, id)
		case gateway.OpSelectProtocol:
			if me == nil {
				continue
			}
			var sp gateway.SelectProtocol
			if m.Decode(&sp) != nil {
				continue
			}
			s.selectProtocol(me, sp)
		case gateway.OpResume:
			var rs gateway.Resume
			if m.Decode(&rs) != nil {
				continue
			}
			c := s.resume(ws, rs)
			if c == nil {
				ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(gateway.CloseSessionInvalid, "unknown session"), time.Now().Add(time.Second))
				return
			}
			me = c
		case gateway.OpSpeaking:
			if me == nil {
				continue
			}
			var sp gateway.Speaking
			m.Decode(&sp)
			s.broadcast(me, gateway.OpSpeaking, gateway.Speaking{Speaking: sp.Speaking, SSRC: me.ssrc, UserID: me.userID})
		case gateway.OpDAVETransitionReady, gateway.OpDAVEInvalidCommitWelcome:
			if me != nil {
				s.daveCall(me.channel, func(h DAVEHandler) []Delivery { return h.FromClient(me.userID, m.Op, m.Data) })
			}
		}
	}
}

func (s *Server) identify(ws *websocket.Conn, id gateway.Identify) *client {
	channel := ""
	if s.cfg.Channel != nil {
		channel = s.cfg.Channel(id)
	}
	s.mu.Lock()
	s.nextSSRC++
	c := &client{userID: id.UserID, sessionID: id.SessionID, token: id.Token, channel: channel, ssrc: s.nextSSRC,
		dave: id.MaxDAVEProtocolVersion, ws: ws}
	old := s.clients[id.UserID]
	if old != nil {
		old.mu.Lock()
		if old.ws != nil && old.ws != ws {
			if old.channel != channel {
				// Discord ends the old channel's session with 4014 when a
				// user shows up in another channel (a move).
				old.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(gateway.CloseDisconnected, "moved"), time.Now().Add(time.Second))
			}
			old.ws.Close()
		}
		old.mu.Unlock()
		delete(s.byAddr, old.addr)
	}
	s.clients[id.UserID] = c
	s.mu.Unlock()
	if old != nil && old.channel != channel {
		// The user moved: its old channel sees it leave.
		s.left(old)
	}
	host, port := s.udpAddr()
	c.sendJSON(gateway.OpReady, gateway.Ready{SSRC: c.ssrc, IP: host, Port: port, Modes: s.cfg.Modes})
	return c
}

func (s *Server) udpAddr() (string, int) {
	a := s.udp.LocalAddr().(*net.UDPAddr)
	return a.IP.String(), a.Port
}

func (s *Server) selectProtocol(c *client, sp gateway.SelectProtocol) {
	key := make([]byte, rtp.KeySize)
	rand.Read(key)
	ciph, err := rtp.NewCipher(sp.Data.Mode, key)
	if err != nil {
		c.mu.Lock()
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(gateway.CloseUnknownEncryption, ""), time.Now().Add(time.Second))
		c.ws.Close()
		c.mu.Unlock()
		return
	}
	addr, err := netip.ParseAddrPort(fmt.Sprintf("%s:%d", sp.Data.Address, sp.Data.Port))
	s.mu.Lock()
	c.mode, c.cipher = sp.Data.Mode, ciph
	c.heard = s.cfg.Clock.Now()
	if err == nil {
		c.addr = addr
		s.byAddr[addr] = c
	}
	var others []string
	for u, o := range s.clients {
		if u != c.userID && o.cipher != nil && o.channel == c.channel {
			others = append(others, u)
		}
	}
	s.mu.Unlock()
	dave := 0
	if c.dave >= 1 {
		dave = s.cfg.DAVEVersion
	}
	c.sendJSON(gateway.OpSessionDescription, gateway.SessionDescription{Mode: sp.Data.Mode, SecretKey: key, DAVEProtocolVersion: dave})
	if len(others) > 0 {
		c.sendJSON(gateway.OpClientsConnect, gateway.ClientsConnect{UserIDs: others})
	}
	s.broadcast(c, gateway.OpClientsConnect, gateway.ClientsConnect{UserIDs: []string{c.userID}})
	// Tell the newcomer which SSRC the others speak with.
	for _, u := range others {
		s.mu.Lock()
		o := s.clients[u]
		s.mu.Unlock()
		c.sendJSON(gateway.OpSpeaking, gateway.Speaking{Speaking: 0, SSRC: o.ssrc, UserID: u})
	}
	if dave > 0 {
		s.daveCall(c.channel, func(h DAVEHandler) []Delivery { return h.Joined(c.userID) })
	}
}

func (s *Server) resume(ws *websocket.Conn, rs gateway.Resume) *client {
	s.mu.Lock()
	var c *client
	for _, x := range s.clients {
		if x.sessionID == rs.SessionID && x.token == rs.Token {
			c = x
		}
	}
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	s.resumes.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ws = ws
	b, _ := gateway.EncodeText(gateway.OpResumed, nil, gateway.NoSeq)
	ws.WriteMessage(websocket.TextMessage, b)
	for _, m := range c.sent {
		if m.seq > rs.SeqAck {
			mt := websocket.TextMessage
			if m.binary {
				mt = websocket.BinaryMessage
			}
			ws.WriteMessage(mt, m.data)
		}
	}
	return c
}

// Disconnect removes a client as if a moderator disconnected it: its
// voice WebSocket is closed with 4014 and the others are told (op 13).
func (s *Server) Disconnect(userID string) { s.Kick(userID, gateway.CloseDisconnected) }

// Kick takes a client out of its channel as Discord does when the user
// is moved, kicked or disconnected (code 4014), or when the call ends or
// the voice server changes (4022): the voice WebSocket is closed with
// code, the client's session ends (it cannot resume), and the others are
// told (op 13). On a move Discord then sends new voice state and voice
// server updates on the main gateway; a test plays that by calling the
// client's Switch.
func (s *Server) Kick(userID string, code int) {
	s.mu.Lock()
	c := s.clients[userID]
	delete(s.clients, userID)
	if c != nil {
		delete(s.byAddr, c.addr)
	}
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.ws != nil {
		c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, "disconnected"), time.Now().Add(time.Second))
		c.ws.Close()
	}
	c.mu.Unlock()
	s.left(c)
}

// Keepalives returns how many UDP keepalive datagrams (8 bytes) a client
// sent since it selected its protocol; the fake ignores them otherwise.
func (s *Server) Keepalives(userID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keepalives[userID]
}

// StrayKeepalives returns how many keepalives came from addresses no
// client had selected yet (discord.js sends one before IP discovery).
func (s *Server) StrayKeepalives() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.strayKeepalives
}

// Resumes is the number of sessions resumed (op 7 answered by op 9).
func (s *Server) Resumes() int64 { return s.resumes.Load() }

// NATDropped is the number of media packets not delivered because the
// receiver's NAT mapping had expired (Config.NATTimeout).
func (s *Server) NATDropped() int64 { return s.natDropped.Load() }

// leave removes a client that closed its WebSocket normally, if it is
// still the user's current session.
func (s *Server) leave(c *client) {
	s.mu.Lock()
	current := s.clients[c.userID] == c
	if current {
		delete(s.clients, c.userID)
		delete(s.byAddr, c.addr)
	}
	s.mu.Unlock()
	if current {
		s.left(c)
	}
}

// left tells a departed client's channel that it left.
func (s *Server) left(c *client) {
	s.broadcast(c, gateway.OpClientDisconnect, gateway.ClientDisconnect{UserID: c.userID})
	if c.dave >= 1 && s.cfg.DAVEVersion > 0 {
		s.daveCall(c.channel, func(h DAVEHandler) []Delivery { return h.Left(c.userID) })
	}
}

// broadcast sends a message to the other clients of from's channel.
func (s *Server) broadcast(from *client, op gateway.Op, v any) {
	s.mu.Lock()
	var to []*client
	for u, c := range s.clients {
		if u != from.userID && c.cipher != nil && c.channel == from.channel {
			to = append(to, c)
		}
	}
	s.mu.Unlock()
	for _, c := range to {
		c.sendJSON(op, v)
	}
}

// keepaliveLen is the size of a client's UDP keepalive datagram.
const keepaliveLen = 8

// relay answers IP discovery, counts keepalives and forwards media.
func (s *Server) relay() {
	defer s.wg.Done()
	buf := make([]byte, 4096)
	var h rtp.Header
	for {
		n, from, err := s.udp.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		pkt := buf[:n]
		if ssrc, err := gateway.ParseDiscoveryRequest(pkt); err == nil {
			s.udp.WriteToUDPAddrPort(gateway.DiscoveryResponse(ssrc, from), from)
			continue
		}
		now := s.cfg.Clock.Now()
		s.mu.Lock()
		src := s.byAddr[from]
		if src != nil {
			src.heard = now
		}
		if len(pkt) == keepaliveLen {
			if src != nil {
				s.keepalives[src.userID]++
			} else {
				s.strayKeepalives++
			}
			s.mu.Unlock()
			continue
		}
		var dsts []*client
		nat := 0
		for _, c := range s.clients {
			if src != nil && c != src && c.cipher != nil && c.addr.IsValid() && c.channel == src.channel {
				if s.cfg.NATTimeout > 0 && now.Sub(c.heard) > s.cfg.NATTimeout {
					nat++
					continue
				}
				dsts = append(dsts, c)
			}
		}
		s.mu.Unlock()
		s.natDropped.Add(int64(nat))
		if src == nil {
			continue
		}
		if s.udpPause.Load() {
			s.dropped.Add(1)
			continue
		}
		hl, err := h.Unmarshal(pkt)
		if err != nil {
			continue
		}
		plain, err := src.cipher.Open(nil, pkt, hl)
		if err != nil {
			s.log.Warn("fake voice server: undecryptable packet", "from", src.userID, "err", err)
			continue
		}
		if s.cfg.Observe != nil {
			if payload, err := rtp.Payload(&h, plain); err == nil {
				s.cfg.Observe(src.userID, h, payload)
			}
		}
		for _, d := range dsts {
			out := s.sealFor(d, pkt[:hl], plain)
			s.udp.WriteToUDPAddrPort(out, d.addr)
			s.relayed.Add(1)
		}
	}
}

// Wait polls cond until it holds or the timeout passes.
func Wait(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

var _ = json.Marshal

// AnnounceSpeaker tells a client that ssrc belongs to userID (op 5), for
// tests that send crafted packets.
func (s *Server) AnnounceSpeaker(to, userID string, ssrc uint32) {
	s.mu.Lock()
	c := s.clients[to]
	s.mu.Unlock()
	if c != nil {
		c.sendJSON(gateway.OpSpeaking, gateway.Speaking{Speaking: 1, SSRC: ssrc, UserID: userID})
	}
}
