package dave

import (
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// Probe 1 (issue 29), deterministic: the gateway keeps sending b commits
// and welcomes it cannot process while a keeps talking under the epoch b
// still holds keys for. a's frames decrypt between every refusal; they say
// nothing about the commits, so b still gives up after MaxRecoveries.
func TestProbe29RefusalsInterleavedWithGoodFrames(t *testing.T) {
	gw, a, b := pair(t)
	bad := []byte{0, 1, 0, 1, 0xff}
	refused := 0
	for attempt := 1; attempt <= 3*(MaxRecoveries+1) && b.Failed() == nil; attempt++ {
		goodFrame(t, a, b)
		gw.tid++
		op, body := gateway.OpDAVEAnnounceCommit, bad
		if attempt > 1 {
			op, body = gateway.OpDAVEWelcome, []byte{0, 2, 0, 0}
		}
		out, err := b.HandleBinary(op, TransitionPayload{gw.tid, body}.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		inv, _, _ := ops(out)
		refused += inv
		// a's frames keep coming while b waits for its backoff.
		for i := 0; i < 3; i++ {
			goodFrame(t, a, b)
		}
		gw.clock = gw.clock.Add(MaxRecoveryBackoff / 2)
		b.TakeOutbound()
	}
	t.Logf("refusals interleaved with good frames: %d op 31, then %v", refused, b.Failed())
	if !errors.Is(b.Failed(), ErrRecoveryGaveUp) || refused != MaxRecoveries+1 {
		t.Fatalf("%d op 31, failed %v; want ErrRecoveryGaveUp after %d", refused, b.Failed(), MaxRecoveries+1)
	}
	if out, err := b.Encrypt([]byte("the NPC speaks")); !errors.Is(err, ErrNoSendKey) || out != nil {
		t.Fatalf("after giving up: %q, %v", out, err)
	}
}

// Probe 2 (issue 29): every state in which a session has no key to send
// with while the call is end-to-end encrypted lets no frame out; only
// protocol version 0 does.
func TestProbe29NoKeyNoFrame(t *testing.T) {
	frame := []byte("an opus frame of the NPC")
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) *Session
		plain bool // version 0: passthrough is the protocol
	}{
		{"before op 4", func(t *testing.T) *Session {
			s, err := NewSession(1, testChannel)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, false},
		{"op 4 with DAVE, no group yet", func(t *testing.T) *Session {
			return newFakeGateway(t).connect(1)
		}, false},
		{"op 4 without DAVE", func(t *testing.T) *Session {
			s, err := NewSession(1, testChannel)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.SessionDescription(0); err != nil {
				t.Fatal(err)
			}
			return s
		}, true},
		{"a downgrade prepared (op 21 v0) but never executed", func(t *testing.T) *Session {
			gw, a, _ := pair(t)
			gw.jsonOp(a, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 9, "protocol_version": 0})
			return a
		}, false},
		{"a downgrade executed (op 22)", func(t *testing.T) *Session {
			gw, a, _ := pair(t)
			gw.jsonOp(a, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 9, "protocol_version": 0})
			gw.jsonOp(a, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 9})
			return a
		}, true},
		{"an upgrade prepared again after a downgrade (op 24 epoch 1), no group yet", func(t *testing.T) *Session {
			gw, a, _ := pair(t)
			gw.jsonOp(a, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 9, "protocol_version": 0})
			gw.jsonOp(a, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 9})
			gw.jsonOp(a, gateway.OpDAVEPrepareEpoch, map[string]int{"transition_id": 10, "epoch": 1, "protocol_version": 1})
			return a
		}, false},
		{"op 22 for a transition never prepared", func(t *testing.T) *Session {
			gw := newFakeGateway(t)
			s := gw.connect(1)
			gw.jsonOp(s, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 42})
			return s
		}, false},
		{"removed from the group by a commit", func(t *testing.T) *Session {
			gw, _, b, _ := trio(t)
			gw.round([]uint64{1, 3}, 1, nil, func(s *Session) []*mls.MLSMessage {
				return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, 2)})}
			})
			return b
		}, false},
		{"a commit refused, waiting to be re-added", func(t *testing.T) *Session {
			gw, _, b := pair(t)
			gw.tid++
			if _, err := b.HandleBinary(gateway.OpDAVEAnnounceCommit, TransitionPayload{gw.tid, []byte{0, 1, 0, 1, 0xff}}.Marshal()); err != nil {
				t.Fatal(err)
			}
			return b
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.setup(t)
			out, err := s.Encrypt(frame)
			switch {
			case tc.plain && (err != nil || string(out) != string(frame)):
				t.Fatalf("protocol version 0: %q, %v; want the frame as it is", out, err)
			case !tc.plain && err == nil && string(out) == string(frame):
				t.Fatal("the frame went out as plain Opus")
			case !tc.plain && err == nil && !isProtocolFrame(out):
				t.Fatalf("the frame went out as %x, not a DAVE frame", out)
			case !tc.plain && err != nil && !errors.Is(err, ErrNoSendKey):
				t.Fatalf("no frame, but %v; want ErrNoSendKey", err)
			}
			t.Logf("%s: err %v, %d bytes", tc.name, err, len(out))
		})
	}
}

