package rtp

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"
)

func TestHeaderRoundTrip(t *testing.T) {
	cases := []Header{
		{PayloadType: PayloadTypeOpus, Sequence: 65535, Timestamp: 0xFFFFFFFF, SSRC: 42, CSRC: []uint32{}},
		{Marker: true, PayloadType: PayloadTypeOpus, Sequence: 7, Timestamp: 960, SSRC: 1, CSRC: []uint32{9, 10}},
		{PayloadType: PayloadTypeOpus, SSRC: 5, CSRC: []uint32{}, Extension: true, ExtensionProfile: ExtensionProfileOneByte, ExtensionWords: 2, Padding: true},
	}
	for _, h := range cases {
		b, err := h.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var got Header
		n, err := got.Unmarshal(b)
		if err != nil || n != len(b) || n != h.MarshalSize() {
			t.Fatalf("unmarshal %x: n=%d err=%v", b, n, err)
		}
		if len(got.CSRC) == 0 && len(h.CSRC) == 0 {
			got.CSRC, h.CSRC = nil, nil
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("round trip: got %+v, want %+v", got, h)
		}
	}
	if b, _ := (&Header{PayloadType: PayloadTypeOpus}).Marshal(); b[0] != 0x80 || b[1] != 0x78 {
		t.Fatalf("outgoing header starts %x %x, want 80 78", b[0], b[1])
	}
	if _, err := (&Header{}).MarshalTo(make([]byte, 5)); !errors.Is(err, io.ErrShortBuffer) {
		t.Fatalf("short buffer: %v", err)
	}
}

