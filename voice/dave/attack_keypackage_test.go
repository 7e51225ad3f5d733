package dave

import (
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// A joining peer's key package that another member would refuse must not
// be committed by the bot: the gateway takes any commit that covers every
// proposal, and a commit adding a leaf the other members reject (RFC 9420
// §12.2, §7.2: the new leaf must support the group's protocol version and
// cipher suite, and list its own credential type) makes every one of them
// refuse the epoch and ask to be re-added, over and over while the peer
// keeps joining. The key packages are validly signed by the peer; only
// their capabilities are wrong.
func TestAttackKeyPackageWithoutTheGroupsCapabilities(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps mls.Capabilities
	}{
		{"cipher suite 2 not supported", mls.Capabilities{Versions: []uint16{1}, CipherSuites: []uint16{1}, Credentials: []uint16{mls.CredentialBasic}}},
		{"MLS 1.0 not supported", mls.Capabilities{Versions: []uint16{2}, CipherSuites: []uint16{mls.CipherSuite2}, Credentials: []uint16{mls.CredentialBasic}}},
		{"its own credential type not listed", mls.Capabilities{Versions: []uint16{1}, CipherSuites: []uint16{mls.CipherSuite2}, Credentials: []uint16{2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, a, _ := pair(t)
			sig, err := mls.GenerateSignatureKey()
			if err != nil {
				t.Fatal(err)
			}
			kp, err := mls.NewKeyPackage(sig, mls.Credential{Type: mls.CredentialBasic, Identity: binary.BigEndian.AppendUint64(nil, 3)}, tc.caps)
			if err != nil {
				t.Fatal(err)
			}
			gw.jsonOp(a, gateway.OpClientsConnect, map[string][]string{"user_ids": {"3"}})
			payload := (&ProposalsPayload{Operation: ProposalsAppend, Messages: []*mls.MLSMessage{
				gw.proposal(a, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: kp.KeyPackage}),
			}}).Marshal()
			out, err := a.HandleBinary(gateway.OpDAVEProposals, payload)
			for _, o := range out {
				if o.Op == gateway.OpDAVECommitWelcome {
					t.Fatalf("the bot committed the add of a key package with capabilities %+v (err %v)", tc.caps, err)
				}
			}
			t.Logf("refused: %v", err)
		})
	}
}

// The same key packages with davey (openmls) beside the bot: davey
// refuses the proposal or the bot's commit that adds the leaf, so a call
// with the bot and a davey member splits as soon as such a peer asks to
// join (if the bot's commit wins, davey cannot follow it).
func TestAttackKeyPackageWithoutTheGroupsCapabilitiesSplitsTheCallWithDavey(t *testing.T) {
	peer := startDavey(t)
	for i, caps := range []mls.Capabilities{
		{Versions: []uint16{1}, CipherSuites: []uint16{1}, Credentials: []uint16{mls.CredentialBasic}},
		{Versions: []uint16{1}, CipherSuites: []uint16{mls.CipherSuite2}, Credentials: []uint16{2}},
	} {
		x := newInterop(t, peer, 700+uint64(i))
		a, d := x.join(1, false), x.join(2, true)
		x.announce(x.commitFrom(a, &ProposalsPayload{Operation: ProposalsAppend, Messages: x.propose(0, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: x.gw.kps[2]})}), []*member{a}, []*member{d})
		x.check(a, d)

		sig, err := mls.GenerateSignatureKey()
		if err != nil {
			t.Fatal(err)
		}
		kp, err := mls.NewKeyPackage(sig, mls.Credential{Type: mls.CredentialBasic, Identity: binary.BigEndian.AppendUint64(nil, 3)}, caps)
		if err != nil {
			t.Fatal(err)
		}
		x.gw.jsonOp(a.goS, gateway.OpClientsConnect, map[string][]string{"user_ids": {"3"}})
		payload := &ProposalsPayload{Operation: ProposalsAppend, Messages: x.propose(1, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: kp.KeyPackage})}
		raw := payload.Marshal()
		dr, derr := peer.Call(map[string]any{"cmd": "proposals", "s": d.davey, "op": payload.Operation, "hex": hexOf(raw[1:]), "recognized": []string{"1", "2", "3"}})
		out, err := a.goS.HandleBinary(gateway.OpDAVEProposals, raw)
		var botCommit *CommitWelcome
		for _, o := range out {
			if o.Op == gateway.OpDAVECommitWelcome {
				if botCommit, err = ParseCommitWelcome(o.Binary); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("capabilities %+v: davey's answer to the proposal: commit %v, err %v %q; the bot: commit %v, err %v", caps, dr.Commit != "", derr, dr.Error, botCommit != nil, err)
		if botCommit == nil {
			continue
		}
		if _, err := peer.Call(map[string]any{"cmd": "commit", "s": d.davey, "hex": hexOf(botCommit.Commit.Marshal())}); err != nil {
			t.Errorf("capabilities %+v: the bot committed the add; davey refuses that commit: %v", caps, err)
		}
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }
