package dave

import (
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// pair makes a and b members of one group at epoch 1, transition 1
// executed.
func pair(t *testing.T) (gw *fakeGateway, a, b *Session) {
	t.Helper()
	gw = newFakeGateway(t)
	a, b = gw.connect(1), gw.connect(2)
	gw.round([]uint64{1}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})}
	})
	gw.execute()
	samePrivacy(t, a, b)
	return gw, a, b
}

func ops(out []conn.Outbound) (invalid, keyPackages int, tids []int) {
	for _, o := range out {
		switch o.Op {
		case gateway.OpDAVEInvalidCommitWelcome:
			invalid++
			tids = append(tids, o.JSON.(map[string]int)["transition_id"])
		case gateway.OpDAVEKeyPackage:
			keyPackages++
		}
	}
	return
}

// A gateway that keeps sending a member commits and welcomes it cannot
// process: each is refused (op 31); the new key package waits 0, 1, 2, 4,
// 8 s; the sixth failure in a row ends the attempts with
// ErrRecoveryGaveUp, and after it nothing more is sent.
func TestRecoveryBacksOffAndGivesUp(t *testing.T) {
	gw, _, b := pair(t)
	var invalid, kps int
	var waits []time.Duration
	bad := []byte{0, 1, 0, 1, 0xff}
	for attempt := 1; ; attempt++ {
		gw.tid++
		op, body := gateway.OpDAVEAnnounceCommit, bad
		if attempt > 1 {
			// Re-added after its key package: a welcome it cannot open.
			op, body = gateway.OpDAVEWelcome, []byte{0, 2, 0, 0}
		}
		out, err := b.HandleBinary(op, TransitionPayload{gw.tid, body}.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		i, k, tids := ops(out)
		invalid, kps = invalid+i, kps+k
		if i != 1 || tids[0] != int(gw.tid) {
			t.Fatalf("attempt %d: %d op 31 for transitions %v, want one for %d", attempt, i, tids, gw.tid)
		}
		if b.Failed() != nil {
			if k != 0 || attempt != MaxRecoveries+1 {
				t.Fatalf("gave up at attempt %d with %d key packages sent", attempt, k)
			}
			break
		}
		if k == 1 {
			waits = append(waits, 0)
			continue
		}
		// The key package waits for the backoff, on the session's clock.
		start := gw.clock
		for step := 0; ; step++ {
			if step > 100 {
				t.Fatalf("attempt %d: no key package after %s", attempt, gw.clock.Sub(start))
			}
			_, k, _ := ops(b.TakeOutbound())
			if k == 1 {
				kps++
				waits = append(waits, gw.clock.Sub(start))
				break
			}
			gw.clock = gw.clock.Add(250 * time.Millisecond)
		}
	}
	t.Logf("invalid commits and welcomes: %d refused (op 31), %d key packages sent after %v; then: %v", invalid, kps, waits, b.Failed())
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	if len(waits) != len(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits %v, want %v", waits, want)
		}
	}
	if !errors.Is(b.Failed(), ErrRecoveryGaveUp) || invalid != MaxRecoveries+1 || kps != MaxRecoveries {
		t.Fatalf("end state %v after %d op 31 and %d key packages", b.Failed(), invalid, kps)
	}
	// The end is final: no key package later, nothing for new welcomes.
	gw.clock = gw.clock.Add(time.Hour)
	if out := b.TakeOutbound(); len(out) != 0 {
		t.Fatalf("after giving up the session still sends %v", out)
	}
	gw.tid++
	if out, err := b.HandleBinary(gateway.OpDAVEWelcome, TransitionPayload{gw.tid, []byte{0, 2, 0, 0}}.Marshal()); err != nil || len(out) != 0 {
		t.Fatalf("after giving up, a welcome got %v, %v", out, err)
	}
	if b.Ready() || b.Epoch() != 0 {
		t.Fatalf("after giving up the session is ready %v at epoch %d", b.Ready(), b.Epoch())
	}
}

