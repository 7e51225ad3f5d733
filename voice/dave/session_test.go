package dave

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

const testChannel = 987654321

// fakeGateway plays the voice gateway: external sender, proposal fan-out,
// commit selection and welcomes.
type fakeGateway struct {
	t       testing.TB
	sig     *mls.SignatureKey
	sender  mls.ExternalSender
	clock   time.Time
	members map[uint64]*Session
	kps     map[uint64]*mls.KeyPackage
	tid     uint16
	// opts are the options of the users' sessions, by user.
	opts map[uint64][]Option
}

func newFakeGateway(t testing.TB) *fakeGateway {
	sig, err := mls.GenerateSignatureKey()
	if err != nil {
		t.Fatal(err)
	}
	return &fakeGateway{t: t, sig: sig, clock: fixedNow(), members: map[uint64]*Session{}, kps: map[uint64]*mls.KeyPackage{},
		sender: mls.ExternalSender{SignatureKey: sig.Public(), Credential: mls.Credential{Type: mls.CredentialBasic, Identity: []byte("gateway")}}}
}

func (gw *fakeGateway) now() time.Time { return gw.clock }

func (gw *fakeGateway) jsonOp(s *Session, op gateway.Op, v any) []conn.Outbound {
	gw.t.Helper()
	raw, _ := json.Marshal(v)
	out, err := s.HandleJSON(op, raw)
	if err != nil {
		gw.t.Fatalf("op %d: %v", op, err)
	}
	return out
}

func (gw *fakeGateway) binOp(s *Session, op gateway.Op, payload []byte) []conn.Outbound {
	gw.t.Helper()
	out, err := s.HandleBinary(op, payload)
	if err != nil {
		gw.t.Fatalf("op %d: %v", op, err)
	}
	return out
}

// connect brings a new user into the call.
func (gw *fakeGateway) connect(id uint64) *Session {
	gw.t.Helper()
	s, err := NewSession(id, testChannel, append([]Option{WithClock(gw.now)}, gw.opts[id]...)...)
	if err != nil {
		gw.t.Fatal(err)
	}
	var others []string
	for uid, m := range gw.members {
		others = append(others, strconv.FormatUint(uid, 10))
		gw.jsonOp(m, gateway.OpClientsConnect, map[string][]string{"user_ids": {strconv.FormatUint(id, 10)}})
	}
	gw.jsonOp(s, gateway.OpClientsConnect, map[string][]string{"user_ids": others})
	out, err := s.SessionDescription(1)
	if err != nil || len(out) != 1 || out[0].Op != gateway.OpDAVEKeyPackage {
		gw.t.Fatalf("session description: %v %v", out, err)
	}
	kp, err := mls.UnmarshalKeyPackage(out[0].Binary)
	if err != nil {
		gw.t.Fatal(err)
	}
	gw.kps[id] = kp
	gw.binOp(s, gateway.OpDAVEExternalSender, gw.sender.Marshal())
	gw.members[id] = s
	return s
}

func (gw *fakeGateway) proposal(s *Session, p *mls.Proposal) *mls.MLSMessage {
	g := s.current()
	m, err := mls.NewExternalProposal(g.GroupID(), g.Epoch(), 0, p, gw.sig)
	if err != nil {
		gw.t.Fatal(err)
	}
	return m
}

// round sends proposals to the given members, collects their commits,
// picks the one of winner, announces it and sends welcomes to joiners.
//
// The same proposal messages go to every committer, as the real gateway
// broadcasts them; a committer that is also a joiner (a pending member
// whose commit lost) gets the welcome instead of the commit.
func (gw *fakeGateway) round(committers []uint64, winner uint64, joiners []uint64, props func(s *Session) []*mls.MLSMessage) {
	gw.t.Helper()
	commits := map[uint64]*CommitWelcome{}
	msgs := props(gw.members[winner])
	joining := map[uint64]bool{}
	for _, id := range joiners {
		joining[id] = true
	}
	for _, id := range committers {
		s := gw.members[id]
		payload := (&ProposalsPayload{Operation: ProposalsAppend, Messages: msgs}).Marshal()
		out := gw.binOp(s, gateway.OpDAVEProposals, payload)
		if len(out) != 1 || out[0].Op != gateway.OpDAVECommitWelcome {
			gw.t.Fatalf("user %d did not commit: %v", id, out)
		}
		cw, err := ParseCommitWelcome(out[0].Binary)
		if err != nil {
			gw.t.Fatal(err)
		}
		commits[id] = cw
	}
	win := commits[winner]
	gw.tid++
	tid := gw.tid
	var readies int
	for _, id := range committers {
		if joining[id] {
			continue
		}
		out := gw.binOp(gw.members[id], gateway.OpDAVEAnnounceCommit, TransitionPayload{tid, win.Commit.Marshal()}.Marshal())
		readies += countReady(out, tid)
	}
	for _, id := range joiners {
		out := gw.binOp(gw.members[id], gateway.OpDAVEWelcome, TransitionPayload{tid, win.Welcome.Marshal()}.Marshal())
		readies += countReady(out, tid)
	}
	want := len(joiners)
	for _, id := range committers {
		if !joining[id] {
			want++
		}
	}
	if readies != want {
		gw.t.Fatalf("%d transition-ready replies, want %d", readies, want)
	}
}

