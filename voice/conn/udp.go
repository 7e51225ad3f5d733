package conn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
)

// maxDatagram is the largest media packet accepted; larger ones are dropped
// as oversized (Opus frames on Discord stay far below it).
const maxDatagram = 1500

// Packets from an SSRC nobody has announced yet wait up to unknownGrace (at
// most maxUnknown of them) for the gateway's speaking message: a speaker's
// first packets can overtake it.
const (
	unknownGrace = time.Second
	maxUnknown   = 64
)

// held is a packet waiting for its SSRC to be announced.
type held struct {
	data []byte
	at   time.Time
}

// readUDP receives media until its socket is closed.
func (c *Conn) readUDP(udp *net.UDPConn) {
	defer c.wg.Done()
	r := &receiver{c: c, lanes: map[uint32]*lane{}, pending: map[uint32][]held{}, plain: make([]byte, 0, 4096)}
	buf := make([]byte, 4096)
	for {
		udp.SetReadDeadline(time.Now().Add(c.cfg.ReorderDelay / 2))
		n, err := udp.Read(buf)
		now := time.Now()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && c.ctx.Err() == nil {
				r.tick(now, false)
				continue
			}
			r.tick(now, true)
			return // socket closed
		}
		c.stats.received.Add(1)
		r.handle(buf[:n], now)
		r.tick(now, false)
	}
}

// receiver is the state of one UDP reader.
type receiver struct {
	c       *Conn
	lanes   map[uint32]*lane
	pending map[uint32][]held
	plain   []byte
	h       rtp.Header
}

// handle processes one datagram.
func (r *receiver) handle(pkt []byte, now time.Time) {
	c := r.c
	switch {
	case len(pkt) > maxDatagram:
		c.stats.oversized.Add(1)
		return
	case len(pkt) == gateway.DiscoveryLen && pkt[0] == 0 && pkt[1] == 2:
		return // a late IP discovery answer
	case rtp.IsRTCP(pkt):
		c.stats.rtcp.Add(1)
		return
	}
	hl, err := r.h.Unmarshal(pkt)
	if err != nil {
		c.stats.truncated.Add(1)
		return
	}
	if r.h.PayloadType != rtp.PayloadTypeOpus {
		c.stats.notAudio.Add(1)
		return
	}
	r.dropLanes()
	user, ok := c.userForSSRC(r.h.SSRC)
	if !ok {
		q := r.pending[r.h.SSRC]
		if len(q) >= maxUnknown || len(r.pending) >= 8 && q == nil {
			c.stats.unknownSSRC.Add(1)
			return
		}
		r.pending[r.h.SSRC] = append(q, held{data: bytes.Clone(pkt), at: now})
		return
	}
	if q, ok := r.pending[r.h.SSRC]; ok {
		// The SSRC was just announced: its waiting packets go first.
		delete(r.pending, r.h.SSRC)
		ssrc := r.h.SSRC
		for _, h := range q {
			r.handle(h.data, h.at)
		}
		if _, err := r.h.Unmarshal(pkt); err != nil || r.h.SSRC != ssrc {
			return
		}
	}
	ciph := c.cipher.Load()
	r.plain, err = ciph.Open(r.plain[:0], pkt, hl)
	if err != nil {
		if errors.Is(err, rtp.ErrAuth) {
			c.stats.authFailed.Add(1)
		} else {
			c.stats.truncated.Add(1)
		}
		return
	}
	frame, err := rtp.Payload(&r.h, r.plain)
	if err != nil {
		c.stats.truncated.Add(1)
		return
	}
	if e := c.currentE2EE(); e != nil {
		if frame, err = e.Decrypt(parseUint(user), frame); err != nil {
			c.stats.e2ee.Add(1)
			return
		}
	}
	l, ok := r.lanes[r.h.SSRC]
	if !ok {
		l = &lane{}
		r.lanes[r.h.SSRC] = l
	}
	p := audio.Packet{UserID: user, SSRC: r.h.SSRC, Sequence: r.h.Sequence, Timestamp: r.h.Timestamp,
		Opus: bytes.Clone(frame), Received: now}
	for _, out := range l.push(p, r.late) {
		c.deliver(out)
	}
}

func (r *receiver) late() { r.c.stats.late.Add(1) }

