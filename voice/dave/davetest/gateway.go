// Package davetest plays the voice gateway's side of DAVE for tests: the
// MLS external sender of one voice channel's group, the delivery service
// that picks one commit per epoch, and the transition coordinator.
//
// [Gateway] implements [voicetest.DAVEHandler], so a fake voice server
// speaks DAVE with real clients:
//
//	gw, err := davetest.New(channelID)
//	srv, err := voicetest.New(voicetest.Config{DAVEVersion: 1, DAVE: gw, RequireDAVE: true})
//
// # What the gateway does
//
//   - A client whose session is described gets the external sender (op 25).
//     Its key package (op 26) makes it a joiner.
//   - Without a group, once two or more clients have key packages, each is
//     sent external Add proposals (op 27) for the others; every client
//     commits in its own epoch-0 group, the first valid commit (op 28)
//     wins: its author gets it announced (op 29) and the others are
//     welcomed (op 30) — the group is at epoch 1.
//   - With a group, joiners are added and departed or unusable members
//     removed by proposals sent identically to every member; the first
//     commit that references exactly the proposals sent this epoch wins and
//     is announced to every member, with welcomes trimmed to each joiner's
//     entry. Proposals for a joiner who leaves before any commit are
//     revoked.
//   - Each announcement opens a transition; when every member in it has
//     reported ready (op 23), all are told to execute it (op 22).
//   - A member that rejects a commit or welcome (op 31) is removed and
//     re-added with the fresh key package it sends next.
//   - When one member is left, it is reset: op 24 (epoch 1) and op 21 with
//     transition 0, as Discord does; a group forms again when someone
//     joins.
//
// Commits are checked as the real gateway checks them (group, epoch, a
// member sender, proposals only by reference and exactly those sent, a
// Welcome when members are added); the MLS signature and tags are left to
// the members, which hold the tree. Transitions have no timeout: a member
// that never reports ready holds its transition open.
package davetest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// Option configures a Gateway.
type Option func(*Gateway)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(g *Gateway) { g.log = l } }

// WithSignatureKey uses sig as the external sender's key instead of a
// fresh one.
func WithSignatureKey(sig *mls.SignatureKey) Option { return func(g *Gateway) { g.sig = sig } }

// Gateway is the DAVE role of the voice gateway for one voice channel. Its
// methods are safe for concurrent use; the messages one call returns must
// be delivered before those of the next call (voicetest does).
type Gateway struct {
	mu      sync.Mutex
	log     *slog.Logger
	groupID []byte
	sig     *mls.SignatureKey
	sender  mls.ExternalSender

	users map[string]*user
	// leaves is the established group's roster by leaf index ("" for a
	// blank leaf); nil while there is no group.
	leaves      []string
	epoch       uint64
	round       *round
	tid         uint16
	transitions map[uint16]*transition
	stats       Stats
}

// Stats counts what the gateway did.
type Stats struct {
	// Commits is the number of commits announced (epochs started).
	Commits int
	// Ignored counts commits that lost, were stale, or were invalid.
	Ignored int
	// Executed counts transitions executed (op 22 sent).
	Executed int
	// Invalid counts op 31 reports.
	Invalid int
	// Resets counts sole-member resets (op 24).
	Resets int
	// Revoked counts proposals revoked before a commit.
	Revoked int
}

type user struct {
	id  string
	uid uint64
	// kp is a key package waiting to be added.
	kp *mls.KeyPackage
	// stale marks a member whose leaf no longer works (it re-identified
	// or rejected a commit or welcome); the leaf is removed.
	stale bool
}

// proposal is one external proposal sent in the current round.
type proposal struct {
	msg    *mls.MLSMessage
	ref    []byte
	add    string // user added, or ""
	kp     *mls.KeyPackage
	remove int // leaf removed, or -1
}

// round is the open epoch: the proposals sent to each committer.
type round struct {
	epoch   uint64
	initial bool // no group yet: each client commits in its own epoch-0 group
	byKey   map[string]*proposal
	sent    map[string][]string // committer → proposal keys, in order
}

type transition struct {
	members []string
	waiting map[string]bool
}

var _ voicetest.DAVEHandler = (*Gateway)(nil)

// New makes the gateway for voice channel channelID (the MLS group id).
func New(channelID uint64, opts ...Option) (*Gateway, error) {
	g := &Gateway{log: slog.New(slog.DiscardHandler), groupID: binary.BigEndian.AppendUint64(nil, channelID),
		users: map[string]*user{}, transitions: map[uint16]*transition{}}
	for _, o := range opts {
		o(g)
	}
	if g.sig == nil {
		sig, err := mls.GenerateSignatureKey()
		if err != nil {
			return nil, fmt.Errorf("davetest: external sender key: %w", err)
		}
		g.sig = sig
	}
	g.sender = mls.ExternalSender{SignatureKey: g.sig.Public(),
		Credential: mls.Credential{Type: mls.CredentialBasic, Identity: []byte("voice gateway")}}
	return g, nil
}

// ExternalSender returns the op 25 payload.
func (g *Gateway) ExternalSender() []byte { return g.sender.Marshal() }

// Epoch returns the established group's epoch (0 without a group).
func (g *Gateway) Epoch() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch
}

// Members returns the user ids in the group, by leaf index.
func (g *Gateway) Members() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, u := range g.leaves {
		if u != "" {
			out = append(out, u)
		}
	}
	return out
}

// Settled reports whether no round is open and every transition has
// executed.
func (g *Gateway) Settled() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.round == nil && len(g.transitions) == 0
}

// Stats returns the counters.
func (g *Gateway) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.stats
}

// Joined handles a client whose session was described with DAVE: it gets
// the external sender. A client that was a member (it re-identified) has
// its old leaf removed.
func (g *Gateway) Joined(userID string) []voicetest.Delivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	uid, err := strconv.ParseUint(userID, 10, 64)
	if err != nil {
		g.log.Warn("davetest: user id is not a snowflake", "user", userID)
		return nil
	}
	u := g.users[userID]
	if u == nil {
		u = &user{id: userID, uid: uid}
		g.users[userID] = u
	}
	u.kp = nil
	u.stale = slices.Contains(g.leaves, userID)
	if g.round != nil {
		// Its old MLS state is gone with its old session.
		delete(g.round.sent, userID)
	}
	out := []voicetest.Delivery{{UserID: userID, Op: gateway.OpDAVEExternalSender, Binary: g.sender.Marshal()}}
	out = append(out, g.forget(userID)...)
	return append(out, g.update()...)
}

// Left handles a client that left the channel.
func (g *Gateway) Left(userID string) []voicetest.Delivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.users, userID)
	out := g.forget(userID)
	return append(out, g.update()...)
}

// forget drops userID from open transitions, executing those it held up.
func (g *Gateway) forget(userID string) []voicetest.Delivery {
	var out []voicetest.Delivery
	for _, id := range g.transitionIDs() {
		t := g.transitions[id]
		if t.waiting[userID] {
			delete(t.waiting, userID)
			t.members = slices.DeleteFunc(t.members, func(m string) bool { return m == userID })
			out = append(out, g.maybeExecute(id)...)
		}
	}
	return out
}