func isProtocolFrame(b []byte) bool { _, err := parseFrame(b); return err == nil }

// Probe 5 (issue 29): plaintext frames pass only from a member whose own
// DAVE session is not ready (it (re)connected, or was re-added with a new
// key). When it is the bot that re-identifies (its session description
// again, the gateway's roster op 11, then a welcome into the same call),
// the other members never left: their sessions are ready, and a plain
// frame in their name is a spoof, not a member that rejoined.
func TestProbe29NoPlaintextFromMembersThatStayedWhenWeRejoin(t *testing.T) {
	plain := []byte("a plain opus frame in a's name")
	gw, a, b, c := trio(t)
	exchange(t, a, b)
	exchange(t, c, b)
	// b's voice session is lost; it identifies again with the same DAVE
	// session: op 4 again, then the roster (op 11) of who is in the call.
	if _, err := b.SessionDescription(1); err != nil {
		t.Fatal(err)
	}
	kp := b.kp.KeyPackage
	gw.jsonOp(b, gateway.OpClientsConnect, map[string][]string{"user_ids": {"1", "3"}})
	gw.binOp(b, gateway.OpDAVEExternalSender, gw.sender.Marshal())
	// The gateway removes b's old leaf and adds its new key package; b
	// joins by welcome.
	gw.kps[2] = kp
	gw.round([]uint64{1, 3}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{
			gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, 2)}),
			gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: kp}),
		}
	})
	gw.execute()
	samePrivacy(t, a, b, c)
	gw.clock = gw.clock.Add(time.Second)
	if out, err := b.Decrypt(1, plain); err == nil {
		t.Fatalf("after b rejoined, a plain frame in the name of a, who never left, was accepted: %q", out)
	}
	exchange(t, a, b)
	exchange(t, c, b)
	// A member that really rejoins still gets its window (the allowance
	// the protocol makes for a client whose session is not ready yet).
	delete(gw.members, 3)
	for _, s := range []*Session{a, b} {
		gw.jsonOp(s, gateway.OpClientDisconnect, map[string]string{"user_id": "3"})
	}
	gw.round([]uint64{1, 2}, 1, nil, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, 3)})}
	})
	gw.execute()
	gw.clock = gw.clock.Add(time.Minute)
	gw.connect(3)
	if _, err := b.Decrypt(3, []byte("plain from the rejoining c")); err != nil {
		t.Fatalf("a rejoining member's plain frame: %v", err)
	}
	if _, err := b.Decrypt(1, plain); err == nil {
		t.Fatal("a plain frame in the name of a, who never left, was accepted while c rejoined")
	}
}

// Probe 5 (issue 29): a downgrade the gateway prepares (op 21, version 0)
// opens receive passthrough while it is pending; one that never executes
// does not keep it open for ever: plain frames in a member's name are
// refused once PendingDowngradeExpiry has passed, and the members still
// encrypt.
func TestProbe29PendingDowngradeThatNeverExecutes(t *testing.T) {
	gw, a, b := pair(t)
	gw.clock = gw.clock.Add(time.Minute)
	plain := []byte("plain opus frame")
	gw.jsonOp(b, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 9, "protocol_version": 0})
	if _, err := b.Decrypt(1, plain); err != nil {
		t.Fatalf("plaintext while the downgrade is pending: %v", err)
	}
	gw.clock = gw.clock.Add(PendingDowngradeExpiry + time.Second)
	if out, err := b.Decrypt(1, plain); err == nil {
		t.Fatalf("plaintext accepted %v after a downgrade that never executed: %q", PendingDowngradeExpiry, out)
	}
	exchange(t, a, b)
	// Once executed, passthrough is the protocol.
	gw.jsonOp(b, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 9})
	gw.clock = gw.clock.Add(time.Hour)
	if _, err := b.Decrypt(1, plain); err != nil {
		t.Fatalf("plaintext after the downgrade executed: %v", err)
	}
}

