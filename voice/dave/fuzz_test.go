package dave

import (
	"bytes"
	"strings"
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

// FuzzParseFrame checks the protocol-frame parser: no panic, and a frame
// it accepts splits into range bytes and others that interleave back into
// its body. Seeds have the shapes of libdave's test frames (written here):
// ranges, several nonce widths, Opus frames encrypted whole.
func FuzzParseFrame(f *testing.F) {
	body := bytes.Repeat([]byte{0x5a, 0xc3, 0x11}, 26)[:76]
	tail := func(nonce []byte, ranges []byte) []byte {
		t := append(make([]byte, TagSize), nonce...)
		t = append(t, ranges...)
		return append(t, byte(len(t)+3), 0xfa, 0xfa)
	}
	f.Add(append(bytes.Clone(body), tail([]byte{0}, []byte{0, 10, 20, 10, 40, 10, 60, 10})...))
	f.Add(append(bytes.Clone(body), tail([]byte{0x81, 0x01}, []byte{0, 1})...))
	f.Add(append(bytes.Clone(body), tail([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, nil)...))
	f.Add(append(bytes.Clone(body), tail([]byte{1}, []byte{70, 6})...))
	f.Add(append(bytes.Clone(body), tail([]byte{1}, []byte{10, 5, 5, 5})...)) // out of order
	f.Add(append(bytes.Clone(body), tail([]byte{1}, []byte{0, 77})...))       // past the body
	f.Add(tail([]byte{1}, nil))
	if enc, err := EncryptFrame(bytes.Repeat([]byte{7}, 16), 0x01020304, body); err == nil {
		f.Add(enc)
	}
	f.Add([]byte{0xf8, 0xff, 0xfe})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseFrame(b)
		if err != nil {
			return
		}
		aad, rest := split(p.body, p.ranges)
		if got := interleave(nil, p.ranges, aad, rest); !bytes.Equal(got, p.body) {
			t.Fatalf("split and interleave changed the body: %x → %x", p.body, got)
		}
	})
}

// FuzzDisplayableCode: any data, length and group size give a code of
// exactly length digits or an error, never a panic.
func FuzzDisplayableCode(f *testing.F) {
	f.Add([]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee}, 5, 5)
	f.Add(bytes.Repeat([]byte{0xab}, 32), 30, 5)
	f.Add(bytes.Repeat([]byte{0xff}, 64), 45, 5)
	f.Add([]byte{1, 2, 3, 4}, 4, 3)
	f.Add(make([]byte, 16), 16, 8)
	f.Add([]byte{}, 0, 1)
	f.Add([]byte{9}, -5, 0)
	f.Fuzz(func(t *testing.T, data []byte, length, group int) {
		code, err := DisplayableCode(data, length, group)
		if err != nil {
			return
		}
		if len(code) != length || strings.Trim(code, "0123456789") != "" {
			t.Fatalf("code %q for length %d", code, length)
		}
	})
}
