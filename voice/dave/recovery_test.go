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