// dropLanes ends the lanes of the SSRCs the connection gave up (their
// users disconnected, op 13), delivering what they held.
func (r *receiver) dropLanes() {
	for _, ssrc := range r.c.takeDroppedSSRCs() {
		if l, ok := r.lanes[ssrc]; ok {
			for _, p := range l.flush() {
				r.c.deliver(p)
			}
			delete(r.lanes, ssrc)
		}
	}
}

// tick releases packets whose SSRC is now known, drops those that waited
// too long, and gives up on missing packets past the reorder delay; it
// also sends what the E2EE session wants sent on its own.
func (r *receiver) tick(now time.Time, final bool) {
	if !final {
		r.c.pollE2EE()
	}
	r.dropLanes()
	for ssrc, q := range r.pending {
		if _, ok := r.c.userForSSRC(ssrc); ok {
			delete(r.pending, ssrc)
			for _, h := range q {
				r.handle(h.data, h.at)
			}
			continue
		}
		if final || now.Sub(q[0].at) > unknownGrace {
			delete(r.pending, ssrc)
			r.c.stats.unknownSSRC.Add(uint64(len(q)))
		}
	}
	for _, l := range r.lanes {
		for _, p := range l.expire(now, r.c.cfg.ReorderDelay, final) {
			r.c.deliver(p)
		}
	}
}

// takeDroppedSSRCs returns the SSRCs whose lanes must end, once.
func (c *Conn) takeDroppedSSRCs() []uint32 {
	if !c.laneDrops.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.laneDrops.Store(false)
	out := c.droppedSSRCs
	c.droppedSSRCs = nil
	return out
}

func (c *Conn) currentE2EE() E2EE {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.e2ee
}

func (c *Conn) deliver(p audio.Packet) {
	c.stats.lost.Add(uint64(p.Lost))
	select {
	case c.packets <- p:
		c.stats.delivered.Add(1)
	default:
		c.stats.backpressure.Add(1)
	}
}

// lane puts one speaker's packets back in sequence order. A packet that
// arrives ahead of a missing one waits up to the reorder delay; then the
// missing ones are given up as lost.
//
// A lane starts over (issue 29) instead of dropping the rest of a stream
// when the sender's numbering restarted:
//
//   - a sequence number more than maxJump (1000 packets, 20 s of audio)
//     from the expected one, either way: an SSRC reused by a restarted
//     client, or a sender that jumped its numbering;
//   - a lower sequence number after the lane was idle restartGap (a
//     client that reconnected with its old SSRC);
//   - the speaker's client disconnected (op 13): the connection drops its
//     lanes;
//   - a speaking message (op 5) named another user for the SSRC, with no
//     op 13 first (PROBE29: the new owner's stream, numbered just below
//     the old one's, was dropped as late).
//
// A restart reports no loss (the packets in between were never sent), and
// what the lane held is delivered first. The first packets of a lane
// (after a start or a restart) wait for up to startWindow packets or the
// reorder delay, so that a packet or two reordered at the very start of
// a stream are put in order rather than dropped as late.
type lane struct {
	user    string // whose stream it is: an SSRC named anew by op 5 for another user starts over
	started bool
	opening bool   // the start of the stream is not fixed yet
	next    uint16 // sequence expected next
	held    []audio.Packet
	last    time.Time // when the last packet arrived
}

const (
	// maxHeld bounds the packets waiting for a missing one.
	maxHeld = 16
	// startWindow is how many packets the start of a stream waits for
	// (at most the reorder delay) before the lowest is taken as its
	// first.
	startWindow = 3
	// maxJump is the largest sequence step, either way, taken as the
	// same stream: 1000 packets, 20 s of 20 ms frames.
	maxJump = 1000
	// restartGap is how long a lane must have been idle for a lower
	// sequence number to mean a restarted stream rather than a late
	// packet.
	restartGap = time.Second
)

// push takes packet p and returns the packets now in order; late counts
// a packet dropped as a duplicate or as given up already.
func (l *lane) push(p audio.Packet, late func()) []audio.Packet {
	var out []audio.Packet
	if l.started {
		d := int16(p.Sequence - l.next)
		if p.UserID != l.user || d > maxJump || d < -maxJump || d < 0 && !l.opening && p.Received.Sub(l.last) >= restartGap {
			out = l.flush()
			*l = lane{held: l.held[:0]}
		}
	}
	if !l.started {
		l.started, l.opening, l.next, l.user = true, true, p.Sequence, p.UserID
	}
	l.last = p.Received
	d := int16(p.Sequence - l.next)
	if l.opening && d < 0 && d >= -maxHeld {
		// Earlier than the packets seen so far, at the very start: the
		// stream starts here.
		l.next, d = p.Sequence, 0
	}
	switch {
	case d < 0:
		late() // a duplicate or a packet given up as lost
		return out
	case d == 0 && !l.opening:
		out = append(out, p)
		l.next++
		return append(out, l.drain()...)
	}
	for _, h := range l.held {
		if h.Sequence == p.Sequence {
			late()
			return out
		}
	}
	l.held = append(l.held, p)
	if l.opening {
		if len(l.held) < startWindow {
			return out
		}
		l.opening = false
		out = append(out, l.drain()...)
	}
	if len(l.held) > maxHeld {
		out = append(out, l.skip()...)
	}
	return out
}

