package dave

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// ProtocolVersion is the DAVE protocol version this package speaks.
const ProtocolVersion = 1

// ErrNoKey is returned when a frame arrives from a user without a key.
var ErrNoKey = errors.New("dave: no media key for sender")

// ErrNoSendKey is returned by Encrypt while end-to-end encryption is on
// (protocol version above 0) but the session has no key to send with: not
// yet in a group, or its recoveries gave up. The frame must not be sent;
// only protocol version 0 (op 4 without DAVE, or an executed downgrade)
// lets frames out unencrypted.
var ErrNoSendKey = errors.New("dave: end-to-end encryption is on but there is no send key; frame not sent")

var daveCapabilities = mls.Capabilities{Versions: []uint16{1}, CipherSuites: []uint16{mls.CipherSuite2}, Credentials: []uint16{mls.CredentialBasic}}

// Option configures a Session.
type Option func(*Session)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(s *Session) { s.log = l } }

// WithClock sets the time source (tests).
func WithClock(now func() time.Time) Option { return func(s *Session) { s.now = now } }

// WithSignatureKey uses sig instead of a fresh per-session key.
func WithSignatureKey(sig *mls.SignatureKey) Option { return func(s *Session) { s.sig = sig } }

// RequireE2EE makes the session refuse every unencrypted frame, both
// ways: a call the gateway describes without DAVE (op 4 with protocol
// version 0) is refused ([Session.SessionDescription] returns
// [ErrE2EERequired] and the connection fails), and so is a downgrade
// (op 21 to version 0): the session answers it with no op 23, keeps
// encrypting, and ends as a recovery that gave up does ([Session.Failed]
// returns ErrE2EERequired), so that its owner can rejoin or tell the user.
// No plaintext is accepted either, not even the first frames of a member
// whose own session is not ready yet ([Session.Decrypt]): every frame
// heard was encrypted by a member of the group.
//
// The protocol lets the gateway turn encryption off; since 1 March 2026
// Discord no longer does in voice channels (a client without DAVE is
// refused with close 4017), so a downgrade there is a server turning a
// private call public. Stage channels were never end-to-end encrypted.
func RequireE2EE() Option { return func(s *Session) { s.require = true } }

// ErrE2EERequired: the voice gateway described the call without end-to-end
// encryption, or asked to turn it off, and the session was made with
// [RequireE2EE].
var ErrE2EERequired = errors.New("dave: end-to-end encryption is required and the voice gateway turned it off")

// Session is the DAVE state of one voice connection. It is safe for
// concurrent use.
type Session struct {
	mu        sync.Mutex
	log       *slog.Logger
	now       func() time.Time
	userID    uint64
	channelID uint64
	sig       *mls.SignatureKey
	// require refuses unencrypted media (RequireE2EE).
	require bool

	version int
	// described says the gateway has told the protocol version (op 4, or
	// op 24): until then the session cannot know whether the call is
	// end-to-end encrypted, so Encrypt lets no frame out (a connection
	// that re-identifies with a new DAVE session may still be sending
	// on its old transport meanwhile).
	described   bool
	initialized bool
	extSender   *mls.ExternalSender
	recognized  map[uint64]bool
	kp          *mls.KeyPackageBundle
	pending     *mls.Group // our own epoch-0 group
	group       *mls.Group // established
	ownCommit   *mls.CommitResult
	ownCommitB  []byte
	transitions map[uint16]int
	// preparedAt holds when each pending transition was prepared (op 21,
	// or a commit or welcome processed): one the gateway never executes
	// stops counting as pending after RecoveryTimeout.
	preparedAt map[uint16]time.Time
	// early holds proposals (op 27 payloads) that arrived before our
	// epoch-0 group existed (before the session description or the
	// external sender); they are processed once it does.
	early [][]byte

	sender     *sendState
	nextSender *sendState
	receivers  map[uint64][]*recvState

	passthroughForever bool
	passthroughUntil   time.Time
	// joining holds, per member, until when its plaintext frames pass:
	// a client that (re)joins sends a few frames unencrypted before its
	// own DAVE session is ready, as libdave and davey allow for a new
	// sender's decryptor (see [Session.Decrypt]).
	joining map[uint64]time.Time
	// lastMembers holds the signature keys of the members of the last
	// group we were in, kept while we are out of one (a refused commit,
	// a re-identify) and cleared of a member when it disconnects (op 13):
	// a member still there with the same key when we are welcomed back
	// never left, its session is ready, and a plain frame in its name is
	// not its own.
	lastMembers map[uint64]string

	rec recovery
}

var _ conn.E2EE = (*Session)(nil)

// NewSession creates the DAVE session of user userID in voice channel
// channelID (the MLS group id).
func NewSession(userID, channelID uint64, opts ...Option) (*Session, error) {
	s := &Session{userID: userID, channelID: channelID, log: slog.Default(), now: time.Now,
		recognized: map[uint64]bool{}, transitions: map[uint16]int{}, preparedAt: map[uint16]time.Time{}, receivers: map[uint64][]*recvState{},
		joining: map[uint64]time.Time{}, lastMembers: map[uint64]string{}, passthroughForever: true}
	for _, o := range opts {
		o(s)
	}
	if s.sig == nil {
		var err error
		if s.sig, err = mls.GenerateSignatureKey(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Session) groupID() []byte { return binary.BigEndian.AppendUint64(nil, s.channelID) }

// SessionDescription handles op 4's DAVE protocol version.
func (s *Session) SessionDescription(version int) ([]conn.Outbound, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version == 0 && s.require {
		// Not described: Encrypt and Decrypt let no frame through.
		return nil, fmt.Errorf("%w: the call has no end-to-end encryption (protocol version 0 in the session description)", ErrE2EERequired)
	}
	s.version, s.described = version, true
	if version == 0 {
		s.passthroughForever = true
		return nil, nil
	}
	if s.require {
		s.passthroughForever = false
	}
	if s.passthroughForever {
		// The call is end-to-end encrypted: its members encrypt. Plain
		// frames pass only for KeyExpiry (and from members that connect,
		// op 11), not for as long as the gateway takes to add us.
		s.passthroughForever = false
		s.passthroughUntil = latest(s.passthroughUntil, s.now().Add(KeyExpiry))
	}
	return s.reinit()
}

// reinit resets MLS state and returns a fresh key package (op 26).
func (s *Session) reinit() ([]conn.Outbound, error) {
	s.initialized = true
	s.pending, s.group, s.ownCommit, s.ownCommitB = nil, nil, nil, nil
	kp, err := mls.NewKeyPackage(s.sig, mls.Credential{Type: mls.CredentialBasic, Identity: binary.BigEndian.AppendUint64(nil, s.userID)}, daveCapabilities)
	if err != nil {
		return nil, err
	}
	s.kp = kp
	// Only one key package is valid at a time: one a recovery held back
	// (backoff) is superseded by this one.
	s.rec.held, s.rec.heldAt = nil, time.Time{}
	if err := s.createPending(); err != nil {
		return nil, err
	}
	out := []conn.Outbound{{Op: gateway.OpDAVEKeyPackage, Binary: kp.KeyPackage.Marshal()}}
	return append(out, s.replayEarly()...), nil
}

// maxEarly bounds the proposals kept while no group exists; the gateway
// sends one message per round, so a handful is plenty.
const maxEarly = 32

// replayEarly processes the proposals that arrived before the group
// existed, now that it does, and returns the commit they lead to (the
// last one: each round's commit covers every proposal so far). A proposal
// that no longer applies (an older epoch) is logged and skipped.
func (s *Session) replayEarly() []conn.Outbound {
	if s.current() == nil || len(s.early) == 0 {
		return nil
	}
	early := s.early
	s.early = nil
	var last []conn.Outbound
	for _, p := range early {
		out, err := s.proposals(p)
		if err != nil {
			s.log.Warn("dave: an early proposal no longer applies", "err", err)
			continue
		}
		if out != nil {
			last = out
		}
	}
	if s.ownCommit == nil {
		return nil
	}
	return last
}

func (s *Session) createPending() error {
	if !s.initialized || s.extSender == nil || s.group != nil || s.kp == nil {
		return nil
	}
	g, err := mls.NewGroupFromKeyPackage(s.groupID(), s.kp, []mls.Extension{mls.ExternalSendersExtension(*s.extSender)})
	if err != nil {
		return err
	}
	s.pending = g
	return nil
}

type transitionJSON struct {
	TransitionID    int    `json:"transition_id"`
	ProtocolVersion int    `json:"protocol_version"`
	Epoch           uint64 `json:"epoch"`
}

type clientsJSON struct {
	UserIDs []string `json:"user_ids"`
	UserID  string   `json:"user_id"`
}

// HandleJSON handles ops 11, 13, 21, 22 and 24.
func (s *Session) HandleJSON(op gateway.Op, data json.RawMessage) ([]conn.Outbound, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op {
	case gateway.OpClientsConnect, gateway.OpClientDisconnect:
		var c clientsJSON
		if err := json.Unmarshal(data, &c); err != nil {
			return nil, fmt.Errorf("dave: op %d payload: %w", op, err)
		}
		ids := c.UserIDs
		if c.UserID != "" {
			ids = append(ids, c.UserID)
		}
		for _, v := range ids {
			id, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("dave: op %d user id %q: %w", op, v, err)
			}
			if op == gateway.OpClientsConnect {
				s.recognized[id] = true
				if _, stayed := s.lastMembers[id]; stayed && s.group == nil {
					// We are the one (re)joining: this is the roster of
					// who is in the call, and this member was in our
					// last group and never disconnected.
					continue
				}
				// A client that connects has a new DAVE session: its
				// frames may come before it (and the commit adding it)
				// is ready.
				s.joining[id] = s.now().Add(KeyExpiry)
			} else {
				delete(s.recognized, id)
				delete(s.joining, id)
				delete(s.lastMembers, id)
			}
		}
		return nil, nil
	case gateway.OpDAVEPrepareTransition, gateway.OpDAVEExecuteTransition, gateway.OpDAVEPrepareEpoch:
	default:
		return nil, nil
	}
	var t transitionJSON
	if err := json.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("dave: op %d payload: %w", op, err)
	}
	if t.TransitionID < 0 || t.TransitionID > 0xFFFF {
		return nil, fmt.Errorf("dave: op %d transition id %d out of range", op, t.TransitionID)
	}
	tid := uint16(t.TransitionID)
	switch op {
	case gateway.OpDAVEPrepareTransition:
		if t.ProtocolVersion == 0 && s.require {
			// Refused: not remembered (op 22 cannot execute it), no op
			// 23, no plaintext window. The members go on without us.
			if s.rec.gaveUp == nil {
				s.giveUp(fmt.Errorf("%w: it asked to downgrade the call to protocol version 0 (op 21, transition %d)", ErrE2EERequired, tid), tid)
			}
			return nil, nil
		}
		s.transitions[tid], s.preparedAt[tid] = t.ProtocolVersion, s.now()
		if tid == 0 {
			s.execute(0)
			return nil, nil
		}
		if t.ProtocolVersion == 0 {
			// A downgrade is coming: plaintext passes while it is
			// pending, for PendingDowngradeExpiry (as discord.js does),
			// and for good once it executes. A downgrade that never
			// executes does not leave the door open for ever (PROBE29).
			s.passthroughUntil = latest(s.passthroughUntil, s.now().Add(PendingDowngradeExpiry))
		}
		return []conn.Outbound{ready(tid)}, nil
	case gateway.OpDAVEExecuteTransition:
		s.execute(tid)
		return nil, nil
	default: // prepare epoch
		if t.Epoch == 1 && t.ProtocolVersion <= 0 {
			// Op 24 is an upgrade or a new group; a downgrade is op 21
			// with version 0, executed by op 22. Taking version 0 here
			// would send the next frame as plain Opus with no transition
			// (and a key package for a call without DAVE).
			return nil, fmt.Errorf("dave: op 24 for epoch 1 with protocol version %d refused: a downgrade comes as op 21 and op 22", t.ProtocolVersion)
		}
		if t.Epoch == 1 {
			s.version, s.described = t.ProtocolVersion, true
			// The group is reset (the sole-member reset, or a new group):
			// the last epoch's send key is one that members who left
			// still hold. No key, no frame until a new group exists.
			s.sender, s.nextSender = nil, nil
			return s.reinit()
		}
		return nil, nil
	}
}

// supersededExpiry bounds how long a previous epoch's receive keys stay
// usable when the transition that replaced them is not executed: members
// send under them until it is, which the gateway may hold up for slow
// members (op 23) longer than KeyExpiry.
const supersededExpiry = RecoveryTimeout + KeyExpiry

// PendingDowngradeExpiry is how long plaintext frames pass after a
// downgrade to protocol version 0 is prepared (op 21) and before it
// executes (op 22); discord.js allows 24 s.
const PendingDowngradeExpiry = 24 * time.Second

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func ready(tid uint16) conn.Outbound {
	return conn.Outbound{Op: gateway.OpDAVETransitionReady, JSON: map[string]int{"transition_id": int(tid)}}
}

// execute switches to the version of transition tid.
func (s *Session) execute(tid uint16) {
	v, ok := s.transitions[tid]
	if !ok {
		return
	}
	delete(s.transitions, tid)
	delete(s.preparedAt, tid)
	s.transitionExecuted(tid)
	// Senders switch now: the superseded receivers have KeyExpiry left.
	until := s.now().Add(KeyExpiry)
	for _, list := range s.receivers {
		for _, r := range list {
			if !r.expiry.IsZero() && r.expiry.After(until) {
				r.expiry = until
			}
		}
	}
	old := s.version
	s.version = v
	if v == 0 {
		s.sender, s.nextSender = nil, nil
		s.passthroughForever = true
		return
	}
	if s.nextSender != nil {
		s.sender, s.nextSender = s.nextSender, nil
	}
	if old == 0 || s.passthroughForever {
		s.passthroughForever = false
		s.passthroughUntil = s.now().Add(KeyExpiry)
	}
}

