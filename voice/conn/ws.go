package conn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
)

// wsGen is one WebSocket connection to the voice gateway. A resume or a
// re-identify makes a new one; the UDP side outlives it.
type wsGen struct {
	ws  *websocket.Conn
	wmu sync.Mutex

	done     chan struct{} // closed when the reader stops
	doneOnce sync.Once
	code     atomic.Int64
	cause    atomic.Value // error

	hello, ready, session, resumed chan json.RawMessage
	acked                          atomic.Bool
	beats                          atomic.Int64
	// wasResume is set on a connection that resumed a session.
	wasResume bool
	// retired is set on a connection closed on purpose (a switch or
	// Close): its end is not a loss.
	retired atomic.Bool
}

func newGen(ws *websocket.Conn) *wsGen {
	ws.SetReadLimit(MaxGatewayMessage)
	g := &wsGen{ws: ws, done: make(chan struct{}),
		hello: make(chan json.RawMessage, 1), ready: make(chan json.RawMessage, 1),
		session: make(chan json.RawMessage, 1), resumed: make(chan json.RawMessage, 1)}
	g.acked.Store(true)
	return g
}

func (g *wsGen) closeCode() int { return int(g.code.Load()) }

func (g *wsGen) err() error {
	if e, ok := g.cause.Load().(error); ok {
		return e
	}
	return nil
}

// await waits for a handshake message and decodes it into v.
func (g *wsGen) await(ctx context.Context, ch chan json.RawMessage, v any) error {
	select {
	case raw := <-ch:
		if v != nil {
			if err := json.Unmarshal(raw, v); err != nil {
				return fmt.Errorf("decoding: %w", err)
			}
		}
		return nil
	case <-g.done:
		if code := g.closeCode(); code != 0 {
			return &closeError{code: code, err: errors.New("the voice gateway closed the connection")}
		}
		return fmt.Errorf("connection lost: %v", g.err())
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *wsGen) sendJSON(op gateway.Op, v any) error {
	b, err := gateway.EncodeText(op, v, gateway.NoSeq)
	if err != nil {
		return err
	}
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := g.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		return fmt.Errorf("voice: sending op %d: %w", op, err)
	}
	return nil
}

func (g *wsGen) sendBinary(op gateway.Op, payload []byte) error {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := g.ws.WriteMessage(websocket.BinaryMessage, gateway.EncodeClientBinary(op, payload)); err != nil {
		return fmt.Errorf("voice: sending op %d: %w", op, err)
	}
	return nil
}

// close ends the connection with a close frame.
func (g *wsGen) close(code int) {
	g.wmu.Lock()
	g.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
	g.wmu.Unlock()
	g.ws.Close()
}

// drop ends the connection as a network failure would.
func (g *wsGen) drop() { g.ws.Close() }

// retire closes the connection on purpose.
func (g *wsGen) retire() {
	g.retired.Store(true)
	g.close(websocket.CloseNormalClosure)
}

// Close retires the connection (the reconnector closes replaced ones).
func (g *wsGen) Close() error {
	g.retire()
	return nil
}

// readLoop reads and dispatches the gateway's messages until the
// connection ends.
func (c *Conn) readLoop(g *wsGen) {
	defer c.wg.Done()
	defer c.lost(g)
	defer g.doneOnce.Do(func() { close(g.done) })
	for {
		mt, data, err := g.ws.ReadMessage()
		if err != nil {
			if errors.Is(err, websocket.ErrReadLimit) {
				c.log.Warn("the voice gateway sent a message over the limit; dropping the connection", "limit", MaxGatewayMessage)
				err = fmt.Errorf("voice: the gateway sent a message over %d bytes: %w", MaxGatewayMessage, err)
				g.ws.Close()
			}
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				g.code.Store(int64(ce.Code))
			}
			g.cause.Store(err)
			return
		}
		if mt == websocket.BinaryMessage {
			m, err := gateway.ParseServerBinary(data)
			if err != nil {
				c.log.Warn("voice gateway sent a malformed binary frame", "err", err)
				continue
			}
			c.lastSeq.Store(int64(m.Seq))
			c.handleBinary(g, m)
			continue
		}
		m, err := gateway.ParseText(data)
		if err != nil {
			c.log.Warn("voice gateway sent a malformed message", "err", err)
			continue
		}
		if m.Seq != gateway.NoSeq {
			c.lastSeq.Store(int64(m.Seq))
		}
		c.handleText(g, m)
	}
}