// flush releases everything held, in order, giving up what is missing.
func (l *lane) flush() []audio.Packet {
	var out []audio.Packet
	for len(l.held) > 0 {
		out = append(out, l.skip()...)
	}
	return out
}

// drain releases held packets that are now in order.
func (l *lane) drain() []audio.Packet {
	var out []audio.Packet
	for {
		k := -1
		for i, h := range l.held {
			if h.Sequence == l.next {
				k = i
				break
			}
		}
		if k < 0 {
			return out
		}
		out = append(out, l.held[k])
		l.held = append(l.held[:k], l.held[k+1:]...)
		l.next++
	}
}

// skip gives up the missing packets before the earliest held one.
func (l *lane) skip() []audio.Packet {
	l.opening = false
	if len(l.held) == 0 {
		return nil
	}
	first := 0
	for i, h := range l.held {
		if int16(h.Sequence-l.held[first].Sequence) < 0 {
			first = i
		}
	}
	p := l.held[first]
	l.held = append(l.held[:first], l.held[first+1:]...)
	p.Lost = int(uint16(p.Sequence - l.next))
	l.next = p.Sequence + 1
	return append([]audio.Packet{p}, l.drain()...)
}

// expire gives up missing packets once the oldest held one has waited the
// reorder delay (or at once when all is set).
func (l *lane) expire(now time.Time, delay time.Duration, all bool) []audio.Packet {
	var out []audio.Packet
	for len(l.held) > 0 {
		oldest := l.held[0].Received
		for _, h := range l.held {
			if h.Received.Before(oldest) {
				oldest = h.Received
			}
		}
		if !all && now.Sub(oldest) < delay {
			return out
		}
		out = append(out, l.skip()...)
	}
	return out
}

// DefaultKeepaliveInterval is how often discord.js sends its UDP keepalive.
const DefaultKeepaliveInterval = 5 * time.Second

// keepaliveLen is the size of a keepalive datagram: a 32-bit little-endian
// counter, then four zero bytes, as discord.js sends it.
const keepaliveLen = 8

// keepalive sends a keepalive datagram on udp every
// Config.KeepaliveInterval until the socket's reader has stopped (done) or
// the connection ends. Discord answers nothing we need; the datagrams keep
// a NAT mapping open while the bot only listens.
func (c *Conn) keepalive(udp *net.UDPConn, done <-chan struct{}) {
	defer c.wg.Done()
	if c.cfg.KeepaliveInterval < 0 {
		return
	}
	var counter uint32
	buf := make([]byte, keepaliveLen)
	for {
		t := c.cfg.Clock.NewTimer(c.cfg.KeepaliveInterval)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-done:
			t.Stop()
			return
		case <-t.C():
		}
		binary.LittleEndian.PutUint32(buf, counter)
		if _, err := udp.Write(buf); err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			c.log.Debug("voice UDP keepalive", "err", err)
			continue
		}
		counter++
		c.stats.keepalives.Add(1)
	}
}

// pollE2EE sends what an E2EE session with its own recovery wants sent,
// and reports once that it gave up.
func (c *Conn) pollE2EE() {
	c.mu.Lock()
	e, g := c.e2ee, c.gen
	reported := c.failReported == e
	c.mu.Unlock()
	r, ok := e.(E2EERecovery)
	if !ok {
		return
	}
	if out := r.TakeOutbound(); len(out) > 0 && g != nil {
		c.sendAll(g, out)
	}
	if err := r.Failed(); err != nil && !reported {
		c.mu.Lock()
		c.failReported = e
		c.mu.Unlock()
		c.log.Error("voice: end-to-end encryption failed", "err", err)
		c.emit(Event{Kind: EventE2EEFailed, Err: err})
	}
}