// HandleBinary handles ops 25, 27, 29 and 30.
func (s *Session) HandleBinary(op gateway.Op, payload []byte) ([]conn.Outbound, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch op {
	case gateway.OpDAVEExternalSender:
		e, err := mls.UnmarshalExternalSender(payload)
		if err != nil {
			return nil, fmt.Errorf("dave: op 25: %w", err)
		}
		if s.group != nil {
			return nil, nil
		}
		s.extSender = e
		if err := s.createPending(); err != nil {
			return nil, err
		}
		return s.replayEarly(), nil
	case gateway.OpDAVEProposals:
		return s.proposals(payload)
	case gateway.OpDAVEAnnounceCommit:
		t, err := ParseTransition(payload)
		if err != nil {
			return nil, err
		}
		return s.announceCommit(t)
	case gateway.OpDAVEWelcome:
		t, err := ParseTransition(payload)
		if err != nil {
			return nil, err
		}
		return s.welcome(t)
	}
	return nil, nil
}

func (s *Session) current() *mls.Group {
	if s.group != nil {
		return s.group
	}
	return s.pending
}

func (s *Session) proposals(payload []byte) ([]conn.Outbound, error) {
	p, err := ParseProposals(payload)
	if err != nil {
		return nil, err
	}
	g := s.current()
	if g == nil {
		// Too early: the gateway may send proposals before the session
		// description or the external sender has been processed.
		if len(s.early) >= maxEarly {
			return nil, fmt.Errorf("dave: %d proposals arrived before the group exists; dropping another", len(s.early))
		}
		s.early = append(s.early, bytes.Clone(payload))
		return nil, nil
	}
	switch p.Operation {
	case ProposalsAppend:
		for _, m := range p.Messages {
			pm := m.PublicMessage
			if pm == nil || pm.Content.Sender.Type != mls.SenderExternal || pm.Content.Sender.Index != 0 ||
				pm.Content.ContentType != mls.ContentProposal {
				return nil, fmt.Errorf("dave: op 27 carries a message that is not an external proposal")
			}
			prop := pm.Content.Proposal
			switch prop.Type {
			case mls.ProposalAdd:
				id, err := userIDOf(&prop.KeyPackage.LeafNode.Credential)
				if err != nil {
					return nil, err
				}
				if id != s.userID && !s.recognized[id] {
					return nil, fmt.Errorf("dave: add proposal for unrecognized user %d", id)
				}
			case mls.ProposalRemove:
			default:
				return nil, fmt.Errorf("dave: proposal type %d not allowed", prop.Type)
			}
			if _, err := g.ProcessProposal(pm); err != nil {
				return nil, fmt.Errorf("dave: proposal: %w", err)
			}
		}
	case ProposalsRevoke:
		for _, ref := range p.Refs {
			if err := g.RevokeProposal(ref); err != nil {
				return nil, fmt.Errorf("dave: revoke: %w", err)
			}
		}
	}
	s.ownCommit, s.ownCommitB = nil, nil
	if g.PendingProposals() == 0 {
		return nil, nil
	}
	res, err := g.Commit()
	if err != nil {
		return nil, fmt.Errorf("dave: creating commit: %w", err)
	}
	s.ownCommit = res
	s.ownCommitB = res.Message.Marshal()
	cw := CommitWelcome{Commit: res.Message, Welcome: res.Welcome}
	return []conn.Outbound{{Op: gateway.OpDAVECommitWelcome, Binary: cw.Marshal()}}, nil
}

func userIDOf(c *mls.Credential) (uint64, error) {
	if c.Type != mls.CredentialBasic || len(c.Identity) != 8 {
		return 0, fmt.Errorf("dave: credential type %d with %d-byte identity is not a Discord user", c.Type, len(c.Identity))
	}
	return binary.BigEndian.Uint64(c.Identity), nil
}