func countReady(out []conn.Outbound, tid uint16) int {
	n := 0
	for _, o := range out {
		if o.Op == gateway.OpDAVETransitionReady && o.JSON.(map[string]int)["transition_id"] == int(tid) {
			n++
		}
	}
	return n
}

func (gw *fakeGateway) execute() {
	for _, s := range gw.members {
		gw.jsonOp(s, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": int(gw.tid)})
	}
}

func leafOf(t *testing.T, s *Session, id uint64) uint32 {
	for i, l := range s.group.Members() {
		if binary.BigEndian.Uint64(l.Credential.Identity) == id {
			return i
		}
	}
	t.Fatalf("user %d not in group", id)
	return 0
}

func exchange(t *testing.T, from, to *Session) {
	t.Helper()
	frame := []byte("opus frame payload " + strconv.FormatUint(from.userID, 10))
	enc, err := from.Encrypt(frame)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(enc, frame) {
		t.Fatalf("user %d sent a plaintext frame", from.userID)
	}
	dec, err := to.Decrypt(from.userID, enc)
	if err != nil || !bytes.Equal(dec, frame) {
		t.Fatalf("user %d → %d: %v", from.userID, to.userID, err)
	}
	if _, err := to.Decrypt(from.userID, enc); err == nil {
		t.Fatalf("user %d accepted a replayed frame", to.userID)
	}
}

func samePrivacy(t *testing.T, ss ...*Session) {
	t.Helper()
	code := ss[0].PrivacyCode()
	if len(code) != 30 {
		t.Fatalf("privacy code %q", code)
	}
	for _, s := range ss[1:] {
		if s.PrivacyCode() != code || s.Epoch() != ss[0].Epoch() {
			t.Fatalf("user %d: privacy code %s epoch %d, user %d: %s epoch %d", s.userID, s.PrivacyCode(), s.Epoch(), ss[0].userID, code, ss[0].Epoch())
		}
	}
}

func TestSessionLifecycle(t *testing.T) {
	gw := newFakeGateway(t)
	a := gw.connect(1)
	b := gw.connect(2)

	// Before any group, with DAVE on: no send key, so no frame (never
	// plaintext into an end-to-end encrypted call); silence always passes.
	if out, err := a.Encrypt([]byte("plain")); !errors.Is(err, ErrNoSendKey) || out != nil {
		t.Fatalf("before the group exists Encrypt returned %q, %v; want no frame and ErrNoSendKey", out, err)
	}
	if out, err := a.Encrypt(silence); err != nil || !bytes.Equal(out, silence) {
		t.Fatalf("silence before the group: %q, %v", out, err)
	}

	// Initial group: both pending members commit adding the other; the
	// gateway picks A's commit and welcomes B.
	msgsFor := map[uint64]*mls.MLSMessage{
		1: gw.proposal(a, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]}),
		2: gw.proposal(b, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[1]}),
	}
	var winner *CommitWelcome
	for _, s := range []*Session{a, b} {
		out := gw.binOp(s, gateway.OpDAVEProposals, (&ProposalsPayload{Operation: ProposalsAppend, Messages: []*mls.MLSMessage{msgsFor[s.userID]}}).Marshal())
		cw, err := ParseCommitWelcome(out[0].Binary)
		if err != nil {
			t.Fatal(err)
		}
		if s == a {
			winner = cw
		}
	}
	gw.tid++
	gw.binOp(a, gateway.OpDAVEAnnounceCommit, TransitionPayload{gw.tid, winner.Commit.Marshal()}.Marshal())
	gw.binOp(b, gateway.OpDAVEWelcome, TransitionPayload{gw.tid, winner.Welcome.Marshal()}.Marshal())
	gw.execute()
	samePrivacy(t, a, b)
	exchange(t, a, b)
	exchange(t, b, a)

	// The last other member leaves: op 24 epoch 1 resets to a fresh key
	// package and op 21 with transition 0 executes at once.
	out := gw.jsonOp(a, gateway.OpDAVEPrepareEpoch, map[string]any{"epoch": 1, "protocol_version": 1})
	if len(out) != 1 || out[0].Op != gateway.OpDAVEKeyPackage || a.Epoch() != 0 {
		t.Fatalf("prepare epoch 1: %v, epoch %d", out, a.Epoch())
	}
	if out := gw.jsonOp(a, gateway.OpDAVEPrepareTransition, map[string]any{"transition_id": 0, "protocol_version": 1}); len(out) != 0 {
		t.Fatalf("transition 0 must execute without op 23: %v", out)
	}
}