// More than RecoveryThreshold undecryptable frames in a row from a sender
// make the session ask to be re-added for the last transition; a frame
// that decrypts in between resets the count.
func TestRecoveryAfterDecryptFailures(t *testing.T) {
	for _, tc := range []struct {
		name      string
		bad       []int // runs of bad frames, a good frame between runs
		recovered bool
	}{
		{"threshold reached", []int{RecoveryThreshold + 1}, true},
		{"just below", []int{RecoveryThreshold}, false},
		{"a good frame between", []int{RecoveryThreshold, RecoveryThreshold}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, a, b := pair(t)
			for run, n := range tc.bad {
				if run > 0 {
					f, err := a.Encrypt([]byte("a good frame"))
					if err != nil {
						t.Fatal(err)
					}
					if _, err := b.Decrypt(a.userID, f); err != nil {
						t.Fatal(err)
					}
				}
				for i := 0; i < n; i++ {
					f, err := a.Encrypt([]byte("an opus frame"))
					if err != nil {
						t.Fatal(err)
					}
					f[0] ^= 0xff // the ciphertext no longer authenticates
					if _, err := b.Decrypt(a.userID, f); err == nil {
						t.Fatal("a corrupted frame decrypted")
					}
				}
			}
			out := b.TakeOutbound()
			inv, kps, tids := ops(out)
			if !tc.recovered {
				if len(out) != 0 || b.Epoch() != 1 {
					t.Fatalf("recovered without reason: %v, epoch %d", out, b.Epoch())
				}
				return
			}
			if inv != 1 || kps != 1 || tids[0] != int(gw.tid) || b.Epoch() != 0 {
				t.Fatalf("after %d failures: %v (op 31 for %v), epoch %d; want op 31 for transition %d and a key package",
					RecoveryThreshold+1, out, tids, b.Epoch(), gw.tid)
			}
			// Out of the group now: further frames start nothing.
			f, _ := a.Encrypt([]byte("another"))
			for i := 0; i < 2*RecoveryThreshold; i++ {
				b.Decrypt(a.userID, f)
			}
			if out := b.TakeOutbound(); len(out) != 0 {
				t.Fatalf("a second recovery while waiting to be re-added: %v", out)
			}
		})
	}
}

// trio makes a, b and c members of one group at epoch 2.
func trio(t *testing.T) (gw *fakeGateway, a, b, c *Session) {
	t.Helper()
	gw, a, b = pair(t)
	c = gw.connect(3)
	gw.round([]uint64{1, 2}, 1, []uint64{3}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[3]})}
	})
	gw.execute()
	gw.clock = gw.clock.Add(time.Minute) // past every passthrough window
	samePrivacy(t, a, b, c)
	return gw, a, b, c
}

// badFrames feeds n frames from `from` to `to` that no key opens (each
// is a frame from's key sealed, then corrupted).
func badFrames(t *testing.T, from, to *Session, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		f, err := from.Encrypt([]byte("an opus frame"))
		if err != nil {
			t.Fatal(err)
		}
		f[0] ^= 0xff
		if _, err := to.Decrypt(from.userID, f); err == nil {
			t.Fatal("a corrupted frame decrypted")
		}
	}
}

func goodFrame(t *testing.T, from, to *Session) {
	t.Helper()
	f, err := from.Encrypt([]byte("a good frame"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := to.Decrypt(from.userID, f); err != nil {
		t.Fatalf("a good frame from %d: %v", from.userID, err)
	}
}

// Issue 29: one sender whose frames never decrypt, among senders whose
// frames do, shows that the group works and that sender is broken:
// re-keying the call would not help, so the session sends nothing (no op
// 31, no key package), however long it goes on, and stays in the group.
func TestRecoveryIgnoresOneBrokenSenderAmongGoodOnes(t *testing.T) {
	_, a, b, c := trio(t)
	for round := 0; round < 10; round++ {
		goodFrame(t, c, b)
		badFrames(t, a, b, 3*RecoveryThreshold)
	}
	if out := b.TakeOutbound(); len(out) != 0 {
		t.Fatalf("a single broken sender among good ones made the session send %v", out)
	}
	if b.Epoch() != 2 || !b.Ready() || b.Failed() != nil {
		t.Fatalf("epoch %d, ready %v, failed %v; want still in the group at epoch 2", b.Epoch(), b.Ready(), b.Failed())
	}
	goodFrame(t, c, b)
}

// Issue 29: a sender whose frames never decrypt, with no other sender to
// show the group works, starts at most one recovery per executed
// transition; good frames from someone else do not reset the attempt
// count, so after MaxRecoveries re-adds the session gives up (a clear end
// state) instead of re-keying the call for ever.
func TestRecoveryOncePerTransitionThenGivesUp(t *testing.T) {
	gw, a, b := pair(t)
	recoveries := 0
	for epoch := 0; epoch < 3*MaxRecoveries && b.Failed() == nil; epoch++ {
		// Many more failures than the threshold within one transition:
		// one recovery at most.
		badFrames(t, a, b, 4*RecoveryThreshold)
		gw.clock = gw.clock.Add(MaxRecoveryBackoff)
		out := b.TakeOutbound()
		inv, _, tids := ops(out)
		if inv > 1 {
			t.Fatalf("transition %d: %d op 31 (%v) for one transition", gw.tid, inv, tids)
		}
		if inv == 0 {
			t.Fatalf("transition %d: no recovery after %d undecryptable frames; out %v", gw.tid, 4*RecoveryThreshold, out)
		}
		recoveries++
		if b.Failed() != nil {
			break
		}
		// The gateway re-adds b: a new transition, with a's frames still
		// broken.
		reAdd(t, gw, a, b)
	}
	if !errors.Is(b.Failed(), ErrRecoveryGaveUp) || recoveries != MaxRecoveries+1 {
		t.Fatalf("after %d recoveries: %v; want ErrRecoveryGaveUp after %d", recoveries, b.Failed(), MaxRecoveries+1)
	}
	// No key, no frame: the session that gave up never sends plaintext.
	if out, err := b.Encrypt([]byte("an opus frame of the NPC")); !errors.Is(err, ErrNoSendKey) || out != nil {
		t.Fatalf("after giving up Encrypt returned %q, %v; want no frame and ErrNoSendKey", out, err)
	}
	gw.clock = gw.clock.Add(time.Hour)
	if out := b.TakeOutbound(); len(out) != 0 {
		t.Fatalf("after giving up: %v", out)
	}
}

// reAdd plays the gateway re-adding b after its op 31 and key package: a
// removes and re-adds it in a new epoch; b joins by welcome.
func reAdd(t *testing.T, gw *fakeGateway, a, b *Session) {
	t.Helper()
	gw.kps[b.userID] = b.kp.KeyPackage
	gw.round([]uint64{a.userID}, a.userID, []uint64{b.userID}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{
			gw.proposal(s, &mls.Proposal{Type: mls.ProposalRemove, Removed: leafOf(t, s, b.userID)}),
			gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[b.userID]}),
		}
	})
	gw.execute()
	gw.clock = gw.clock.Add(time.Minute)
	samePrivacy(t, a, b)
}

