package dave

import (
	"bytes"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// seedGroup returns a Go session with a pending group and some valid
// binary payloads for it.
func seedGroup(f *testing.F) (*fakeGateway, [][]byte) {
	gw := newFakeGateway(f)
	a := gw.connect(1)
	gw.connect(2)
	m := gw.proposal(a, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})
	add := (&ProposalsPayload{Operation: ProposalsAppend, Messages: []*mls.MLSMessage{m}}).Marshal()
	revoke := (&ProposalsPayload{Operation: ProposalsRevoke, Refs: [][]byte{mls.ProposalRef(m.PublicMessage)}}).Marshal()
	out, err := a.HandleBinary(gateway.OpDAVEProposals, add)
	if err != nil || len(out) != 1 {
		f.Fatalf("seed commit: %v", err)
	}
	return gw, [][]byte{add, revoke, out[0].Binary, gw.sender.Marshal()}
}

func FuzzParseProposals(f *testing.F) {
	_, seeds := seedGroup(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProposals(b)
		if err != nil {
			return
		}
		if out := p.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("round trip differs")
		}
	})
}

func FuzzParseCommitWelcome(f *testing.F) {
	_, seeds := seedGroup(f)
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCommitWelcome(b)
		if err != nil {
			return
		}
		if out := c.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("round trip differs")
		}
	})
}

// FuzzSessionBinary feeds arbitrary payloads for every binary opcode to a
// session holding a pending group: errors are fine, panics are not.
func FuzzSessionBinary(f *testing.F) {
	_, seeds := seedGroup(f)
	for _, s := range seeds {
		for op := gateway.OpDAVEExternalSender; op <= gateway.OpDAVEWelcome; op++ {
			f.Add(uint8(op), s)
		}
		f.Add(uint8(gateway.OpDAVEAnnounceCommit), append([]byte{0, 1}, s...))
		f.Add(uint8(gateway.OpDAVEWelcome), append([]byte{0, 1}, s...))
	}
	f.Fuzz(func(t *testing.T, op uint8, b []byte) {
		s, err := NewSession(1, testChannel, WithClock(fixedNow))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SessionDescription(1); err != nil {
			t.Fatal(err)
		}
		ext := mls.ExternalSender{SignatureKey: bytes.Repeat([]byte{4}, 65), Credential: mls.Credential{Type: mls.CredentialBasic, Identity: []byte{1}}}
		if _, err := s.HandleBinary(gateway.OpDAVEExternalSender, ext.Marshal()); err != nil {
			t.Fatal(err)
		}
		_, _ = s.HandleBinary(gateway.Op(op), b)
		_, _ = s.Decrypt(2, b)
	})
}
