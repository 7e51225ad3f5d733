package mls

import (
	"bytes"
	"encoding/binary"
	"testing"
)

var daveCaps = Capabilities{Versions: []uint16{1}, CipherSuites: []uint16{2}, Credentials: []uint16{1}}

func basicCred(id uint64) Credential {
	return Credential{Type: CredentialBasic, Identity: binary.BigEndian.AppendUint64(nil, id)}
}

func mustKP(t testing.TB, id uint64) *KeyPackageBundle {
	t.Helper()
	sig, err := GenerateSignatureKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKeyPackage(sig, basicCred(id), daveCaps)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.KeyPackage.Verify(); err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalKeyPackage(b.KeyPackage.Marshal())
	if err != nil || !bytes.Equal(back.Marshal(), b.KeyPackage.Marshal()) {
		t.Fatalf("key package round trip: %v", err)
	}
	return b
}

type testGateway struct {
	t      testing.TB
	sig    *SignatureKey
	sender ExternalSender
}

func newTestGateway(t testing.TB) *testGateway {
	sig, err := GenerateSignatureKey()
	if err != nil {
		t.Fatal(err)
	}
	return &testGateway{t: t, sig: sig, sender: ExternalSender{SignatureKey: sig.Public(), Credential: basicCred(0)}}
}

func (gw *testGateway) propose(g *Group, p *Proposal) *PublicMessage {
	gw.t.Helper()
	m, err := NewExternalProposal(g.GroupID(), g.Epoch(), 0, p, gw.sig)
	if err != nil {
		gw.t.Fatal(err)
	}
	back, err := UnmarshalMLSMessage(m.Marshal())
	if err != nil {
		gw.t.Fatal(err)
	}
	return back.PublicMessage
}

func mustProcess(t testing.TB, g *Group, p *PublicMessage) {
	t.Helper()
	if _, err := g.ProcessProposal(p); err != nil {
		t.Fatalf("proposal: %v", err)
	}
}

// wire re-decodes a commit result as a receiver would see it.
func wire(t testing.TB, r *CommitResult) (*PublicMessage, *Welcome) {
	t.Helper()
	m, err := UnmarshalMLSMessage(r.Message.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	var w *Welcome
	if r.Welcome != nil {
		if w, err = UnmarshalWelcome(r.Welcome.Marshal()); err != nil {
			t.Fatal(err)
		}
	}
	return m.PublicMessage, w
}

func sameEpoch(t *testing.T, groups ...*Group) {
	t.Helper()
	for _, g := range groups[1:] {
		if g.Epoch() != groups[0].Epoch() || !bytes.Equal(g.EpochAuthenticator(), groups[0].EpochAuthenticator()) ||
			!bytes.Equal(g.Export("x", []byte("c"), 16), groups[0].Export("x", []byte("c"), 16)) {
			t.Fatalf("groups disagree at epoch %d/%d", g.Epoch(), groups[0].Epoch())
		}
	}
}

func TestGroupLifecycle(t *testing.T) {
	gw := newTestGateway(t)
	groupID := binary.BigEndian.AppendUint64(nil, 1234)
	ext := []Extension{ExternalSendersExtension(gw.sender)}
	kpA, kpB, kpC := mustKP(t, 1), mustKP(t, 2), mustKP(t, 3)

	alice, err := NewGroupFromKeyPackage(groupID, kpA, ext)
	if err != nil {
		t.Fatal(err)
	}
	// Epoch 0 → 1: add Bob and Carol, no path.
	mustProcess(t, alice, gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpB.KeyPackage}))
	mustProcess(t, alice, gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpC.KeyPackage}))
	res, err := alice.Commit()
	if err != nil {
		t.Fatal(err)
	}
	commit, welcome := wire(t, res)
	if commit.Content.Commit.Path != nil || welcome == nil || len(welcome.Secrets) != 2 {
		t.Fatalf("add-only commit: path %v, welcome %v", commit.Content.Commit.Path != nil, welcome != nil)
	}
	alice = res.Next
	bob, err := Join(welcome, kpB.JoinConfig())
	if err != nil {
		t.Fatalf("bob join: %v", err)
	}
	carol, err := Join(welcome, kpC.JoinConfig())
	if err != nil {
		t.Fatalf("carol join: %v", err)
	}
	sameEpoch(t, alice, bob, carol)
	if senders, _ := bob.ExternalSenders(); len(senders) != 1 || !bytes.Equal(senders[0].Marshal(), gw.sender.Marshal()) {
		t.Fatal("external sender not carried into the welcome")
	}

	// Epoch 1 → 2: remove Bob; Carol commits with a path, Alice follows.
	rm := &Proposal{Type: ProposalRemove, Removed: bob.OwnLeaf()}
	p := gw.propose(alice, rm)
	mustProcess(t, alice, p)
	mustProcess(t, carol, p)
	mustProcess(t, bob, p)
	res, err = carol.Commit()
	if err != nil {
		t.Fatal(err)
	}
	commit, welcome = wire(t, res)
	if commit.Content.Commit.Path == nil || welcome != nil {
		t.Fatal("remove commit must carry a path and no welcome")
	}
	carol = res.Next
	if alice, err = alice.ProcessCommit(commit); err != nil {
		t.Fatalf("alice processes remove: %v", err)
	}
	if _, err := bob.ProcessCommit(commit); err == nil {
		t.Fatal("removed member processed its own removal without error")
	}
	sameEpoch(t, alice, carol)

	// Epoch 2 → 3: add Dave, Alice commits; Carol processes; Dave joins.
	kpD := mustKP(t, 4)
	add := gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpD.KeyPackage})
	mustProcess(t, alice, add)
	mustProcess(t, carol, add)
	res, err = alice.Commit()
	if err != nil {
		t.Fatal(err)
	}
	commit, welcome = wire(t, res)
	alice = res.Next
	if carol, err = carol.ProcessCommit(commit); err != nil {
		t.Fatalf("carol processes add: %v", err)
	}
	dave, err := Join(welcome, kpD.JoinConfig())
	if err != nil {
		t.Fatalf("dave join: %v", err)
	}
	sameEpoch(t, alice, carol, dave)

	// Epoch 3 → 4: remove Carol with Dave committing (path with a
	// welcome-derived path secret at Dave).
	p = gw.propose(alice, &Proposal{Type: ProposalRemove, Removed: carol.OwnLeaf()})
	mustProcess(t, alice, p)
	mustProcess(t, dave, p)
	res, err = dave.Commit()
	if err != nil {
		t.Fatal(err)
	}
	commit, _ = wire(t, res)
	dave = res.Next
	if alice, err = alice.ProcessCommit(commit); err != nil {
		t.Fatalf("alice processes dave's commit: %v", err)
	}
	sameEpoch(t, alice, dave)
	if len(alice.Members()) != 2 {
		t.Fatalf("%d members, want 2", len(alice.Members()))
	}
}