// The recovery that a broken sender starts ends (the attempt count
// resets) when that sender's frames decrypt after the re-add; then a
// later breakage starts over from the first, immediate, recovery.
func TestRecoveryResetsWhenTheSuspectDecrypts(t *testing.T) {
	gw, a, b := pair(t)
	badFrames(t, a, b, RecoveryThreshold+1)
	if inv, kps, _ := ops(b.TakeOutbound()); inv != 1 || kps != 1 {
		t.Fatalf("first recovery: %d op 31, %d key packages", inv, kps)
	}
	reAdd(t, gw, a, b)
	goodFrame(t, a, b)
	badFrames(t, a, b, RecoveryThreshold+1)
	// Immediate again (attempt 1, no backoff): the count was reset.
	if inv, kps, _ := ops(b.TakeOutbound()); inv != 1 || kps != 1 {
		t.Fatalf("after the suspect decrypted, a new breakage: %d op 31, %d key packages; want both at once", inv, kps)
	}
}

// A frame still under the previous epoch's key (in flight across a
// transition) does not show that the new group works: a sender whose
// frames then never decrypt still starts the recovery.
func TestRecoveryIgnoresOldEpochFramesAsProof(t *testing.T) {
	gw, a, b, c := trio(t)
	old, err := c.Encrypt([]byte("sent under epoch 2"))
	if err != nil {
		t.Fatal(err)
	}
	d := gw.connect(4)
	gw.round([]uint64{1, 2, 3}, 1, []uint64{4}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[4]})}
	})
	gw.execute()
	samePrivacy(t, a, b, c, d)
	if out, err := b.Decrypt(c.userID, old); err != nil || string(out) != "sent under epoch 2" {
		t.Fatalf("the in-flight frame: %q, %v", out, err)
	}
	badFrames(t, a, b, RecoveryThreshold+1)
	if inv, kps, _ := ops(b.TakeOutbound()); inv != 1 || kps != 1 {
		t.Fatalf("%d op 31, %d key packages; want a recovery", inv, kps)
	}
}