func TestSessionJoinAndChurn(t *testing.T) {
	gw := newFakeGateway(t)
	a := gw.connect(1)
	b := gw.connect(2)

	// A's pending group adds B; B (also pending) receives the welcome.
	var welcome *mls.Welcome
	{
		payload := (&ProposalsPayload{Operation: ProposalsAppend, Messages: []*mls.MLSMessage{
			gw.proposal(a, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})}}).Marshal()
		out := gw.binOp(a, gateway.OpDAVEProposals, payload)
		cw, err := ParseCommitWelcome(out[0].Binary)
		if err != nil || cw.Welcome == nil {
			t.Fatalf("op 28: %v", err)
		}
		welcome = cw.Welcome
		gw.tid++
		if countReady(gw.binOp(a, gateway.OpDAVEAnnounceCommit, TransitionPayload{gw.tid, cw.Commit.Marshal()}.Marshal()), gw.tid) != 1 {
			t.Fatal("A did not report ready")
		}
		if countReady(gw.binOp(b, gateway.OpDAVEWelcome, TransitionPayload{gw.tid, welcome.Marshal()}.Marshal()), gw.tid) != 1 {
			t.Fatal("B did not report ready")
		}
	}
	// Between ready and execute, receivers already decrypt but senders
	// still send plaintext.
	if a.Ready() {
		t.Fatal("A encrypts before the transition executes")
	}
	gw.execute()
	samePrivacy(t, a, b)
	exchange(t, a, b)
	exchange(t, b, a)
	if out, _ := b.Decrypt(1, silence); !bytes.Equal(out, silence) {
		t.Fatal("silence not passed through")
	}
	// Passthrough of plaintext ends KeyExpiry after the upgrade.
	if _, err := b.Decrypt(1, []byte("plain opus frame")); err != nil {
		t.Fatalf("plaintext within the upgrade window: %v", err)
	}
	gw.clock = gw.clock.Add(KeyExpiry + time.Second)
	if _, err := b.Decrypt(1, []byte("plain opus frame")); err == nil {
		t.Fatal("plaintext accepted after the upgrade window")
	}

	// C joins: A and B both commit, the gateway picks B's.
	c := gw.connect(3)
	gw.round([]uint64{1, 2}, 2, []uint64{3}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[3]})}
	})
	// In-flight frame from A under the old epoch still decrypts at B.
	old, err := a.Encrypt([]byte("old epoch frame"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := b.Decrypt(1, old); err != nil || string(out) != "old epoch frame" {
		t.Fatalf("old-epoch frame: %v", err)
	}
	gw.execute()
	samePrivacy(t, a, b, c)
	for _, p := range [][2]*Session{{a, b}, {b, c}, {c, a}, {a, c}} {
		exchange(t, p[0], p[1])
	}

	// Remove B: A and C commit with an update path; C wins.
	rmB := func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, 2)})}
	}
	delete(gw.members, 2)
	gw.round([]uint64{1, 3}, 3, nil, rmB)
	gw.execute()
	samePrivacy(t, a, c)
	exchange(t, a, c)
	exchange(t, c, a)
	if a.Epoch() != 3 {
		t.Fatalf("epoch %d, want 3", a.Epoch())
	}
}

