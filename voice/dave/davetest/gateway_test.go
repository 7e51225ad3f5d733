package davetest

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strconv"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

const channel = 444444444444444444

// call connects real dave.Sessions to the Gateway in process: it plays the
// voice server's message delivery (ops 11 and 13 included) without the
// network.
type call struct {
	t        *testing.T
	gw       *Gateway
	sessions map[string]*dave.Session
	// hold, if set, keeps a client's op 28 back: commits are delivered
	// only when release is called.
	hold     map[string]bool
	held     []pending
	received map[gateway.Op]int
	// others are members that are not dave.Sessions (davey, in the
	// interop test).
	others map[string]func(voicetest.Delivery) []conn.Outbound
}

type pending struct {
	user    string
	payload []byte
}

func newCall(t *testing.T) *call {
	gw, err := New(channel, WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	if err != nil {
		t.Fatal(err)
	}
	return &call{t: t, gw: gw, sessions: map[string]*dave.Session{}, hold: map[string]bool{}, received: map[gateway.Op]int{},
		others: map[string]func(voicetest.Delivery) []conn.Outbound{}}
}

// deliver hands gateway messages to sessions and their answers back to the
// gateway until nothing is left.
func (c *call) deliver(ds []voicetest.Delivery) {
	c.t.Helper()
	for len(ds) > 0 {
		d := ds[0]
		ds = ds[1:]
		s := c.sessions[d.UserID]
		other := c.others[d.UserID]
		if s == nil && other == nil {
			continue
		}
		c.received[d.Op]++
		var out []conn.Outbound
		var err error
		switch {
		case other != nil:
			out = other(d)
		case d.Binary != nil:
			out, err = s.HandleBinary(d.Op, d.Binary)
		default:
			raw, _ := json.Marshal(d.JSON)
			out, err = s.HandleJSON(d.Op, raw)
		}
		if err != nil {
			c.t.Fatalf("user %s, op %d: %v", d.UserID, d.Op, err)
		}
		for _, o := range out {
			if o.Op == gateway.OpDAVECommitWelcome && c.hold[d.UserID] {
				c.held = append(c.held, pending{d.UserID, o.Binary})
				continue
			}
			ds = append(ds, c.gw.FromClient(d.UserID, o.Op, payload(o))...)
		}
	}
}

func payload(o conn.Outbound) []byte {
	if o.Binary != nil {
		return o.Binary
	}
	b, _ := json.Marshal(o.JSON)
	return b
}

// release delivers the held commits, oldest first.
func (c *call) release() {
	held := c.held
	c.held = nil
	for _, h := range held {
		c.deliver(c.gw.FromClient(h.user, gateway.OpDAVECommitWelcome, h.payload))
	}
}

func (c *call) broadcast(op gateway.Op, v any, except string) {
	raw, _ := json.Marshal(v)
	for id, s := range c.sessions {
		if id != except {
			if _, err := s.HandleJSON(op, raw); err != nil {
				c.t.Fatal(err)
			}
		}
	}
}

// join connects a user: op 11 both ways, op 4, then the gateway.
func (c *call) join(id string) *dave.Session {
	c.t.Helper()
	uid, _ := strconv.ParseUint(id, 10, 64)
	s, err := dave.NewSession(uid, channel)
	if err != nil {
		c.t.Fatal(err)
	}
	others := c.ids()
	c.broadcast(gateway.OpClientsConnect, gateway.ClientsConnect{UserIDs: []string{id}}, "")
	c.sessions[id] = s
	raw, _ := json.Marshal(gateway.ClientsConnect{UserIDs: others})
	if _, err := s.HandleJSON(gateway.OpClientsConnect, raw); err != nil {
		c.t.Fatal(err)
	}
	out, err := s.SessionDescription(1)
	if err != nil {
		c.t.Fatal(err)
	}
	c.deliver(c.gw.Joined(id))
	for _, o := range out {
		c.deliver(c.gw.FromClient(id, o.Op, payload(o)))
	}
	return s
}

// ids returns every connected user.
func (c *call) ids() []string {
	var ids []string
	for id := range c.sessions {
		ids = append(ids, id)
	}
	for id := range c.others {
		ids = append(ids, id)
	}
	return ids
}

func (c *call) leave(id string) {
	delete(c.sessions, id)
	delete(c.others, id)
	c.broadcast(gateway.OpClientDisconnect, gateway.ClientDisconnect{UserID: id}, "")
	c.deliver(c.gw.Left(id))
}

// agree checks that every session and the gateway are at epoch with the
// same privacy code, every session encrypts, and frames pass between every
// pair.
func (c *call) agree(epoch uint64) {
	c.t.Helper()
	if !c.gw.Settled() || c.gw.Epoch() != epoch {
		c.t.Fatalf("gateway at epoch %d (settled %v), want %d", c.gw.Epoch(), c.gw.Settled(), epoch)
	}
	var code string
	for id, s := range c.sessions {
		if s.Epoch() != epoch || !s.Ready() {
			c.t.Fatalf("user %s at epoch %d, ready %v; want epoch %d", id, s.Epoch(), s.Ready(), epoch)
		}
		if code == "" {
			code = s.PrivacyCode()
		} else if s.PrivacyCode() != code {
			c.t.Fatalf("user %s has privacy code %s, others %s", id, s.PrivacyCode(), code)
		}
	}
	for from, a := range c.sessions {
		for to, b := range c.sessions {
			if from == to {
				continue
			}
			frame := []byte("opus from " + from + " to " + to)
			enc, err := a.Encrypt(frame)
			if err != nil || bytes.Equal(enc, frame) {
				c.t.Fatalf("%s did not encrypt: %v", from, err)
			}
			uid, _ := strconv.ParseUint(from, 10, 64)
			if dec, err := b.Decrypt(uid, enc); err != nil || !bytes.Equal(dec, frame) {
				c.t.Fatalf("%s → %s: %v", from, to, err)
			}
		}
	}
}

func TestGatewayLifecycle(t *testing.T) {
	c := newCall(t)
	c.join("1")
	if c.gw.Epoch() != 0 || c.received[gateway.OpDAVEProposals] != 0 {
		t.Fatal("a lone client must not get proposals")
	}
	c.join("2")
	c.agree(1)

	// A third joins: both members commit, the first wins, the other
	// discards its own and follows.
	c.join("3")
	c.agree(2)
	if st := c.gw.Stats(); st.Commits != 2 || st.Ignored != 2 || st.Executed != 2 {
		t.Fatalf("stats %+v", st)
	}
	if m := c.gw.Members(); len(m) != 3 {
		t.Fatalf("members %v", m)
	}

	// A member leaves: removal commits carry a path.
	c.leave("2")
	c.agree(3)
	// Its leaf is reused by the next joiner.
	c.join("4")
	c.agree(4)
	if m := c.gw.Members(); len(m) != 3 || m[1] != "4" {
		t.Fatalf("members %v, want 4 in the blank leaf 1", m)
	}

	// Down to one member: it is reset; a new group forms with the next.
	c.leave("4")
	c.agree(5)
	c.leave("3")
	if c.gw.Epoch() != 0 || c.gw.Stats().Resets != 1 || c.sessions["1"].Epoch() != 0 {
		t.Fatalf("no reset: gateway epoch %d, stats %+v", c.gw.Epoch(), c.gw.Stats())
	}
	c.join("5")
	c.agree(1)
}

func TestGatewayRevokesProposalsForALeaver(t *testing.T) {
	c := newCall(t)
	c.join("1")
	c.join("2")
	c.agree(1)
	// Commits are held: the add of 3 stays pending when 3 leaves.
	c.hold["1"], c.hold["2"] = true, true
	c.join("3")
	if len(c.held) != 2 {
		t.Fatalf("%d commits held", len(c.held))
	}
	c.leave("3")
	if st := c.gw.Stats(); st.Revoked != 2 {
		t.Fatalf("stats %+v", st)
	}
	// The stale commits lose: the epoch stays.
	c.hold = map[string]bool{}
	c.release()
	if st := c.gw.Stats(); st.Commits != 1 || st.Ignored != 3 {
		t.Fatalf("stats %+v", st)
	}
	c.agree(1)
}

func TestGatewayPicksTheFirstCommit(t *testing.T) {
	c := newCall(t)
	c.join("1")
	c.join("2")
	c.agree(1)
	c.hold["1"], c.hold["2"] = true, true
	c.join("3")
	// 2's commit goes first, so 1 must process a foreign commit.
	c.held[0], c.held[1] = c.held[1], c.held[0]
	if c.held[0].user != "2" {
		t.Fatalf("held %v", c.held)
	}
	c.hold = map[string]bool{}
	c.release()
	c.agree(2)
}

func TestGatewayReaddsAMemberThatRejectsAWelcome(t *testing.T) {
	c := newCall(t)
	c.join("1")
	c.join("2")
	c.agree(1)
	c.hold["1"], c.hold["2"] = true, true
	c.join("3")
	c.hold = map[string]bool{}
	// 3's welcome is corrupted in transit: it reports op 31 and sends a
	// new key package; the gateway removes and re-adds it.
	bad := &corrupting{c: c, user: "3"}
	held := c.held
	c.held = nil
	for _, h := range held[:1] {
		bad.deliver(c.gw.FromClient(h.user, gateway.OpDAVECommitWelcome, h.payload))
	}
	if c.gw.Stats().Invalid != 1 {
		t.Fatalf("stats %+v", c.gw.Stats())
	}
	c.agree(4) // epoch 2 added 3, 3 removes it, 4 re-adds it
}

// corrupting delivers like call.deliver but breaks the welcome to user.
type corrupting struct {
	c    *call
	user string
}

func (b *corrupting) deliver(ds []voicetest.Delivery) {
	for i, d := range ds {
		if d.UserID == b.user && d.Op == gateway.OpDAVEWelcome {
			w := bytes.Clone(d.Binary)
			w[len(w)-1] ^= 0xFF
			ds[i].Binary = w
		}
	}
	b.c.deliver(ds)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(b)))
	return len(b), nil
}