// Issue 29: a gateway that ignores a recovery (op 31 and the fresh key
// package) would leave the session without a send key for ever. The
// session waits RecoveryTimeout from when the key package went out (the
// connection took it) and then gives up: ErrRecoveryGaveUp and
// ErrRecoveryUnanswered, no send key, nothing more sent. A re-add in time
// ends the wait.
func TestRecoveryGivesUpWhenTheGatewayDoesNotAnswer(t *testing.T) {
	bad := []byte{0, 1, 0, 1, 0xff}
	refuse := func(t *testing.T, gw *fakeGateway, b *Session) (invalid, kps int) {
		t.Helper()
		gw.tid++
		out, err := b.HandleBinary(gateway.OpDAVEAnnounceCommit, TransitionPayload{gw.tid, bad}.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		invalid, kps, _ = ops(out)
		return invalid, kps
	}
	for _, tc := range []struct {
		name string
		// start makes b ask to be re-added; it returns once the key
		// package went out.
		start    func(t *testing.T, gw *fakeGateway, a, b *Session)
		answered bool
	}{
		{"a refused commit, unanswered", func(t *testing.T, gw *fakeGateway, a, b *Session) {
			if inv, kps := refuse(t, gw, b); inv != 1 || kps != 1 {
				t.Fatalf("%d op 31, %d key packages; want both at once", inv, kps)
			}
		}, false},
		{"decrypt failures, unanswered", func(t *testing.T, gw *fakeGateway, a, b *Session) {
			badFrames(t, a, b, RecoveryThreshold+1)
			// The wait starts when the connection takes the key package,
			// however long it sat in the session.
			gw.clock = gw.clock.Add(10 * RecoveryTimeout)
			if inv, kps, _ := ops(b.TakeOutbound()); inv != 1 || kps != 1 {
				t.Fatalf("%d op 31, %d key packages; want one of each", inv, kps)
			}
		}, false},
		{"a held key package, unanswered", func(t *testing.T, gw *fakeGateway, a, b *Session) {
			refuse(t, gw, b)
			// Re-added by a welcome it cannot open: the second refusal in
			// a row holds its key package back for RecoveryBackoff; no
			// answer is due while it waits.
			gw.tid++
			out, err := b.HandleBinary(gateway.OpDAVEWelcome, TransitionPayload{gw.tid, []byte{0, 2, 0, 0}}.Marshal())
			if err != nil {
				t.Fatal(err)
			}
			if inv, kps, _ := ops(out); inv != 1 || kps != 0 {
				t.Fatalf("second refusal: %d op 31, %d key packages; want the key package held", inv, kps)
			}
			gw.clock = gw.clock.Add(RecoveryBackoff - time.Millisecond)
			if out := b.TakeOutbound(); len(out) != 0 || b.Failed() != nil {
				t.Fatalf("during the backoff: %v, %v", out, b.Failed())
			}
			gw.clock = gw.clock.Add(time.Millisecond)
			if _, kps, _ := ops(b.TakeOutbound()); kps != 1 {
				t.Fatalf("after the backoff %d key packages", kps)
			}
		}, false},
		{"a refused commit, re-added in time", func(t *testing.T, gw *fakeGateway, a, b *Session) {
			refuse(t, gw, b)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, a, b := pair(t)
			tc.start(t, gw, a, b)
			if tc.answered {
				gw.clock = gw.clock.Add(RecoveryTimeout - time.Millisecond)
				reAdd(t, gw, a, b) // the clock moves on a minute
				gw.clock = gw.clock.Add(10 * RecoveryTimeout)
				if out := b.TakeOutbound(); len(out) != 0 || b.Failed() != nil || !b.Ready() {
					t.Fatalf("re-added in time: sends %v, failed %v, ready %v", out, b.Failed(), b.Ready())
				}
				goodFrame(t, a, b)
				goodFrame(t, b, a)
				return
			}
			gw.clock = gw.clock.Add(RecoveryTimeout - time.Millisecond)
			if out := b.TakeOutbound(); len(out) != 0 || b.Failed() != nil {
				t.Fatalf("before RecoveryTimeout: sends %v, failed %v", out, b.Failed())
			}
			gw.clock = gw.clock.Add(time.Millisecond)
			err := b.Failed()
			if !errors.Is(err, ErrRecoveryGaveUp) || !errors.Is(err, ErrRecoveryUnanswered) {
				t.Fatalf("RecoveryTimeout after the key package: %v; want ErrRecoveryGaveUp and ErrRecoveryUnanswered", err)
			}
			// The clear end state: no key, no frame; nothing more sent,
			// nothing taken from the gateway.
			if out, err := b.Encrypt([]byte("an opus frame of the NPC")); !errors.Is(err, ErrNoSendKey) || out != nil {
				t.Fatalf("after giving up Encrypt returned %q, %v; want no frame and ErrNoSendKey", out, err)
			}
			gw.clock = gw.clock.Add(time.Hour)
			if out := b.TakeOutbound(); len(out) != 0 {
				t.Fatalf("after giving up: %v", out)
			}
			gw.tid++
			if out, err := b.HandleBinary(gateway.OpDAVEWelcome, TransitionPayload{gw.tid, []byte{0, 2, 0, 0}}.Marshal()); err != nil || len(out) != 0 {
				t.Fatalf("after giving up, a welcome got %v, %v", out, err)
			}
			if b.Failed() != err {
				t.Fatalf("the end state changed: %v, was %v", b.Failed(), err)
			}
		})
	}
}
