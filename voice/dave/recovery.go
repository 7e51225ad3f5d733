package dave

import (
	"errors"
	"fmt"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
)

// Recovery: a member whose group state is wrong (a commit or welcome it
// cannot process, or a sender whose frames keep failing to decrypt) tells
// the gateway with op 31 (invalid commit/welcome) and sends a new key
// package; the gateway removes it and adds it again. Retries back off and
// stop after MaxRecoveries, so a member and a gateway that disagree do
// not loop for ever.
//
// Decrypt failures are a weaker sign than a commit that does not process:
// they start a recovery only when they say our group state is wrong.
//
//   - Failures are counted per sender (consecutive frames that no key
//     opened); past RecoveryThreshold the sender is suspect.
//   - If a frame from another sender decrypted since the last executed
//     transition, the group works and the suspect's own state is broken:
//     re-keying the whole call would not help, so no recovery starts (the
//     frames are dropped and counted, as before).
//   - At most one recovery per executed transition: a recovery's re-add
//     executes a new transition before the next one may start.
//   - Only a frame from the suspect sender ends the recoveries in a row
//     (the attempt count); frames from others do not, so a sender whose
//     frames never decrypt leads to at most MaxRecoveries recoveries and
//     then the clear end state of ErrRecoveryGaveUp, never to a loop.
//   - A recovery is answered by an executed transition that gives us a
//     group again (the gateway's re-add: a commit or welcome, then op 22).
//     A gateway that ignores op 31 and the key package would leave the
//     session without a send key for ever: RecoveryTimeout after the key
//     package went out with no such transition, the session gives up
//     (ErrRecoveryGaveUp, ErrRecoveryUnanswered) and the owner rejoins.
const (
	// RecoveryThreshold is the number of consecutive undecryptable frames
	// from one sender, with no transition pending, after which the session
	// asks to be re-added; discord.js recovers after more than 36.
	RecoveryThreshold = 36
	// MaxRecoveries is how many recoveries in a row (without a frame
	// decrypted in between) are attempted before giving up.
	MaxRecoveries = 5
	// RecoveryBackoff is the wait before the key package of the second
	// recovery in a row; it doubles for each further one, up to
	// MaxRecoveryBackoff. The first recovery is immediate.
	RecoveryBackoff    = time.Second
	MaxRecoveryBackoff = 30 * time.Second
	// RecoveryTimeout is how long after a recovery's key package went out
	// the session waits for the gateway's answer (an executed transition
	// that re-adds it) before giving up. A re-add is one proposal and
	// commit round and one transition, as a join is, which a gateway
	// completes in a second or two; the wait is generous so that slow
	// members holding up the transition (op 23) do not end the session,
	// while a call is not left silent for minutes.
	RecoveryTimeout = 30 * time.Second
)

// ErrRecoveryGaveUp: the session failed to rejoin its group MaxRecoveries
// times in a row and stopped trying; media to and from the channel is no
// longer end-to-end encrypted for this client, so it cannot hear or be
// heard until a new voice session starts.
var ErrRecoveryGaveUp = errors.New("dave: gave up rejoining the end-to-end encryption group")

// ErrRecoveryUnanswered: the gateway did not re-add the session within
// RecoveryTimeout of its request (op 31 and a fresh key package). The
// session's error wraps it beside ErrRecoveryGaveUp.
var ErrRecoveryUnanswered = errors.New("dave: the voice gateway did not answer the request to be re-added")

// recovery is the session's recovery state; Session.mu guards it.
type recovery struct {
	failures map[uint64]int // consecutive decrypt failures by sender
	attempts int            // recoveries since a frame last decrypted
	lastTID  uint16         // the last transition executed
	// working holds the senders with a frame decrypted since lastTID was
	// executed; recovered says a decrypt-failure recovery was started for
	// lastTID; suspect is the sender whose failures started the last one
	// (0: none, or a commit or welcome that failed).
	working   map[uint64]bool
	recovered bool
	suspect   uint64
	held      []conn.Outbound
	heldAt    time.Time // when held may go out
	outbox    []conn.Outbound
	gaveUp    error
	// answerBy is when a recovery whose key package went out must have
	// been answered by an executed transition (zero: none awaited).
	answerBy time.Time
}

func recoveryDelay(attempt int) time.Duration {
	if attempt <= 1 {
		return 0
	}
	d := RecoveryBackoff
	for i := 2; i < attempt && d < MaxRecoveryBackoff; i++ {
		d *= 2
	}
	return min(d, MaxRecoveryBackoff)
}

// failed reports an unusable commit or welcome, or a group that stopped
// working: op 31 at once, then a reset and a new key package, after the
// backoff; past MaxRecoveries only op 31, and the session gives up.
func (s *Session) failed(tid uint16, cause error) ([]conn.Outbound, error) {
	r := &s.rec
	r.attempts++
	r.suspect = 0
	out := []conn.Outbound{{Op: gateway.OpDAVEInvalidCommitWelcome, JSON: map[string]int{"transition_id": int(tid)}}}
	if r.attempts > MaxRecoveries {
		s.giveUp(fmt.Errorf("%w after %d attempts; last: %v", ErrRecoveryGaveUp, MaxRecoveries, cause), tid)
		return out, nil
	}
	s.log.Warn("dave: rejecting commit or welcome; asking to be re-added", "transition_id", tid, "attempt", r.attempts, "err", cause)
	kp, err := s.reinit()
	if err != nil {
		return out, err
	}
	if d := recoveryDelay(r.attempts); d > 0 {
		// The wait for the answer starts when the key package goes out
		// (TakeOutbound).
		r.held, r.heldAt, r.answerBy = kp, s.now().Add(d), time.Time{}
		return out, nil
	}
	r.answerBy = s.now().Add(RecoveryTimeout)
	return append(out, kp...), nil
}