func TestGroupRejects(t *testing.T) {
	gw := newTestGateway(t)
	groupID := []byte{0, 0, 0, 0, 0, 0, 0, 9}
	kpA := mustKP(t, 1)
	alice, err := NewGroupFromKeyPackage(groupID, kpA, []Extension{ExternalSendersExtension(gw.sender)})
	if err != nil {
		t.Fatal(err)
	}
	other := newTestGateway(t)
	kpB := mustKP(t, 2)
	if _, err := alice.ProcessProposal(other.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpB.KeyPackage})); err == nil {
		t.Error("proposal signed by an unknown sender accepted")
	}
	p := gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpB.KeyPackage})
	p.Content.Epoch = 5
	if _, err := alice.ProcessProposal(p); err == nil {
		t.Error("proposal for another epoch accepted")
	}
	if _, err := alice.ProcessProposal(gw.propose(alice, &Proposal{Type: ProposalRemove, Removed: 7})); err == nil {
		t.Error("remove of an empty leaf accepted")
	}
	if err := alice.RevokeProposal([]byte("nope")); err == nil {
		t.Error("revoking an unknown ref succeeded")
	}
	ref, err := alice.ProcessProposal(gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpB.KeyPackage}))
	if err != nil {
		t.Fatal(err)
	}
	if err := alice.RevokeProposal(ref); err != nil || alice.PendingProposals() != 0 {
		t.Fatalf("revoke: %v, %d left", err, alice.PendingProposals())
	}
}