func (s *Session) announceCommit(t TransitionPayload) ([]conn.Outbound, error) {
	if s.ownCommit != nil && bytes.Equal(t.Body, s.ownCommitB) {
		return s.adopt(s.ownCommit.Next, t.TransitionID)
	}
	if s.group == nil {
		// A pending member waits for its welcome.
		return nil, nil
	}
	m, err := mls.UnmarshalMLSMessage(t.Body)
	if err != nil || m.PublicMessage == nil {
		return s.failed(t.TransitionID, fmt.Errorf("commit message: %v", err))
	}
	if c := m.PublicMessage.Content.Commit; c != nil {
		// Spec D.10: only references to the external sender's proposals,
		// each checked as it came (op 27). A proposal by value would
		// pass none of those checks: an add of a user never announced,
		// the external sender replaced.
		for _, p := range c.Proposals {
			if p.Proposal != nil {
				return s.failed(t.TransitionID, fmt.Errorf("commit carries a proposal by value (type %d); DAVE commits only reference the gateway's proposals", p.Proposal.Type))
			}
		}
	}
	next, err := s.group.ProcessCommit(m.PublicMessage)
	if err != nil {
		return s.failed(t.TransitionID, err)
	}
	return s.adopt(next, t.TransitionID)
}

func (s *Session) welcome(t TransitionPayload) ([]conn.Outbound, error) {
	if s.group != nil || s.kp == nil || s.extSender == nil {
		return nil, nil
	}
	w, err := mls.UnmarshalWelcome(t.Body)
	if err != nil {
		return s.failed(t.TransitionID, err)
	}
	g, err := mls.Join(w, s.kp.JoinConfig())
	if err != nil {
		return s.failed(t.TransitionID, err)
	}
	ext, err := g.ExternalSenders()
	if err != nil || len(ext) != 1 || !bytes.Equal(ext[0].Marshal(), s.extSender.Marshal()) {
		return s.failed(t.TransitionID, fmt.Errorf("welcome external senders do not match op 25"))
	}
	return s.adopt(g, t.TransitionID)
}

// adopt installs a new epoch: receive ratchets now, the send ratchet at
// the transition.
func (s *Session) adopt(g *mls.Group, tid uint16) ([]conn.Outbound, error) {
	seen := map[uint64]bool{}
	for _, leaf := range g.Members() {
		id, err := userIDOf(&leaf.Credential)
		if err != nil {
			return s.failed(tid, err)
		}
		if seen[id] {
			return s.failed(tid, fmt.Errorf("user %d appears twice in the group", id))
		}
		seen[id] = true
	}
	// Members by their signature key: a client that rejoined has a new
	// one, even when its removal and its new add come in one commit.
	// When we are the one joining (no group: our first welcome, or back
	// after a refused commit or a re-identify), the members we knew are
	// those of our last group.
	weJoin := s.group == nil
	before := s.lastMembers
	if !weJoin {
		before = map[uint64]string{}
		for _, leaf := range s.group.Members() {
			if id, err := userIDOf(&leaf.Credential); err == nil {
				before[id] = string(leaf.SignatureKey)
			}
		}
	}
	sigs := map[uint64]string{}
	for _, leaf := range g.Members() {
		if id, err := userIDOf(&leaf.Credential); err == nil {
			sigs[id] = string(leaf.SignatureKey)
		}
	}
	s.group, s.pending, s.ownCommit, s.ownCommitB = g, nil, nil, nil
	now := s.now()
	for id := range s.joining {
		if !seen[id] && !s.recognized[id] {
			delete(s.joining, id)
		}
	}
	for id := range seen {
		old, ok := before[id]
		switch {
		case id == s.userID:
		case !ok || old != sigs[id]:
			// A member new to us (or back): its first frames may be
			// plaintext while its own session gets ready.
			s.joining[id] = now.Add(KeyExpiry)
		case weJoin:
			// It stayed while we were out: its session is ready
			// (PROBE29: after the bot re-identified, plain frames in the
			// names of members who never left were accepted).
			delete(s.joining, id)
		}
	}
	s.lastMembers = sigs
	for id, list := range s.receivers {
		kept := list[:0]
		for _, r := range list {
			if r.expiry.IsZero() {
				// Members keep sending under the previous epoch until
				// the transition executes (op 22): its receivers live
				// KeyExpiry past the execute (see execute), and at most
				// supersededExpiry, should it never come.
				r.expiry = now.Add(supersededExpiry)
			}
			if now.Before(r.expiry) {
				kept = append(kept, r)
			}
		}
		s.receivers[id] = kept
	}
	for id := range seen {
		if id == s.userID {
			continue
		}
		s.receivers[id] = append([]*recvState{newRecvState(SenderBaseSecret(g, id))}, s.receivers[id]...)
	}
	s.nextSender = &sendState{keys: newKeyRatchet(SenderBaseSecret(g, s.userID))}
	s.transitions[tid], s.preparedAt[tid] = s.version, now
	if tid == 0 {
		s.execute(0)
		return nil, nil
	}
	return []conn.Outbound{ready(tid)}, nil
}