func TestSessionRevoke(t *testing.T) {
	gw := newFakeGateway(t)
	a := gw.connect(1)
	gw.connect(2)
	m := gw.proposal(a, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})
	out := gw.binOp(a, gateway.OpDAVEProposals, (&ProposalsPayload{Operation: ProposalsAppend, Messages: []*mls.MLSMessage{m}}).Marshal())
	if len(out) != 1 {
		t.Fatal("no commit for the add")
	}
	ref := mls.ProposalRef(m.PublicMessage)
	out = gw.binOp(a, gateway.OpDAVEProposals, (&ProposalsPayload{Operation: ProposalsRevoke, Refs: [][]byte{ref}}).Marshal())
	if len(out) != 0 {
		t.Fatalf("commit after revoking the only proposal: %v", out)
	}
	if _, err := a.HandleBinary(gateway.OpDAVEProposals, (&ProposalsPayload{Operation: ProposalsRevoke, Refs: [][]byte{ref}}).Marshal()); err == nil {
		t.Fatal("revoking an unknown ref succeeded")
	}
}

func TestSessionRejectsUnrecognizedAdd(t *testing.T) {
	gw := newFakeGateway(t)
	a := gw.connect(1)
	stranger, err := mls.GenerateSignatureKey()
	if err != nil {
		t.Fatal(err)
	}
	kp, err := mls.NewKeyPackage(stranger, mls.Credential{Type: mls.CredentialBasic, Identity: binary.BigEndian.AppendUint64(nil, 77)}, daveCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	m := gw.proposal(a, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: kp.KeyPackage})
	if _, err := a.HandleBinary(gateway.OpDAVEProposals, (&ProposalsPayload{Operation: ProposalsAppend, Messages: []*mls.MLSMessage{m}}).Marshal()); err == nil {
		t.Fatal("add for a user never announced by op 11 accepted")
	}
}

func TestSessionBadWelcomeResets(t *testing.T) {
	gw := newFakeGateway(t)
	b := gw.connect(2)
	out, err := b.HandleBinary(gateway.OpDAVEWelcome, TransitionPayload{5, []byte{0, 2, 0, 0}}.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Op != gateway.OpDAVEInvalidCommitWelcome || out[1].Op != gateway.OpDAVEKeyPackage {
		t.Fatalf("bad welcome: %v", out)
	}
}

func TestSessionDowngrade(t *testing.T) {
	gw := newFakeGateway(t)
	a := gw.connect(1)
	b := gw.connect(2)
	gw.round([]uint64{1}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})}
	})
	gw.execute()
	gw.clock = gw.clock.Add(time.Minute)
	exchange(t, a, b)
	if _, err := b.Decrypt(1, []byte("plain opus frame")); err == nil {
		t.Fatal("plaintext accepted while DAVE is active")
	}
	// Downgrade to version 0: receivers accept plaintext once prepared,
	// senders stop encrypting at execution.
	out := gw.jsonOp(b, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 9, "protocol_version": 0})
	if countReady(out, 9) != 1 {
		t.Fatalf("prepare transition: %v", out)
	}
	if _, err := b.Decrypt(1, []byte("plain opus frame")); err != nil {
		t.Fatalf("plaintext during a pending downgrade: %v", err)
	}
	gw.jsonOp(a, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 9, "protocol_version": 0})
	gw.jsonOp(a, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 9})
	if out, _ := a.Encrypt([]byte("clear")); string(out) != "clear" || a.Ready() {
		t.Fatal("still encrypting after the downgrade executed")
	}
	// Unknown transitions are ignored.
	gw.jsonOp(b, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 1234})
	if !b.Ready() {
		t.Fatal("unknown transition changed state")
	}
}

// BenchmarkSessionEncryptDecrypt measures a 120-byte Opus frame through
// Session.Encrypt on one member and Session.Decrypt on another.
func BenchmarkSessionEncryptDecrypt(b *testing.B) {
	gw := newFakeGateway(b)
	a := gw.connect(1)
	r := gw.connect(2)
	gw.round([]uint64{1}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})}
	})
	gw.execute()
	frame := bytes.Repeat([]byte{0x5a}, 120)
	b.ReportAllocs()
	for b.Loop() {
		enc, err := a.Encrypt(frame)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.Decrypt(1, enc); err != nil {
			b.Fatal(err)
		}
	}
	perSec := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(perSec, "frames/s")
	b.ReportMetric(perSec/50, "x-realtime")
}

