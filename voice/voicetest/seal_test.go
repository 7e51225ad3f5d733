package voicetest

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/rtp"
)

// TestSealForSkipsACounterThatReadsAsAnExtension (issue 29, FRAMELOSS):
// the relay never hands a receiver a packet without a header extension
// whose first ciphertext bytes read BE DE, which discord.js takes for an
// extension profile; a packet whose header really has an extension keeps
// its counter.
func TestSealForSkipsACounterThatReadsAsAnExtension(t *testing.T) {
	payload := []byte{0xF8, 0xFF, 0xFE}
	for _, mode := range []string{rtp.ModeAES256GCM, rtp.ModeXChaCha20} {
		t.Run(mode, func(t *testing.T) {
			ciph, err := rtp.NewCipher(mode, bytes.Repeat([]byte{7}, 32))
			if err != nil {
				t.Fatal(err)
			}
			ph := rtp.Header{PayloadType: rtp.PayloadTypeOpus, SSRC: 1001}
			plain, err := ph.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			var bad uint32
			for ctr := uint32(1); bad == 0; ctr++ {
				if ctr > 1<<24 {
					t.Fatal("no counter makes the payload read BE DE")
				}
				if p := ciph.Seal(nil, plain, payload, ctr); p[12] == 0xBE && p[13] == 0xDE {
					bad = ctr
				}
			}
			for _, tc := range []struct {
				name        string
				header      []byte
				wantCounter uint32
				resealed    int64
			}{
				{"no extension: the next counter", plain, bad + 1, 1},
				{"an extension: the counter kept", withExtension(t), bad, 0},
			} {
				t.Run(tc.name, func(t *testing.T) {
					s := &Server{}
					c := &client{cipher: ciph, counter: bad - 1}
					out := s.sealFor(c, tc.header, payload)
					if got := binary.BigEndian.Uint32(out[len(out)-4:]); got != tc.wantCounter {
						t.Fatalf("sealed under counter %d, want %d", got, tc.wantCounter)
					}
					if got := s.Resealed(); got != tc.resealed {
						t.Fatalf("resealed %d, want %d", got, tc.resealed)
					}
					if len(tc.header) == 12 && readsAsExtension(tc.header, out) {
						t.Fatalf("the packet reads BE DE after its header: %x", out[:16])
					}
					var h rtp.Header
					hl, err := h.Unmarshal(out)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := ciph.Open(nil, out, hl); err != nil {
						t.Fatalf("the packet does not open: %v", err)
					}
				})
			}
		})
	}
}

// withExtension is an RTP header with a one-byte-header extension preamble
// (profile 0xBEDE, one word).
func withExtension(t *testing.T) []byte {
	t.Helper()
	ph := rtp.Header{PayloadType: rtp.PayloadTypeOpus, SSRC: 1001}
	h, err := ph.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	h[0] |= 0x10
	return append(h, 0xBE, 0xDE, 0x00, 0x01)
}
