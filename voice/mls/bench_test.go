package mls

import (
	"encoding/binary"
	"testing"
)

// groupOf25 builds a 25-member group and returns the views of the first
// two members, both holding an external Remove of the last member.
func groupOf25(b *testing.B) (alice, bob *Group) {
	gw := newTestGateway(b)
	groupID := binary.BigEndian.AppendUint64(nil, 42)
	alice, err := NewGroupFromKeyPackage(groupID, mustKP(b, 1), []Extension{ExternalSendersExtension(gw.sender)})
	if err != nil {
		b.Fatal(err)
	}
	var kpBob *KeyPackageBundle
	for id := uint64(2); id <= 25; id++ {
		kp := mustKP(b, id)
		if id == 2 {
			kpBob = kp
		}
		mustProcess(b, alice, gw.propose(alice, &Proposal{Type: ProposalAdd, KeyPackage: kp.KeyPackage}))
	}
	res, err := alice.Commit()
	if err != nil {
		b.Fatal(err)
	}
	_, welcome := wire(b, res)
	alice = res.Next
	if bob, err = Join(welcome, kpBob.JoinConfig()); err != nil {
		b.Fatal(err)
	}
	rm := gw.propose(alice, &Proposal{Type: ProposalRemove, Removed: 24})
	mustProcess(b, alice, rm)
	mustProcess(b, bob, rm)
	return alice, bob
}

// BenchmarkCommitWithPathCreate25 measures creating a Remove commit (with
// an UpdatePath) in a 25-member group.
func BenchmarkCommitWithPathCreate25(b *testing.B) {
	alice, _ := groupOf25(b)
	for b.Loop() {
		if _, err := alice.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCommitWithPathProcess25 measures processing another member's
// Remove commit (with an UpdatePath) in a 25-member group.
func BenchmarkCommitWithPathProcess25(b *testing.B) {
	alice, bob := groupOf25(b)
	res, err := alice.Commit()
	if err != nil {
		b.Fatal(err)
	}
	commit, _ := wire(b, res)
	for b.Loop() {
		if _, err := bob.ProcessCommit(commit); err != nil {
			b.Fatal(err)
		}
	}
}