// Proposals can reach a client before its session description or the
// external sender has been processed; they wait for the group and are
// processed then (a commit follows), in either order of the two.
func TestSessionQueuesEarlyProposals(t *testing.T) {
	for _, tc := range []struct {
		name           string
		senderFirst    bool // op 25 before op 4
		extraEarly     int  // more early proposals past the bound
		wantQueueError bool
	}{
		{"before the session description", true, 0, false},
		{"before the external sender", false, 0, false},
		{"too many before the group", true, maxEarly, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := newFakeGateway(t)
			a := gw.connect(1)
			b, err := NewSession(2, testChannel, WithClock(gw.now))
			if err != nil {
				t.Fatal(err)
			}
			gw.jsonOp(b, gateway.OpClientsConnect, map[string][]string{"user_ids": {"1"}})
			gw.jsonOp(a, gateway.OpClientsConnect, map[string][]string{"user_ids": {"2"}})
			// b's key package: make it from a session description now,
			// but keep b without its group until the test says.
			if tc.senderFirst {
				gw.binOp(b, gateway.OpDAVEExternalSender, gw.sender.Marshal())
			}
			// The gateway proposes adding a to b's group (epoch 0) before
			// b can have one.
			addA := &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[1]}
			if b.current() != nil {
				t.Fatal("b has a group before its session description")
			}
			msg, err := mls.NewExternalProposal(b.groupID(), 0, 0, addA, gw.sig)
			if err != nil {
				t.Fatal(err)
			}
			payload := (&ProposalsPayload{Operation: ProposalsAppend, Messages: []*mls.MLSMessage{msg}}).Marshal()
			if out := gw.binOp(b, gateway.OpDAVEProposals, payload); out != nil {
				t.Fatalf("b answered proposals without a group: %v", out)
			}
			var queueErr error
			for i := 0; i < tc.extraEarly; i++ {
				if _, err := b.HandleBinary(gateway.OpDAVEProposals, payload); err != nil {
					queueErr = err
				}
			}
			if tc.wantQueueError != (queueErr != nil) {
				t.Fatalf("queueing past the bound: %v", queueErr)
			}
			var out []conn.Outbound
			if tc.senderFirst {
				out, err = b.SessionDescription(1)
			} else {
				if _, err = b.SessionDescription(1); err == nil {
					out, err = b.HandleBinary(gateway.OpDAVEExternalSender, gw.sender.Marshal())
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			var commit *CommitWelcome
			for _, o := range out {
				if o.Op == gateway.OpDAVECommitWelcome {
					if commit, err = ParseCommitWelcome(o.Binary); err != nil {
						t.Fatal(err)
					}
				}
			}
			if commit == nil || commit.Welcome == nil {
				t.Fatalf("no commit with a welcome once b's group existed: %v", out)
			}
			// b's commit wins: a joins by welcome and both share the group.
			gw.members[2] = b
			gw.tid++
			tr := gw.binOp(b, gateway.OpDAVEAnnounceCommit, TransitionPayload{gw.tid, commit.Commit.Marshal()}.Marshal())
			tw := gw.binOp(a, gateway.OpDAVEWelcome, TransitionPayload{gw.tid, commit.Welcome.Marshal()}.Marshal())
			if countReady(tr, gw.tid)+countReady(tw, gw.tid) != 2 {
				t.Fatalf("transition-ready replies: %v %v", tr, tw)
			}
			gw.execute()
			samePrivacy(t, a, b)
			exchange(t, a, b)
			exchange(t, b, a)
		})
	}
}