func TestHeaderErrors(t *testing.T) {
	cases := []struct {
		name string
		buf  []byte
		want error
	}{
		{"empty", nil, errShortPacket},
		{"eleven bytes", make([]byte, 11), errShortPacket},
		{"version 1", append([]byte{0x40, 0x78}, make([]byte, 10)...), errVersion},
		{"CSRCs missing", append([]byte{0x82, 0x78}, make([]byte, 10)...), errShortPacket},
		{"extension preamble missing", append([]byte{0x90, 0x78}, make([]byte, 12)...), errShortPacket},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var h Header
			if _, err := h.Unmarshal(tc.buf); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func key() []byte {
	k := make([]byte, KeySize)
	for i := range k {
		k[i] = byte(i * 7)
	}
	return k
}

// The nonce layout is the counter, big-endian, in the first four bytes;
// check it against the primitives used directly.
func TestNonceLayoutMatchesTheDigest(t *testing.T) {
	h := Header{PayloadType: PayloadTypeOpus, Sequence: 1, Timestamp: 960, SSRC: 77}
	hb, _ := h.Marshal()
	payload := []byte("opus frame bytes")
	const counter = 0x01020304

	c, _ := NewCipher(ModeAES256GCM, key())
	got := c.Seal(nil, hb, payload, counter)
	block, _ := aes.NewCipher(key())
	gcm, _ := cipher.NewGCM(block)
	nonce := make([]byte, 12)
	binary.BigEndian.PutUint32(nonce, counter)
	want := append(append([]byte(nil), hb...), gcm.Seal(nil, nonce, payload, hb)...)
	want = append(want, 1, 2, 3, 4)
	if !bytes.Equal(got, want) {
		t.Fatalf("AES-GCM packet differs:\n got %x\nwant %x", got, want)
	}

	x, _ := NewCipher(ModeXChaCha20, key())
	got = x.Seal(nil, hb, payload, counter)
	xc, _ := chacha20poly1305.NewX(key())
	xn := make([]byte, 24)
	binary.BigEndian.PutUint32(xn, counter)
	want = append(append([]byte(nil), hb...), xc.Seal(nil, xn, payload, hb)...)
	want = append(want, 1, 2, 3, 4)
	if !bytes.Equal(got, want) {
		t.Fatalf("XChaCha20 packet differs")
	}
}

func TestSealOpen(t *testing.T) {
	for _, mode := range []string{ModeAES256GCM, ModeXChaCha20} {
		t.Run(mode, func(t *testing.T) {
			c, err := NewCipher(mode, key())
			if err != nil {
				t.Fatal(err)
			}
			// An extension body (one word) and two bytes of padding travel
			// inside the ciphertext.
			h := Header{PayloadType: PayloadTypeOpus, Sequence: 3, SSRC: 9, Extension: true,
				ExtensionProfile: ExtensionProfileOneByte, ExtensionWords: 1, Padding: true}
			hb, _ := h.Marshal()
			frame := []byte{0xFC, 0xFF, 0xFE, 0x11, 0x22}
			plain := append(append([]byte{0x10, 0xAA, 0, 0}, frame...), 0x00, 0x02)
			pkt := c.Seal(nil, hb, plain, 99)

			var got Header
			n, err := got.Unmarshal(pkt)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Open(nil, pkt, n)
			if err != nil {
				t.Fatal(err)
			}
			media, err := Payload(&got, out)
			if err != nil || !bytes.Equal(media, frame) {
				t.Fatalf("media %x, err %v", media, err)
			}
			for _, tamper := range []int{0, n, len(pkt) - 5, len(pkt) - 1} {
				bad := append([]byte(nil), pkt...)
				bad[tamper] ^= 1
				if _, err := c.Open(nil, bad, n); !errors.Is(err, ErrAuth) {
					t.Fatalf("tampered byte %d: %v", tamper, err)
				}
			}
			other, _ := NewCipher(mode, make([]byte, KeySize))
			if _, err := other.Open(nil, pkt, n); !errors.Is(err, ErrAuth) {
				t.Fatalf("wrong key: %v", err)
			}
			if _, err := c.Open(nil, pkt[:n+10], n); !errors.Is(err, errShortPacket) {
				t.Fatalf("truncated: %v", err)
			}
		})
	}
}

func TestChooseMode(t *testing.T) {
	cases := []struct {
		offered []string
		want    string
		err     bool
	}{
		{[]string{ModeXChaCha20, ModeAES256GCM}, ModeAES256GCM, false},
		{[]string{ModeXChaCha20}, ModeXChaCha20, false},
		{[]string{"xsalsa20_poly1305"}, "", true},
	}
	for _, tc := range cases {
		got, err := ChooseMode(tc.offered)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%v: %q, %v", tc.offered, got, err)
		}
	}
	if _, err := NewCipher(ModeAES256GCM, make([]byte, 16)); err == nil {
		t.Error("accepted a 16-byte key")
	}
}

func TestPayloadErrors(t *testing.T) {
	if _, err := Payload(&Header{Extension: true, ExtensionWords: 3}, make([]byte, 8)); err == nil {
		t.Error("extension longer than the payload")
	}
	if _, err := Payload(&Header{Padding: true}, []byte{1, 9}); err == nil {
		t.Error("padding longer than the payload")
	}
	if _, err := Payload(&Header{Padding: true}, []byte{1, 0}); err == nil {
		t.Error("zero padding")
	}
}

func FuzzOpen(f *testing.F) {
	c, _ := NewCipher(ModeAES256GCM, key())
	h := Header{PayloadType: PayloadTypeOpus, Sequence: 1, SSRC: 2}
	hb, _ := h.Marshal()
	f.Add(c.Seal(nil, hb, []byte("frame"), 1))
	f.Add([]byte{0x90, 0x78, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2, 0xBE, 0xDE, 0xFF, 0xFF})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		var h Header
		n, err := h.Unmarshal(pkt)
		if err != nil {
			return
		}
		if n > len(pkt) {
			t.Fatalf("header length %d beyond a %d-byte packet", n, len(pkt))
		}
		plain, err := c.Open(nil, pkt, n)
		if err != nil {
			return
		}
		Payload(&h, plain)
	})
}

func BenchmarkSealOpen(b *testing.B) {
	for _, mode := range []string{ModeAES256GCM, ModeXChaCha20} {
		b.Run(mode, func(b *testing.B) {
			c, _ := NewCipher(mode, key())
			h := Header{PayloadType: PayloadTypeOpus, SSRC: 1}
			hb, _ := h.Marshal()
			frame := make([]byte, 120)
			buf := make([]byte, 0, 256)
			out := make([]byte, 0, 256)
			var rh Header
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for i := 0; b.Loop(); i++ {
				pkt := c.Seal(buf[:0], hb, frame, uint32(i))
				n, _ := rh.Unmarshal(pkt)
				if _, err := c.Open(out[:0], pkt, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