// giveUp is the clear end state: no group, no send key (so no frame goes
// out: no key, no frame), nothing more sent; Failed reports err.
func (s *Session) giveUp(err error, tid uint16) {
	r := &s.rec
	r.gaveUp = err
	s.log.Error("dave: giving up on the group", "transition_id", tid, "err", err)
	s.pending, s.group, s.ownCommit, s.ownCommitB, s.kp = nil, nil, nil, nil, nil
	s.sender, s.nextSender = nil, nil
	r.held, r.heldAt, r.answerBy = nil, time.Time{}, time.Time{}
}

// checkAnswer gives up on a recovery the gateway has not answered within
// RecoveryTimeout.
func (s *Session) checkAnswer(now time.Time) {
	r := &s.rec
	if r.answerBy.IsZero() || r.gaveUp != nil || now.Before(r.answerBy) {
		return
	}
	s.giveUp(fmt.Errorf("%w: %w: no transition re-added us within %v of the key package (attempt %d)",
		ErrRecoveryGaveUp, ErrRecoveryUnanswered, RecoveryTimeout, r.attempts), r.lastTID)
}

// decryptFailed counts a frame from userID that no key opened; past the
// threshold it starts a recovery, if the failures say our group state is
// wrong (see the package's recovery rules above).
func (s *Session) decryptFailed(userID uint64) {
	r := &s.rec
	if s.group == nil || s.transitionPending() || r.gaveUp != nil || r.held != nil {
		return
	}
	if r.failures == nil {
		r.failures = map[uint64]int{}
	}
	r.failures[userID]++
	n := r.failures[userID]
	if n <= RecoveryThreshold || r.recovered {
		return
	}
	for id := range r.working {
		if id != userID {
			if n == RecoveryThreshold+1 {
				s.log.Warn("dave: a sender's frames do not decrypt while others' do; not re-keying the call",
					"user", userID, "failures", n)
			}
			return
		}
	}
	clear(r.failures)
	r.recovered = true
	out, err := s.failed(r.lastTID, fmt.Errorf("%d consecutive frames from user %d did not decrypt", n, userID))
	if err != nil {
		s.log.Warn("dave: recovery", "err", err)
	}
	r.suspect = userID
	r.outbox = append(r.outbox, out...)
}

// transitionPending reports whether a transition was prepared less than
// RecoveryTimeout ago and has not executed: frames may not decrypt while
// members switch keys. One the gateway prepared and never executed does
// not switch the recovery off for the rest of the session.
func (s *Session) transitionPending() bool {
	now := s.now()
	for _, at := range s.preparedAt {
		if now.Sub(at) < RecoveryTimeout {
			return true
		}
	}
	return false
}

// decrypted records a frame from userID that decrypted; current says it
// decrypted with the newest epoch's key: the current group works for that
// sender (a frame still under a previous epoch's key shows nothing about
// it).
func (s *Session) decrypted(userID uint64, current bool) {
	r := &s.rec
	if r.failures != nil {
		delete(r.failures, userID)
	}
	if !current {
		return
	}
	if r.working == nil {
		r.working = map[uint64]bool{}
	}
	r.working[userID] = true
	if r.suspect == 0 || r.suspect == userID {
		r.attempts, r.suspect = 0, 0
	}
}

// transitionExecuted starts the recovery bookkeeping of a new transition.
func (s *Session) transitionExecuted(tid uint16) {
	r := &s.rec
	r.lastTID = tid
	r.recovered = false
	clear(r.working)
	clear(r.failures)
	if s.group != nil {
		// The gateway answered a recovery (if one was awaited).
		r.answerBy = time.Time{}
	}
}

// TakeOutbound returns the messages the session wants sent on its own (a
// recovery started by decrypt failures, a key package held back by the
// recovery backoff), and gives up on a recovery the gateway did not
// answer within RecoveryTimeout. The connection polls it.
func (s *Session) TakeOutbound() []conn.Outbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.rec
	now := s.now()
	if r.held != nil && !now.Before(r.heldAt) {
		r.outbox = append(r.outbox, r.held...)
		r.held, r.heldAt = nil, time.Time{}
	}
	out := r.outbox
	r.outbox = nil
	for _, o := range out {
		if o.Op == gateway.OpDAVEKeyPackage {
			// The wait for the answer starts as the key package leaves.
			r.answerBy = now.Add(RecoveryTimeout)
		}
	}
	s.checkAnswer(now)
	return out
}

// Failed returns the error that ended the session's recoveries
// (ErrRecoveryGaveUp, with ErrRecoveryUnanswered when the gateway did
// not answer one in time), or nil.
func (s *Session) Failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkAnswer(s.now())
	return s.rec.gaveUp
}

var _ conn.E2EERecovery = (*Session)(nil)