// Probe 1 (issue 29): several senders whose frames do not decrypt at once,
// interleaved frame by frame. With one sender whose frames do decrypt
// among them the group works: no recovery, however long it goes on. With
// none, at most one recovery per executed transition, and the session
// gives up after MaxRecoveries re-adds in which they stay broken; each
// re-add is a new epoch, so epochs stay bounded too.
func TestProbe29SeveralBrokenSendersAtOnce(t *testing.T) {
	quad := func(t *testing.T) (gw *fakeGateway, a, b, c, d *Session) {
		gw, a, b, c = trio(t)
		d = gw.connect(4)
		gw.round([]uint64{1, 2, 3}, 1, []uint64{4}, func(s *Session) []*mls.MLSMessage {
			return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[4]})}
		})
		gw.execute()
		gw.clock = gw.clock.Add(time.Minute)
		samePrivacy(t, a, b, c, d)
		return gw, a, b, c, d
	}
	t.Run("one good sender among two broken", func(t *testing.T) {
		_, a, b, c, d := quad(t)
		for i := 0; i < 20*RecoveryThreshold; i++ {
			badFrames(t, a, b, 1)
			badFrames(t, c, b, 1)
			if i%50 == 0 {
				goodFrame(t, d, b)
			}
		}
		if out := b.TakeOutbound(); len(out) != 0 {
			t.Fatalf("the session sent %d messages (first op %d) while one sender's frames decrypted", len(out), out[0].Op)
		}
		if !b.Ready() || b.Epoch() != 3 || b.Failed() != nil {
			t.Fatalf("ready %v epoch %d failed %v", b.Ready(), b.Epoch(), b.Failed())
		}
	})
	t.Run("three broken senders, none good", func(t *testing.T) {
		gw, a, b, c, d := quad(t)
		startEpoch := gw.members[1].Epoch()
		recoveries, transitions := 0, 0
		for round := 0; round < 4*MaxRecoveries && b.Failed() == nil; round++ {
			for i := 0; i < 4*RecoveryThreshold; i++ {
				badFrames(t, a, b, 1)
				badFrames(t, c, b, 1)
				badFrames(t, d, b, 1)
			}
			gw.clock = gw.clock.Add(MaxRecoveryBackoff / 2)
			inv, _, _ := ops(b.TakeOutbound())
			if inv > 1 {
				t.Fatalf("round %d: %d op 31 for one transition", round, inv)
			}
			recoveries += inv
			if b.Failed() != nil || inv == 0 {
				break
			}
			// The gateway re-adds b: a, c and d commit, a's commit wins.
			gw.kps[2] = b.kp.KeyPackage
			gw.round([]uint64{1, 3, 4}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
				return []*mls.MLSMessage{
					gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, 2)}),
					gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]}),
				}
			})
			gw.execute()
			transitions++
			gw.clock = gw.clock.Add(time.Minute)
		}
		epochs := gw.members[1].Epoch() - startEpoch
		t.Logf("three broken senders: %d op 31, %d re-adds (epochs %d), then %v", recoveries, transitions, epochs, b.Failed())
		if !errors.Is(b.Failed(), ErrRecoveryGaveUp) || recoveries != MaxRecoveries+1 || transitions != MaxRecoveries {
			t.Fatalf("%d op 31, %d re-adds, failed %v; want ErrRecoveryGaveUp after %d op 31 and %d re-adds",
				recoveries, transitions, b.Failed(), MaxRecoveries+1, MaxRecoveries)
		}
		if out, err := b.Encrypt([]byte("the NPC")); !errors.Is(err, ErrNoSendKey) || out != nil {
			t.Fatalf("after giving up: %q, %v", out, err)
		}
	})
}