// Issue 29: a member that rejoins the call (op 13, then op 11 and a new
// add) sends a few frames unencrypted before its own DAVE session is
// ready, as discord.js does; they pass, as libdave and davey let a new
// sender's decryptor pass plaintext for the transition expiry. The window
// closes at its first frame that decrypts, or after KeyExpiry; members
// that stayed never get one.
func TestSessionAcceptsPlaintextFromARejoiningMember(t *testing.T) {
	plain := []byte("plain opus frame")
	for _, tc := range []struct {
		name string
		// after the rejoin, before the plaintext frame
		then func(t *testing.T, gw *fakeGateway, a, c *Session)
		pass bool
	}{
		{"at once", func(*testing.T, *fakeGateway, *Session, *Session) {}, true},
		{"just before the expiry", func(_ *testing.T, gw *fakeGateway, _, _ *Session) { gw.clock = gw.clock.Add(KeyExpiry - time.Second) }, true},
		{"after the expiry", func(_ *testing.T, gw *fakeGateway, _, _ *Session) { gw.clock = gw.clock.Add(KeyExpiry + time.Second) }, false},
		{"after a frame decrypted", func(t *testing.T, _ *fakeGateway, a, c *Session) { exchange(t, c, a) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := newFakeGateway(t)
			a, b := gw.connect(1), gw.connect(2)
			gw.round([]uint64{1}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
				return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})}
			})
			gw.execute()
			c := gw.connect(3)
			gw.round([]uint64{1, 2}, 1, []uint64{3}, func(s *Session) []*mls.MLSMessage {
				return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[3]})}
			})
			gw.execute()
			gw.clock = gw.clock.Add(time.Minute)
			if _, err := a.Decrypt(3, plain); err == nil {
				t.Fatal("plaintext from a settled member accepted")
			}
			// C drops out (op 13, removed) and comes back (op 11, added
			// with a new key package by a new commit).
			delete(gw.members, 3)
			for _, s := range []*Session{a, b} {
				gw.jsonOp(s, gateway.OpClientDisconnect, map[string]string{"user_id": "3"})
			}
			gw.round([]uint64{1, 2}, 2, nil, func(s *Session) []*mls.MLSMessage {
				return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, 3)})}
			})
			gw.execute()
			gw.clock = gw.clock.Add(time.Minute)
			c = gw.connect(3)
			if _, err := a.Decrypt(3, plain); err != nil {
				t.Fatalf("plaintext from a member reconnecting, before its add: %v", err)
			}
			gw.round([]uint64{1, 2}, 1, []uint64{3}, func(s *Session) []*mls.MLSMessage {
				return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[3]})}
			})
			gw.execute()
			tc.then(t, gw, a, c)
			out, err := a.Decrypt(3, plain)
			if tc.pass && (err != nil || !bytes.Equal(out, plain)) {
				t.Fatalf("plaintext from the rejoining member: %q, %v", out, err)
			}
			if !tc.pass && err == nil {
				t.Fatal("plaintext from the rejoined member accepted")
			}
			// B stayed all along: never plaintext from it.
			if _, err := a.Decrypt(2, plain); err == nil {
				t.Fatal("plaintext from a member that stayed accepted")
			}
			exchange(t, c, b)
		})
	}
}

// A member removed and added again in one commit (the gateway re-adding a
// client that reconnected) has a new signature key: its plaintext frames
// pass for KeyExpiry after that commit, even when the window its op 11
// opened has passed.
func TestSessionPlaintextWindowOnReAddInOneCommit(t *testing.T) {
	gw := newFakeGateway(t)
	a, _ := gw.connect(1), gw.connect(2)
	gw.round([]uint64{1}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})}
	})
	gw.execute()
	plain := []byte("plain opus frame")
	gw.clock = gw.clock.Add(time.Minute)
	if _, err := a.Decrypt(2, plain); err == nil {
		t.Fatal("plaintext from a settled member accepted")
	}
	// B's client reconnects with a new session (op 11 to A, a new key
	// package); its op 11 window passes before the gateway re-adds it.
	delete(gw.members, 2)
	b := gw.connect(2)
	gw.clock = gw.clock.Add(KeyExpiry + time.Second)
	if _, err := a.Decrypt(2, plain); err == nil {
		t.Fatal("plaintext accepted after the op 11 window")
	}
	gw.round([]uint64{1}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{
			gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, 2)}),
			gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]}),
		}
	})
	gw.execute()
	if out, err := a.Decrypt(2, plain); err != nil || !bytes.Equal(out, plain) {
		t.Fatalf("plaintext from the re-added member: %q, %v", out, err)
	}
	exchange(t, b, a)
	if _, err := a.Decrypt(2, plain); err == nil {
		t.Fatal("plaintext accepted after the member's frames decrypted")
	}
}
