package dave

import (
	"bytes"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/dave/internal/daveypeer"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// daveyPeer is the independent DAVE implementation the tests interoperate
// with.
type daveyPeer = daveypeer.Peer

func startDavey(t *testing.T) *daveyPeer { return daveypeer.Start(t) }

func unhex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// member is either a Go session or a davey session.
type member struct {
	id    uint64
	goS   *Session
	davey string // davey session name
}

type interop struct {
	t     *testing.T
	gw    *fakeGateway
	peer  *daveyPeer
	chID  uint64
	users map[uint64]*member
}

// newInterop starts a scenario on its own channel; the peer reports
// failures to t from now on (scenarios run one after another).
func newInterop(t *testing.T, peer *daveyPeer, channel uint64) *interop {
	peer.ReportTo(t)
	return &interop{t: t, gw: newFakeGateway(t), peer: peer, chID: channel, users: map[uint64]*member{}}
}

func (x *interop) ids() []string {
	var out []string
	for id := range x.users {
		out = append(out, strconv.FormatUint(id, 10))
	}
	return out
}

// join connects a user (Go or davey) and returns its key package.
func (x *interop) join(id uint64, useDavey bool) *member {
	t := x.t
	m := &member{id: id}
	for _, o := range x.users {
		if o.goS != nil {
			x.gw.jsonOp(o.goS, gateway.OpClientsConnect, map[string][]string{"user_ids": {strconv.FormatUint(id, 10)}})
		}
	}
	if useDavey {
		m.davey = "u" + strconv.FormatUint(id, 10)
		x.peer.Must(map[string]any{"cmd": "init", "s": m.davey, "userId": strconv.FormatUint(id, 10), "channelId": strconv.FormatUint(x.chID, 10)})
		x.peer.Must(map[string]any{"cmd": "externalSender", "s": m.davey, "hex": hex.EncodeToString(x.gw.sender.Marshal())})
		kp := unhex(t, x.peer.Must(map[string]any{"cmd": "keyPackage", "s": m.davey}).Hex)
		if x.gw.kps[id], _ = mls.UnmarshalKeyPackage(kp); x.gw.kps[id] == nil {
			t.Fatalf("davey key package does not decode: %x", kp)
		}
	} else {
		s, err := NewSession(id, x.chID, WithClock(x.gw.now))
		if err != nil {
			t.Fatal(err)
		}
		x.gw.jsonOp(s, gateway.OpClientsConnect, map[string][]string{"user_ids": x.ids()})
		out, err := s.SessionDescription(1)
		if err != nil {
			t.Fatal(err)
		}
		if x.gw.kps[id], err = mls.UnmarshalKeyPackage(out[0].Binary); err != nil {
			t.Fatal(err)
		}
		x.gw.binOp(s, gateway.OpDAVEExternalSender, x.gw.sender.Marshal())
		m.goS = s
	}
	x.users[id] = m
	return m
}

// propose builds external proposals against epoch (all members share the
// group id = channel id).
func (x *interop) propose(epoch uint64, props ...*mls.Proposal) []*mls.MLSMessage {
	var out []*mls.MLSMessage
	for _, p := range props {
		m, err := mls.NewExternalProposal(binary64(x.chID), epoch, 0, p, x.gw.sig)
		if err != nil {
			x.t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func binary64(v uint64) []byte {
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
	return b
}

// commitFrom delivers op 27 to m and returns its op 28 (nil when it made
// no commit).
func (x *interop) commitFrom(m *member, payload *ProposalsPayload) *CommitWelcome {
	t := x.t
	raw := payload.Marshal()
	if m.goS != nil {
		out := x.gw.binOp(m.goS, gateway.OpDAVEProposals, raw)
		if len(out) == 0 {
			return nil
		}
		cw, err := ParseCommitWelcome(out[0].Binary)
		if err != nil {
			t.Fatal(err)
		}
		return cw
	}
	r := x.peer.Must(map[string]any{"cmd": "proposals", "s": m.davey, "op": payload.Operation, "hex": hex.EncodeToString(raw[1:]), "recognized": x.ids()})
	if r.Commit == "" {
		return nil
	}
	cw := &CommitWelcome{}
	cm, err := mls.UnmarshalMLSMessage(unhex(t, r.Commit))
	if err != nil {
		t.Fatalf("davey commit: %v", err)
	}
	cw.Commit = cm
	if r.Welcome != "" {
		if cw.Welcome, err = mls.UnmarshalWelcome(unhex(t, r.Welcome)); err != nil {
			t.Fatalf("davey welcome: %v", err)
		}
	}
	return cw
}

// announce sends the winning commit to members and the welcome to
// joiners, then executes the transition.
func (x *interop) announce(cw *CommitWelcome, members, joiners []*member) {
	t := x.t
	x.gw.tid++
	tid := x.gw.tid
	for _, m := range members {
		if m.goS != nil {
			if countReady(x.gw.binOp(m.goS, gateway.OpDAVEAnnounceCommit, TransitionPayload{tid, cw.Commit.Marshal()}.Marshal()), tid) != 1 {
				t.Fatalf("user %d did not accept the commit", m.id)
			}
		} else {
			x.peer.Must(map[string]any{"cmd": "commit", "s": m.davey, "hex": hex.EncodeToString(cw.Commit.Marshal())})
		}
	}
	for _, m := range joiners {
		if m.goS != nil {
			if countReady(x.gw.binOp(m.goS, gateway.OpDAVEWelcome, TransitionPayload{tid, cw.Welcome.Marshal()}.Marshal()), tid) != 1 {
				t.Fatalf("user %d did not accept the welcome", m.id)
			}
		} else {
			x.peer.Must(map[string]any{"cmd": "welcome", "s": m.davey, "hex": hex.EncodeToString(cw.Welcome.Marshal())})
		}
	}
	for _, m := range append(append([]*member{}, members...), joiners...) {
		if m.goS != nil {
			x.gw.jsonOp(m.goS, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": int(tid)})
		}
	}
}

func (x *interop) code(m *member) (string, uint64) {
	if m.goS != nil {
		return m.goS.PrivacyCode(), m.goS.Epoch()
	}
	r := x.peer.Must(map[string]any{"cmd": "state", "s": m.davey})
	return r.PrivacyCode, uint64(r.Epoch)
}

// check compares privacy codes and exchanges frames between all pairs.
func (x *interop) check(ms ...*member) {
	t := x.t
	t.Helper()
	code0, epoch0 := x.code(ms[0])
	if len(code0) != 30 {
		t.Fatalf("user %d privacy code %q", ms[0].id, code0)
	}
	for _, m := range ms[1:] {
		if c, e := x.code(m); c != code0 || e != epoch0 {
			t.Fatalf("user %d: code %s epoch %d; user %d: %s epoch %d", m.id, c, e, ms[0].id, code0, epoch0)
		}
	}
	t.Logf("epoch %d: %d members agree on privacy code %s", epoch0, len(ms), code0)
	for _, a := range ms {
		for _, b := range ms {
			if a == b {
				continue
			}
			frame := []byte("opus " + strconv.FormatUint(a.id, 10) + "→" + strconv.FormatUint(b.id, 10) + " at epoch " + strconv.FormatUint(epoch0, 10))
			var enc []byte
			if a.goS != nil {
				var err error
				if enc, err = a.goS.Encrypt(frame); err != nil {
					t.Fatal(err)
				}
			} else {
				enc = unhex(t, x.peer.Must(map[string]any{"cmd": "encrypt", "s": a.davey, "hex": hex.EncodeToString(frame)}).Hex)
			}
			if bytes.Equal(enc, frame) {
				t.Fatalf("user %d sent plaintext", a.id)
			}
			var dec []byte
			if b.goS != nil {
				var err error
				if dec, err = b.goS.Decrypt(a.id, enc); err != nil {
					t.Fatalf("user %d → %d (Go decrypts): %v", a.id, b.id, err)
				}
			} else {
				r, err := x.peer.Call(map[string]any{"cmd": "decrypt", "s": b.davey, "userId": strconv.FormatUint(a.id, 10), "hex": hex.EncodeToString(enc)})
				if err != nil {
					t.Fatalf("user %d → %d (davey decrypts): %v", a.id, b.id, err)
				}
				dec = unhex(t, r.Hex)
			}
			if !bytes.Equal(dec, frame) {
				t.Fatalf("user %d → %d: got %q", a.id, b.id, dec)
			}
			if b.goS != nil {
				if _, err := b.goS.Decrypt(a.id, enc); err == nil {
					t.Fatalf("user %d accepted a replay from %d", b.id, a.id)
				}
			} else {
				if _, err := x.peer.Call(map[string]any{"cmd": "decrypt", "s": b.davey, "userId": strconv.FormatUint(a.id, 10), "hex": hex.EncodeToString(enc)}); err == nil {
					t.Fatalf("davey user %d accepted a replay from %d", b.id, a.id)
				}
				r := x.peer.Must(map[string]any{"cmd": "decrypt", "s": b.davey, "userId": strconv.FormatUint(a.id, 10), "hex": hex.EncodeToString(silence)})
				if !bytes.Equal(unhex(t, r.Hex), silence) {
					t.Fatal("davey did not pass the silence frame through")
				}
			}
		}
	}
}

func leafIndexOf(t *testing.T, g *mls.Group, id uint64) uint32 {
	for i, l := range g.Members() {
		if len(l.Credential.Identity) == 8 && bytes.Equal(l.Credential.Identity, binary64(id)) {
			return i
		}
	}
	t.Fatalf("user %d not in group", id)
	return 0
}

func TestDaveyInterop(t *testing.T) {
	peer := startDavey(t)

	t.Run("go commit wins, davey joins, davey adds third, removes", func(t *testing.T) {
		x := newInterop(t, peer, 1111)
		g := x.join(10, false)
		d := x.join(20, true)
		add := func(id uint64) *mls.Proposal { return &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: x.gw.kps[id]} }
		// Both pending members commit an add of the other; Go's wins.
		cwG := x.commitFrom(g, &ProposalsPayload{Operation: ProposalsAppend, Messages: x.propose(0, add(20))})
		cwD := x.commitFrom(d, &ProposalsPayload{Operation: ProposalsAppend, Messages: x.propose(0, add(10))})
		if cwG == nil || cwD == nil || cwG.Welcome == nil {
			t.Fatal("missing initial commits")
		}
		x.announce(cwG, []*member{g}, []*member{d})
		x.check(g, d)
		goCode, err := g.goS.VerificationCode(20)
		if err != nil {
			t.Fatal(err)
		}
		if dc := x.peer.Must(map[string]any{"cmd": "verificationCode", "s": d.davey, "userId": "10"}).Code; dc != goCode || len(goCode) != 45 {
			t.Fatalf("verification codes differ: Go %q, davey %q", goCode, dc)
		}

		// A third member (davey) joins; both commit, the gateway picks
		// davey's, so Go processes a foreign commit.
		e := x.join(30, true)
		msgs := x.propose(1, add(30))
		cwG = x.commitFrom(g, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs})
		cwD = x.commitFrom(d, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs})
		if cwG == nil || cwD == nil {
			t.Fatal("missing commits for the third member")
		}
		x.announce(cwD, []*member{g, d}, []*member{e})
		x.check(g, d, e)

		// Revoke: an add is proposed and revoked before anyone commits.
		f := x.join(40, true)
		msgs = x.propose(2, add(40))
		ref := mls.ProposalRef(msgs[0].PublicMessage)
		for _, m := range []*member{g, d, e} {
			if x.commitFrom(m, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs}) == nil {
				t.Fatalf("user %d made no commit for the add", m.id)
			}
			if x.commitFrom(m, &ProposalsPayload{Operation: ProposalsRevoke, Refs: [][]byte{ref}}) != nil {
				t.Fatalf("user %d committed after the revoke", m.id)
			}
		}
		_ = f
		x.check(g, d, e)

		// Remove davey member e: commits carry an UpdatePath. Go's wins.
		rm := &mls.Proposal{Type: mls.ProposalRemove, Removed: leafIndexOf(t, g.goS.group, 30)}
		msgs = x.propose(2, rm)
		cwG = x.commitFrom(g, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs})
		cwD = x.commitFrom(d, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs})
		if cwG == nil || cwG.Commit.PublicMessage.Content.Commit.Path == nil || cwD == nil {
			t.Fatal("remove commits must carry a path")
		}
		t.Logf("remove commit with update path: %d bytes", len(cwG.Commit.Marshal()))
		x.announce(cwG, []*member{g, d}, nil)
		x.check(g, d)
	})

	t.Run("davey commit wins, go joins, davey removes with path, reset when alone", func(t *testing.T) {
		x := newInterop(t, peer, 2222)
		d := x.join(50, true)
		g := x.join(60, false)
		h := x.join(70, false)
		add := func(id uint64) *mls.Proposal { return &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: x.gw.kps[id]} }
		cwD := x.commitFrom(d, &ProposalsPayload{Operation: ProposalsAppend, Messages: x.propose(0, add(60), add(70))})
		if cwD == nil || cwD.Welcome == nil {
			t.Fatal("davey made no commit with welcome")
		}
		x.announce(cwD, []*member{d}, []*member{g, h})
		x.check(d, g, h)

		// Davey removes Go member h: Go member g decrypts davey's path.
		rm := &mls.Proposal{Type: mls.ProposalRemove, Removed: leafIndexOf(t, g.goS.group, 70)}
		msgs := x.propose(1, rm)
		cwD = x.commitFrom(d, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs})
		cwG := x.commitFrom(g, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs})
		if cwD == nil || cwD.Commit.PublicMessage.Content.Commit.Path == nil || cwG == nil {
			t.Fatal("remove commits must carry a path")
		}
		x.announce(cwD, []*member{d, g}, nil)
		x.check(d, g)

		// Davey leaves; the Go member is alone: op 24 (epoch 1) resets it
		// and op 21 with transition 0 executes at once. A new davey user
		// then forms a fresh group with it.
		delete(x.users, 50)
		out := x.gw.jsonOp(g.goS, gateway.OpDAVEPrepareEpoch, map[string]any{"epoch": 1, "protocol_version": 1})
		if len(out) != 1 || out[0].Op != gateway.OpDAVEKeyPackage {
			t.Fatalf("prepare epoch 1: %v", out)
		}
		x.gw.jsonOp(g.goS, gateway.OpDAVEPrepareTransition, map[string]any{"transition_id": 0, "protocol_version": 1})
		kp, err := mls.UnmarshalKeyPackage(out[0].Binary)
		if err != nil {
			t.Fatal(err)
		}
		x.gw.kps[60] = kp
		n := x.join(80, true)
		msgs = x.propose(0, add(80))
		cwG = x.commitFrom(g, &ProposalsPayload{Operation: ProposalsAppend, Messages: msgs})
		if cwG == nil || cwG.Welcome == nil {
			t.Fatal("no commit after the reset")
		}
		x.announce(cwG, []*member{g}, []*member{n})
		x.check(g, n)
	})
}
