package dave

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// A frame nobody can authenticate must not change a receiver's key
// state. Whoever can put a frame on the wire in a member's name (the SFU,
// which holds the transport key, or a buggy client) sends one frame with a
// bad tag whose nonce names a later key generation. The receiver derives
// that generation, takes it as the newest and schedules the erasure of
// the generation the member really uses; KeyExpiry later every genuine
// frame of that member fails, until the next epoch. libdave moves its
// newest generation only after a frame decrypted (ReportCryptorSuccess).
func TestAttackForgedFrameErasesTheSendersKey(t *testing.T) {
	gw, a, b, c := trio(t)
	goodFrame(t, a, b)
	forged, err := EncryptFrame(bytes.Repeat([]byte{7}, KeySize), 1<<24|5, []byte("forged, under no member's key"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := b.Decrypt(a.userID, forged); err == nil {
		t.Fatalf("a forged frame decrypted: %q", out)
	}
	// a keeps talking, a frame every 20 ms of the test's clock.
	for i := 0; i < 1000; i++ {
		gw.clock = gw.clock.Add(20 * time.Millisecond)
		f, err := a.Encrypt([]byte("a genuine frame"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Decrypt(a.userID, f); err != nil {
			t.Fatalf("%v after one forged frame, a's genuine frame %d did not decrypt: %v", gw.clock.Sub(fixedNow().Add(time.Minute)), i, err)
		}
		goodFrame(t, c, b)
	}
}

// A transition the gateway prepares (op 21) and never executes (op 22)
// must not switch the decrypt-failure recovery off for the rest of the
// session. After it, the group breaks (a sender's frames stop decrypting,
// nobody else's decrypt): without the stale transition the session asks
// to be re-added at once; with it, it waits for ever, deaf, and reports
// nothing.
func TestAttackStalePreparedTransitionBlocksRecovery(t *testing.T) {
	gw, a, b := pair(t)
	gw.clock = gw.clock.Add(time.Minute)
	gw.jsonOp(b, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 77, "protocol_version": 1})
	// Hours pass; the transition is never executed nor mentioned again.
	gw.clock = gw.clock.Add(time.Hour)
	badFrames(t, a, b, 4*RecoveryThreshold)
	gw.clock = gw.clock.Add(time.Hour)
	out := b.TakeOutbound()
	inv, kps, _ := ops(out)
	if inv == 0 && b.Failed() == nil {
		t.Fatalf("%d undecryptable frames an hour after a prepared transition that never executed: %d op 31, %d key packages, failed %v; the session never recovers nor gives up",
			4*RecoveryThreshold, inv, kps, b.Failed())
	}
}

// Op 24 is an upgrade or a new group (spec D.12); a downgrade comes as op
// 21 with version 0 and takes effect at op 22. The session's own rule
// (ErrNoSendKey): only op 4 without DAVE or an executed downgrade lets a
// frame out unencrypted. A gateway that sends op 24 {epoch 1, version 0}
// in the middle of an encrypted call must not make the next frame go out
// as plain Opus, without any transition.
func TestAttackPrepareEpochVersionZeroSendsPlaintext(t *testing.T) {
	_, a, b := pair(t)
	exchange(t, a, b)
	raw, _ := json.Marshal(map[string]int{"transition_id": 5, "epoch": 1, "protocol_version": 0})
	out, err := a.HandleJSON(gateway.OpDAVEPrepareEpoch, raw)
	t.Logf("op 24 {epoch 1, version 0}: %d messages, err %v", len(out), err)
	frame := []byte("the NPC's secret line")
	enc, err := a.Encrypt(frame)
	if err == nil && bytes.Equal(enc, frame) {
		t.Fatalf("op 24 {epoch 1, version 0} (and no transition): the next frame went out as plain Opus; the session answered %d messages", len(out))
	}
}

// A gateway that never answers the session's first key package (no
// commit, no welcome) leaves it outside any group. While it waits it must
// not accept plain frames in every member's name: the call is end-to-end
// encrypted (op 4 said version 1) and the members that are in the group
// send encrypted frames. A member that really connects has its own window
// (op 11); nothing else should pass, an hour on.
func TestAttackUnansweredJoinAcceptsPlaintextForever(t *testing.T) {
	gw, _, _ := pair(t)
	d := gw.connect(4) // op 11 roster, op 4 with DAVE, op 25; then nothing
	gw.clock = gw.clock.Add(time.Hour)
	plain := []byte("plain frame in the name of member 1")
	if out, err := d.Decrypt(1, plain); err == nil {
		t.Fatalf("an hour after joining an end-to-end encrypted call with no group yet (Ready %v, Failed %v), a plain frame in the name of user 1 was accepted: %q",
			d.Ready(), d.Failed(), out)
	}
}

// Members switch their senders to a new epoch only when the transition
// executes (op 22), which waits for every member's op 23. Until then they
// keep sending under the previous epoch; the previous epoch's receive
// keys must live until KeyExpiry after the execute, not after the commit
// was processed. A transition the gateway takes more than KeyExpiry to
// execute (a slow member) leaves the session deaf to everyone meanwhile.
func TestAttackSlowTransitionDropsTheOldEpochBeforeItEnds(t *testing.T) {
	gw, a, b, c := trio(t)
	d := gw.connect(4)
	gw.round([]uint64{1, 2, 3}, 1, []uint64{4}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[4]})}
	})
	_ = d
	for i := 0; i < 15*50; i++ { // 15 s of a and c talking, op 22 not yet sent
		gw.clock = gw.clock.Add(20 * time.Millisecond)
		for _, from := range []*Session{a, c} {
			f, err := from.Encrypt([]byte("still the old epoch"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Decrypt(from.userID, f); err != nil {
				t.Fatalf("%v after the commit, transition not executed yet: user %d's frame (its sender still on the old epoch, as the protocol says): %v",
					time.Duration(i+1)*20*time.Millisecond, from.userID, err)
			}
		}
	}
	gw.execute()
	exchange(t, a, b)
}

// Sole-member reset (spec D.12): when one member remains the gateway
// sends op 24 epoch 1 (reset, new key package) and op 21 with transition
// 0; nobody holds an established group until someone joins. The member
// that left still holds the last epoch's keys: what the bot says after
// it left must not be readable with them (RFC 9420's post-removal
// secrecy, which DAVE's epoch change on a leave exists for).
func TestAttackSoleMemberResetKeepsTheLeaversKey(t *testing.T) {
	gw, a, b := pair(t)
	exchange(t, a, b)
	// b leaves the call; a is alone.
	gw.jsonOp(a, gateway.OpClientDisconnect, map[string]string{"user_id": "2"})
	gw.jsonOp(a, gateway.OpDAVEPrepareEpoch, map[string]int{"transition_id": 0, "epoch": 1, "protocol_version": 1})
	gw.jsonOp(a, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 0, "protocol_version": 1})
	gw.clock = gw.clock.Add(time.Minute)
	line := []byte("the NPC, alone, says something after b left")
	enc, err := a.Encrypt(line)
	if err != nil {
		t.Logf("no frame: %v", err)
		return
	}
	if bytes.Equal(enc, line) {
		t.Fatal("after the sole-member reset the frame went out as plain Opus")
	}
	if out, err := b.Decrypt(a.userID, enc); err == nil {
		t.Fatalf("after b left and the group was reset, b's keys still open what the bot sends: %q", out)
	}
}