func TestCommitTamperingRejected(t *testing.T) {
	gw := newTestGateway(t)
	groupID := binary.BigEndian.AppendUint64(nil, 77)
	kpA, kpB, kpC := mustKP(t, 1), mustKP(t, 2), mustKP(t, 3)
	alice, err := NewGroupFromKeyPackage(groupID, kpA, []Extension{ExternalSendersExtension(gw.sender)})
	if err != nil {
		t.Fatal(err)
	}
	mustProcess(t, alice, gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpB.KeyPackage}))
	mustProcess(t, alice, gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kpC.KeyPackage}))
	res, err := alice.Commit()
	if err != nil {
		t.Fatal(err)
	}
	_, welcome := wire(t, res)
	alice = res.Next
	bob, err := Join(welcome, kpB.JoinConfig())
	if err != nil {
		t.Fatal(err)
	}
	rm := gw.propose(alice, &Proposal{Type: ProposalRemove, Removed: 2})
	mustProcess(t, alice, rm)
	mustProcess(t, bob, rm)
	res, err = alice.Commit()
	if err != nil {
		t.Fatal(err)
	}
	raw := res.Message.Marshal()
	for name, mutate := range map[string]func(p *PublicMessage){
		"membership tag":   func(p *PublicMessage) { p.MembershipTag[0] ^= 1 },
		"confirmation tag": func(p *PublicMessage) { p.ConfirmationTag[0] ^= 1 },
		"signature":        func(p *PublicMessage) { p.Signature[len(p.Signature)-1] ^= 1 },
		"epoch":            func(p *PublicMessage) { p.Content.Epoch++ },
		"path key":         func(p *PublicMessage) { p.Content.Commit.Path.Nodes[0].EncryptionKey[5] ^= 1 },
		"unknown ref":      func(p *PublicMessage) { p.Content.Commit.Proposals[0].Ref = RefHash("x", nil) },
	} {
		m, err := UnmarshalMLSMessage(bytes.Clone(raw))
		if err != nil {
			t.Fatal(err)
		}
		mutate(m.PublicMessage)
		if _, err := bob.ProcessCommit(m.PublicMessage); err == nil {
			t.Errorf("%s: tampered commit accepted", name)
		}
	}
	m, _ := UnmarshalMLSMessage(raw)
	if _, err := bob.ProcessCommit(m.PublicMessage); err != nil {
		t.Fatalf("untampered commit: %v", err)
	}
	// The welcome is bound to its key package.
	if _, err := Join(welcome, mustKP(t, 9).JoinConfig()); err == nil {
		t.Error("welcome opened with a foreign key package")
	}
}

// A commit that removes and adds at once carries a path, so the welcome
// gives the joiner the path secret of its common ancestor with the
// committer; the joiner must then follow later path commits.
func TestRemoveAndAddInOneCommit(t *testing.T) {
	gw := newTestGateway(t)
	groupID := binary.BigEndian.AppendUint64(nil, 5)
	kps := map[uint64]*KeyPackageBundle{}
	for id := uint64(1); id <= 6; id++ {
		kps[id] = mustKP(t, id)
	}
	alice, err := NewGroupFromKeyPackage(groupID, kps[1], []Extension{ExternalSendersExtension(gw.sender)})
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(2); id <= 4; id++ {
		mustProcess(t, alice, gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kps[id].KeyPackage}))
	}
	res, err := alice.Commit()
	if err != nil {
		t.Fatal(err)
	}
	_, welcome := wire(t, res)
	alice = res.Next
	bob, err := Join(welcome, kps[2].JoinConfig())
	if err != nil {
		t.Fatal(err)
	}
	// Remove leaf 2 (user 3) and add users 5 and 6 in one commit by Bob.
	props := []*PublicMessage{
		gw.propose(alice, &Proposal{Type: ProposalRemove, Removed: 2}),
		gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kps[5].KeyPackage}),
		gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kps[6].KeyPackage}),
	}
	for _, p := range props {
		mustProcess(t, alice, p)
		mustProcess(t, bob, p)
	}
	res, err = bob.Commit()
	if err != nil {
		t.Fatal(err)
	}
	commit, welcome := wire(t, res)
	if commit.Content.Commit.Path == nil || welcome == nil {
		t.Fatal("remove+add commit needs a path and a welcome")
	}
	bob = res.Next
	if alice, err = alice.ProcessCommit(commit); err != nil {
		t.Fatal(err)
	}
	erin, err := Join(welcome, kps[5].JoinConfig())
	if err != nil {
		t.Fatalf("join with path secret: %v", err)
	}
	frank, err := Join(welcome, kps[6].JoinConfig())
	if err != nil {
		t.Fatalf("join with path secret: %v", err)
	}
	sameEpoch(t, alice, bob, erin, frank)
	// Alice removes Bob; the path is encrypted to nodes whose keys the
	// joiners learned from their path secrets.
	p := gw.propose(alice, &Proposal{Type: ProposalRemove, Removed: bob.OwnLeaf()})
	for _, g := range []*Group{alice, erin, frank} {
		mustProcess(t, g, p)
	}
	res, err = alice.Commit()
	if err != nil {
		t.Fatal(err)
	}
	commit, _ = wire(t, res)
	alice = res.Next
	if erin, err = erin.ProcessCommit(commit); err != nil {
		t.Fatalf("erin: %v", err)
	}
	if frank, err = frank.ProcessCommit(commit); err != nil {
		t.Fatalf("frank: %v", err)
	}
	sameEpoch(t, alice, erin, frank)
}