func (g *Gateway) transitionIDs() []uint16 {
	ids := make([]uint16, 0, len(g.transitions))
	for id := range g.transitions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// FromClient handles a client's DAVE message: a key package (26), a
// commit and welcome (28), transition ready (23) or an invalid commit or
// welcome (31).
func (g *Gateway) FromClient(userID string, op gateway.Op, payload []byte) []voicetest.Delivery {
	g.mu.Lock()
	defer g.mu.Unlock()
	u := g.users[userID]
	if u == nil {
		g.log.Warn("davetest: DAVE message from a client without a DAVE session", "user", userID, "op", op)
		return nil
	}
	switch op {
	case gateway.OpDAVEKeyPackage:
		if err := g.keyPackage(u, payload); err != nil {
			g.log.Warn("davetest: rejecting key package", "user", userID, "err", err)
			return nil
		}
		return g.update()
	case gateway.OpDAVECommitWelcome:
		return g.commit(u, payload)
	case gateway.OpDAVETransitionReady, gateway.OpDAVEInvalidCommitWelcome:
		var t gateway.Transition
		if err := json.Unmarshal(payload, &t); err != nil || t.TransitionID < 0 || t.TransitionID > 0xFFFF {
			g.log.Warn("davetest: bad transition payload", "user", userID, "op", op, "payload", string(payload), "err", err)
			return nil
		}
		tid := uint16(t.TransitionID)
		if op == gateway.OpDAVETransitionReady {
			if tr := g.transitions[tid]; tr != nil {
				delete(tr.waiting, userID)
			}
			return g.maybeExecute(tid)
		}
		g.stats.Invalid++
		g.log.Info("davetest: member rejected a commit or welcome", "user", userID, "transition_id", tid)
		u.kp = nil
		u.stale = slices.Contains(g.leaves, userID)
		out := g.forget(userID)
		return append(out, g.update()...)
	}
	g.log.Warn("davetest: unexpected op from client", "user", userID, "op", op)
	return nil
}

func (g *Gateway) keyPackage(u *user, payload []byte) error {
	kp, err := mls.UnmarshalKeyPackage(payload)
	if err != nil {
		return err
	}
	if err := kp.Verify(); err != nil {
		return err
	}
	c := kp.LeafNode.Credential
	if c.Type != mls.CredentialBasic || len(c.Identity) != 8 || binary.BigEndian.Uint64(c.Identity) != u.uid {
		return fmt.Errorf("credential type %d identity %x does not name user %d", c.Type, c.Identity, u.uid)
	}
	if kp.LeafNode.NotBefore != 0 || kp.LeafNode.NotAfter != ^uint64(0) {
		return fmt.Errorf("lifetime %d..%d, want 0..2^64-1", kp.LeafNode.NotBefore, kp.LeafNode.NotAfter)
	}
	u.kp = kp
	return nil
}

// live reports whether a leaf's user is connected and usable.
func (g *Gateway) live(id string) bool {
	u := g.users[id]
	return u != nil && !u.stale
}

// update brings the open round in line with who is connected: proposals
// for new joiners and departed members are sent, proposals that no longer
// apply revoked; a lone member is reset.
func (g *Gateway) update() []voicetest.Delivery {
	var out []voicetest.Delivery
	if g.leaves != nil {
		var alive []string
		for _, id := range g.leaves {
			if id != "" && g.live(id) {
				alive = append(alive, id)
			}
		}
		if len(alive) <= 1 {
			out = append(out, g.dissolve(alive)...)
		}
	}
	want := g.wanted() // committer → proposal keys
	if len(want) == 0 && g.round == nil {
		return out
	}
	if g.round == nil {
		g.round = &round{epoch: g.epoch, initial: g.leaves == nil, byKey: map[string]*proposal{}, sent: map[string][]string{}}
	}
	r := g.round
	committers := make([]string, 0, len(want)+len(r.sent))
	for c := range want {
		committers = append(committers, c)
	}
	for c := range r.sent {
		if _, ok := want[c]; !ok {
			committers = append(committers, c)
		}
	}
	slices.Sort(committers)
	for _, c := range committers {
		keys, committing := want[c]
		have := r.sent[c]
		if !committing && !g.live(c) {
			// It left or its state is gone: it gets nothing more.
			delete(r.sent, c)
			continue
		}
		var revoke [][]byte
		for _, k := range have {
			if !slices.Contains(keys, k) {
				revoke = append(revoke, r.byKey[k].ref)
			}
		}
		var add []*mls.MLSMessage
		for _, k := range keys {
			if slices.Contains(have, k) {
				continue
			}
			p, err := g.proposalFor(k)
			if err != nil {
				g.log.Error("davetest: building a proposal", "err", err)
				continue
			}
			add = append(add, p.msg)
		}
		if len(revoke) > 0 {
			g.stats.Revoked += len(revoke)
			out = append(out, voicetest.Delivery{UserID: c, Op: gateway.OpDAVEProposals,
				Binary: (&dave.ProposalsPayload{Operation: dave.ProposalsRevoke, Refs: revoke}).Marshal()})
		}
		if len(add) > 0 {
			out = append(out, voicetest.Delivery{UserID: c, Op: gateway.OpDAVEProposals,
				Binary: (&dave.ProposalsPayload{Operation: dave.ProposalsAppend, Messages: add}).Marshal()})
		}
		r.sent[c] = slices.Clone(keys)
	}
	for c, keys := range r.sent {
		if len(keys) == 0 {
			delete(r.sent, c)
		}
	}
	if len(r.sent) == 0 {
		g.round = nil
	}
	return out
}

// wanted computes, for every client that should commit now, the keys of
// the proposals it should hold.
func (g *Gateway) wanted() map[string][]string {
	want := map[string][]string{}
	if g.leaves == nil {
		var pending []*user
		for _, u := range g.users {
			if u.kp != nil {
				pending = append(pending, u)
			}
		}
		if len(pending) < 2 {
			return nil
		}
		slices.SortFunc(pending, func(a, b *user) int { return cmpString(a.id, b.id) })
		for _, c := range pending {
			for _, o := range pending {
				if o != c {
					want[c.id] = append(want[c.id], addKey(o))
				}
			}
		}
		return want
	}
	var keys []string
	for i, id := range g.leaves {
		if id != "" && !g.live(id) {
			keys = append(keys, "rm:"+strconv.Itoa(i))
		}
	}
	var joiners []*user
	for _, u := range g.users {
		if u.kp != nil && !slices.Contains(g.leaves, u.id) {
			joiners = append(joiners, u)
		}
	}
	slices.SortFunc(joiners, func(a, b *user) int { return cmpString(a.id, b.id) })
	for _, u := range joiners {
		keys = append(keys, addKey(u))
	}
	if len(keys) == 0 {
		return nil
	}
	for _, id := range g.leaves {
		if id != "" && g.live(id) {
			want[id] = keys
		}
	}
	return want
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func addKey(u *user) string { return "add:" + u.id + ":" + hex.EncodeToString(u.kp.Ref()) }

// proposalFor returns the round's proposal for key k, building and
// signing it the first time: every committer gets the same message, so
// every member caches the same reference.
func (g *Gateway) proposalFor(k string) (*proposal, error) {
	r := g.round
	if p := r.byKey[k]; p != nil {
		return p, nil
	}
	p := &proposal{remove: -1}
	var prop *mls.Proposal
	switch {
	case len(k) > 4 && k[:4] == "add:":
		var u *user
		for _, x := range g.users {
			if x.kp != nil && addKey(x) == k {
				u = x
			}
		}
		if u == nil {
			return nil, fmt.Errorf("no key package for %s", k)
		}
		p.add, p.kp = u.id, u.kp
		prop = &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: u.kp}
	case len(k) > 3 && k[:3] == "rm:":
		leaf, err := strconv.Atoi(k[3:])
		if err != nil {
			return nil, err
		}
		p.remove = leaf
		prop = &mls.Proposal{Type: mls.ProposalRemove, Removed: uint32(leaf)}
	default:
		return nil, fmt.Errorf("proposal key %q", k)
	}
	msg, err := mls.NewExternalProposal(g.groupID, r.epoch, 0, prop, g.sig)
	if err != nil {
		return nil, err
	}
	p.msg, p.ref = msg, mls.ProposalRef(msg.PublicMessage)
	r.byKey[k] = p
	return p, nil
}

// dissolve ends a group that has at most one usable member left: that
// member is reset (op 24 epoch 1, then op 21 with transition 0) and sends
// a new key package.
func (g *Gateway) dissolve(alive []string) []voicetest.Delivery {
	g.leaves, g.epoch, g.round = nil, 0, nil
	clear(g.transitions)
	g.stats.Resets++
	var out []voicetest.Delivery
	for _, id := range alive {
		g.users[id].kp = nil
		out = append(out,
			voicetest.Delivery{UserID: id, Op: gateway.OpDAVEPrepareEpoch, JSON: gateway.PrepareEpoch{Epoch: 1, ProtocolVersion: dave.ProtocolVersion}},
			voicetest.Delivery{UserID: id, Op: gateway.OpDAVEPrepareTransition, JSON: gateway.Transition{TransitionID: 0, ProtocolVersion: dave.ProtocolVersion}})
	}
	for _, u := range g.users {
		u.stale = false
	}
	return out
}

// commit handles op 28: the first commit that matches the proposals sent
// to its author wins the epoch.
func (g *Gateway) commit(u *user, payload []byte) []voicetest.Delivery {
	r := g.round
	if r == nil || r.sent[u.id] == nil {
		g.stats.Ignored++
		g.log.Debug("davetest: commit outside a round", "user", u.id)
		return nil
	}
	cw, err := dave.ParseCommitWelcome(payload)
	if err == nil {
		err = g.checkCommit(r, u.id, cw)
	}
	if err != nil {
		g.stats.Ignored++
		g.log.Info("davetest: ignoring commit", "user", u.id, "epoch", r.epoch, "err", err)
		return nil
	}
	var props []*proposal
	for _, por := range cw.Commit.PublicMessage.Content.Commit.Proposals {
		for _, k := range r.sent[u.id] {
			if p := r.byKey[k]; bytes.Equal(p.ref, por.Ref) {
				props = append(props, p)
			}
		}
	}
	// The previous members hear the commit; the added ones are welcomed.
	var announce []string
	if r.initial {
		g.leaves = []string{u.id}
		announce = []string{u.id}
		u.kp = nil
	} else {
		for _, id := range g.leaves {
			if id != "" && g.live(id) {
				announce = append(announce, id)
			}
		}
	}
	for _, p := range props {
		if p.remove >= 0 {
			if gone := g.users[g.leaves[p.remove]]; gone != nil {
				gone.stale = false // out of the group; it may be added again
			}
			g.leaves[p.remove] = ""
		}
	}
	var joiners []*proposal
	for _, p := range props {
		if p.add == "" {
			continue
		}
		if i := slices.Index(g.leaves, ""); i >= 0 {
			g.leaves[i] = p.add
		} else {
			g.leaves = append(g.leaves, p.add)
		}
		joiners = append(joiners, p)
	}
	for len(g.leaves) > 0 && g.leaves[len(g.leaves)-1] == "" {
		g.leaves = g.leaves[:len(g.leaves)-1]
	}
	g.epoch = r.epoch + 1
	g.round = nil
	g.stats.Commits++
	g.tid++
	if g.tid == 0 {
		g.tid = 1
	}
	tid := g.tid
	t := &transition{waiting: map[string]bool{}}
	var out []voicetest.Delivery
	commit := dave.TransitionPayload{TransitionID: tid, Body: cw.Commit.Marshal()}.Marshal()
	for _, id := range announce {
		out = append(out, voicetest.Delivery{UserID: id, Op: gateway.OpDAVEAnnounceCommit, Binary: commit})
		t.members = append(t.members, id)
		t.waiting[id] = true
	}
	for _, p := range joiners {
		w := trimWelcome(cw.Welcome, p.kp)
		out = append(out, voicetest.Delivery{UserID: p.add, Op: gateway.OpDAVEWelcome,
			Binary: dave.TransitionPayload{TransitionID: tid, Body: w.Marshal()}.Marshal()})
		if j := g.users[p.add]; j != nil && j.kp == p.kp {
			j.kp = nil
		}
		t.members = append(t.members, p.add)
		t.waiting[p.add] = true
	}
	g.transitions[tid] = t
	g.log.Info("davetest: commit announced", "user", u.id, "epoch", g.epoch, "transition_id", tid, "members", g.leaves)
	return append(out, g.update()...)
}

// checkCommit applies the gateway's validity rules to a commit from
// committer.
func (g *Gateway) checkCommit(r *round, committer string, cw *dave.CommitWelcome) error {
	pm := cw.Commit.PublicMessage
	if pm == nil || pm.Content.ContentType != mls.ContentCommit || pm.Content.Commit == nil {
		return fmt.Errorf("not a public commit message")
	}
	c := pm.Content
	if !bytes.Equal(c.GroupID, g.groupID) {
		return fmt.Errorf("group id %x, want %x", c.GroupID, g.groupID)
	}
	if c.Epoch != r.epoch {
		return fmt.Errorf("epoch %d, want %d", c.Epoch, r.epoch)
	}
	if c.Sender.Type != mls.SenderMember {
		return fmt.Errorf("sender type %d", c.Sender.Type)
	}
	if !r.initial && (int(c.Sender.Index) >= len(g.leaves) || g.leaves[c.Sender.Index] != committer) {
		return fmt.Errorf("sender leaf %d is not %s", c.Sender.Index, committer)
	}
	want := map[string]bool{}
	adds := 0
	for _, k := range r.sent[committer] {
		want[string(r.byKey[k].ref)] = true
		if r.byKey[k].add != "" {
			adds++
		}
	}
	seen := map[string]bool{}
	for _, por := range c.Commit.Proposals {
		if por.Proposal != nil {
			return fmt.Errorf("proposal by value")
		}
		if !want[string(por.Ref)] || seen[string(por.Ref)] {
			return fmt.Errorf("reference %x is not a proposal sent this epoch", por.Ref)
		}
		seen[string(por.Ref)] = true
	}
	if len(seen) != len(want) {
		return fmt.Errorf("commit covers %d of the %d proposals", len(seen), len(want))
	}
	if adds > 0 && (cw.Welcome == nil || len(cw.Welcome.Secrets) != adds) {
		return fmt.Errorf("%d members added without a matching welcome", adds)
	}
	return nil
}

// trimWelcome keeps only kp's entry of a Welcome's secrets, as Discord
// sends each joiner its own.
func trimWelcome(w *mls.Welcome, kp *mls.KeyPackage) *mls.Welcome {
	ref := kp.Ref()
	out := &mls.Welcome{CipherSuite: w.CipherSuite, EncryptedGroupInfo: w.EncryptedGroupInfo}
	for _, s := range w.Secrets {
		if bytes.Equal(s.NewMember, ref) {
			out.Secrets = append(out.Secrets, s)
		}
	}
	return out
}

// maybeExecute sends op 22 once every member of transition tid is ready.
func (g *Gateway) maybeExecute(tid uint16) []voicetest.Delivery {
	t := g.transitions[tid]
	if t == nil || len(t.waiting) > 0 {
		return nil
	}
	delete(g.transitions, tid)
	g.stats.Executed++
	var out []voicetest.Delivery
	for _, id := range t.members {
		if g.users[id] != nil {
			out = append(out, voicetest.Delivery{UserID: id, Op: gateway.OpDAVEExecuteTransition, JSON: gateway.Transition{TransitionID: int(tid)}})
		}
	}
	return out
}