// Only one key package is valid at a time (spec D.5), and the gateway
// uses the last one it got. A recovery's key package held back by the
// backoff must not go out after a newer one: op 24 (epoch 1) during the
// backoff makes the session send a fresh key package at once; the held
// one, sent when the backoff ends, is stale, the gateway adds it, and the
// welcome for it cannot be opened (another refusal, another backoff).
func TestAttackHeldKeyPackageOvertakesANewerOne(t *testing.T) {
	gw, _, b := pair(t)
	bad := []byte{0, 1, 0, 1, 0xff}
	gw.tid++
	if _, err := b.HandleBinary(gateway.OpDAVEAnnounceCommit, TransitionPayload{gw.tid, bad}.Marshal()); err != nil {
		t.Fatal(err)
	}
	gw.tid++
	out, err := b.HandleBinary(gateway.OpDAVEWelcome, TransitionPayload{gw.tid, []byte{0, 2, 0, 0}}.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if _, kps, _ := ops(out); kps != 0 {
		t.Fatalf("second refusal: %d key packages at once; want it held back", kps)
	}
	// The other member leaves during the backoff: sole-member reset.
	out = gw.jsonOp(b, gateway.OpDAVEPrepareEpoch, map[string]int{"transition_id": 0, "epoch": 1, "protocol_version": 1})
	var last []byte
	for _, o := range out {
		if o.Op == gateway.OpDAVEKeyPackage {
			last = o.Binary
		}
	}
	gw.clock = gw.clock.Add(MaxRecoveryBackoff)
	for _, o := range b.TakeOutbound() {
		if o.Op == gateway.OpDAVEKeyPackage {
			last = o.Binary
		}
	}
	if !bytes.Equal(last, b.kp.KeyPackage.Marshal()) {
		t.Fatalf("the last key package sent is not the session's current one: the gateway will add a key package the session can no longer join with")
	}
}

// Before the gateway has told the protocol version (op 4) the session
// lets no frame out: the call may be end-to-end encrypted (a re-identify
// gives the connection a new session while the old transport still
// carries media). The receive side must hold the same line: a plain
// frame in a member's name is not accepted before op 4 says the call has
// no DAVE.
func TestAttackPlaintextAcceptedBeforeTheProtocolIsKnown(t *testing.T) {
	s, err := NewSession(1, testChannel, WithClock(fixedNow))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Encrypt([]byte("the NPC")); err == nil {
		t.Fatal("a frame went out before op 4")
	}
	if out, err := s.Decrypt(2, []byte("a plain frame in user 2's name")); err == nil {
		t.Fatalf("before op 4 (no frame may go out), a plain frame was accepted: %q", out)
	}
}