func offer(ch chan json.RawMessage, raw json.RawMessage) {
	select {
	case ch <- raw:
	default:
	}
}

func (c *Conn) handleText(g *wsGen, m gateway.Message) {
	switch m.Op {
	case gateway.OpHello:
		offer(g.hello, m.Data)
	case gateway.OpReady:
		offer(g.ready, m.Data)
	case gateway.OpSessionDescription:
		offer(g.session, m.Data)
	case gateway.OpResumed:
		offer(g.resumed, m.Data)
	case gateway.OpHeartbeatAck:
		g.acked.Store(true)
	case gateway.OpSpeaking:
		var s gateway.Speaking
		if m.Decode(&s) != nil || s.UserID == "" {
			return
		}
		c.mu.Lock()
		c.ssrcUser[s.SSRC] = s.UserID
		c.users[s.UserID] = true
		c.mu.Unlock()
		c.emit(Event{Kind: EventSpeaking, UserID: s.UserID})
	case gateway.OpClientsConnect:
		var cc gateway.ClientsConnect
		if m.Decode(&cc) != nil {
			return
		}
		c.mu.Lock()
		for _, u := range cc.UserIDs {
			c.users[u] = true
		}
		c.mu.Unlock()
		for _, u := range cc.UserIDs {
			c.emit(Event{Kind: EventUserJoined, UserID: u})
		}
		c.toE2EE(g, m.Op, m.Data)
	case gateway.OpClientDisconnect:
		var cd gateway.ClientDisconnect
		if m.Decode(&cd) != nil {
			return
		}
		c.mu.Lock()
		delete(c.users, cd.UserID)
		for s, u := range c.ssrcUser {
			if u == cd.UserID {
				delete(c.ssrcUser, s)
				c.droppedSSRCs = append(c.droppedSSRCs, s)
				c.laneDrops.Store(true)
			}
		}
		c.mu.Unlock()
		c.emit(Event{Kind: EventUserLeft, UserID: cd.UserID})
		c.toE2EE(g, m.Op, m.Data)
	case gateway.OpDAVEPrepareTransition, gateway.OpDAVEExecuteTransition, gateway.OpDAVEPrepareEpoch:
		c.toE2EE(g, m.Op, m.Data)
	}
}

func (c *Conn) toE2EE(g *wsGen, op gateway.Op, data json.RawMessage) {
	c.mu.Lock()
	e := c.e2ee
	c.mu.Unlock()
	if e == nil {
		return
	}
	before := e.Epoch()
	out, err := e.HandleJSON(op, data)
	if err != nil {
		c.log.Warn("DAVE could not handle a gateway message", "op", op, "err", err)
	}
	c.sendAll(g, out)
	if e.Epoch() != before {
		c.emit(Event{Kind: EventE2EEEpoch})
	}
}

func (c *Conn) handleBinary(g *wsGen, m gateway.BinaryMessage) {
	c.mu.Lock()
	e := c.e2ee
	c.mu.Unlock()
	if e == nil {
		return
	}
	before := e.Epoch()
	out, err := e.HandleBinary(m.Op, m.Payload)
	if err != nil {
		c.log.Warn("DAVE could not handle a gateway message", "op", m.Op, "err", err)
	}
	c.sendAll(g, out)
	if e.Epoch() != before {
		c.emit(Event{Kind: EventE2EEEpoch})
	}
}

// MaxGatewayMessage bounds one message of the voice gateway (4 MiB; the
// largest real ones, DAVE welcomes of a full channel, are a few hundred
// kilobytes). A larger one is not read: the connection is dropped as lost
// and resumed.
const MaxGatewayMessage = 4 << 20