// Encrypt protects an outgoing Opus frame. Frames pass through unchanged
// only under protocol version 0 (no DAVE, or a downgrade executed) and for
// the silence frame; with DAVE on and no send key (no group yet, or the
// recoveries gave up) it returns ErrNoSendKey: no key, no frame. Before
// the gateway has told the protocol version (op 4) no frame goes out
// either (ErrNoSendKey): the call may be end-to-end encrypted.
func (s *Session) Encrypt(frame []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if IsSilence(frame) || (s.described && s.version == 0) {
		return frame, nil
	}
	if !s.described {
		return nil, fmt.Errorf("%w (the voice gateway has not told the protocol version yet)", ErrNoSendKey)
	}
	if s.sender == nil {
		return nil, ErrNoSendKey
	}
	return s.sender.encrypt(frame, s.now())
}

// Decrypt opens a frame from userID.
func (s *Session) Decrypt(userID uint64, frame []byte) ([]byte, error) {
	if IsSilence(frame) {
		return frame, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	p, err := parseFrame(frame)
	if err != nil {
		if !s.described {
			// As Encrypt: before op 4 the call may be end-to-end
			// encrypted; no plain frame passes.
			return nil, fmt.Errorf("%w (the voice gateway has not told the protocol version yet)", err)
		}
		if s.require {
			return nil, fmt.Errorf("%w (end-to-end encryption is required)", err)
		}
		if s.passthroughForever || now.Before(s.passthroughUntil) {
			return frame, nil
		}
		if until, ok := s.joining[userID]; ok && now.Before(until) {
			return frame, nil
		}
		return nil, err
	}
	var firstErr error
	for i, r := range s.receivers[userID] {
		if !r.expiry.IsZero() && now.After(r.expiry) {
			continue
		}
		out, err := r.decrypt(p, now)
		if err == nil {
			// The first receiver is the newest epoch's: only its frames
			// show that the current group works, and only while we are in
			// one: after a refused commit or welcome (group reset, waiting
			// to be re-added) the receivers left are the old group's, and
			// a frame they open says nothing about the commits the
			// gateway sends us (issue 29: players talking through a run
			// of invalid commits reset the attempts and the bot never
			// gave up).
			s.decrypted(userID, i == 0 && s.group != nil)
			// Its session is ready: no more plaintext from it.
			delete(s.joining, userID)
			return out, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("%w: user %d", ErrNoKey, userID)
	}
	s.decryptFailed(userID)
	return nil, firstErr
}

// Epoch returns the current MLS epoch (0 before a group is established).
func (s *Session) Epoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.group == nil {
		return 0
	}
	return s.group.Epoch()
}

// PrivacyCode returns the 30-digit voice privacy code of the current
// epoch, or "" without a group.
func (s *Session) PrivacyCode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.group == nil {
		return ""
	}
	code, _ := DisplayableCode(s.group.EpochAuthenticator(), 30, 5)
	return code
}

// Ready reports whether outgoing frames are being encrypted.
func (s *Session) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version > 0 && s.sender != nil
}

// VerificationCode returns the 45-digit code to compare with userID out
// of band; both sides of a pair compute the same code.
func (s *Session) VerificationCode(userID uint64) (string, error) {
	s.mu.Lock()
	var other []byte
	if s.group != nil {
		for _, l := range s.group.Members() {
			if id, err := userIDOf(&l.Credential); err == nil && id == userID {
				other = l.SignatureKey
			}
		}
	}
	own := s.sig.Public()
	s.mu.Unlock()
	if other == nil {
		return "", fmt.Errorf("dave: user %d is not in the group", userID)
	}
	fp, err := PairwiseFingerprint(own, s.userID, other, userID)
	if err != nil {
		return "", err
	}
	return VerificationCode(fp)
}
