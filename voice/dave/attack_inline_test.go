package dave

import (
	"encoding/binary"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// Spec D.10: a member's commit must carry only references to proposals
// the external sender (the gateway) made, each one checked when it came
// (op 27: only Add and Remove, an Add only for a user announced by op
// 11). A hostile member (a modified client) commits with proposals by
// value instead, past every one of those checks: an Add of a user who is
// not in the call (an eavesdropper's key package), or a group context
// extensions proposal that replaces the gateway's external sender with
// its own key (from then on it proposes adds and removes as the gateway).
// The bot must refuse such a commit (op 31), not adopt it.
func TestAttackCommitWithProposalsByValue(t *testing.T) {
	sig, err := mls.GenerateSignatureKey()
	if err != nil {
		t.Fatal(err)
	}
	eve, err := mls.NewKeyPackage(sig, mls.Credential{Type: mls.CredentialBasic, Identity: binary.BigEndian.AppendUint64(nil, 666)}, daveCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		prop *mls.Proposal
	}{
		{"an add of a user never announced", &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: eve.KeyPackage}},
		{"the external sender replaced", &mls.Proposal{Type: mls.ProposalGroupContextExtensions, Extensions: []mls.Extension{
			mls.ExternalSendersExtension(mls.ExternalSender{SignatureKey: sig.Public(), Credential: mls.Credential{Type: mls.CredentialBasic, Identity: []byte("eve")}})}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, a, b := pair(t)
			res, err := a.group.CommitWith([]*mls.Proposal{tc.prop})
			if err != nil {
				t.Fatal(err)
			}
			gw.tid++
			out, err := b.HandleBinary(gateway.OpDAVEAnnounceCommit, TransitionPayload{gw.tid, res.Message.Marshal()}.Marshal())
			inv, _, _ := ops(out)
			if countReady(out, gw.tid) > 0 || inv == 0 {
				var ids []uint64
				for _, l := range b.group.Members() {
					ids = append(ids, binary.BigEndian.Uint64(l.Credential.Identity))
				}
				ext, _ := b.group.ExternalSenders()
				t.Fatalf("the bot adopted a member's commit with a proposal by value (type %d): epoch %d, members %v, external sender %q (err %v)",
					tc.prop.Type, b.group.Epoch(), ids, ext[0].Credential.Identity, err)
			}
		})
	}
}
