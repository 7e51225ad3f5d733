package dave

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"testing"
)

func testKey() []byte { return bytes.Repeat([]byte{7}, 16) }

func TestFrameRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 41, 120, 1500} {
		frame := make([]byte, n)
		rand.Read(frame)
		for _, nonce := range []uint32{1, 127, 128, 1 << 24, 0xFFFFFFFF} {
			enc, err := EncryptFrame(testKey(), nonce, frame)
			if err != nil {
				t.Fatal(err)
			}
			if want := n + TagSize + len(appendULEB128(nil, uint64(nonce))) + 3; len(enc) != want {
				t.Fatalf("%d-byte frame: %d bytes protected, want %d", n, len(enc), want)
			}
			dec, gotNonce, err := DecryptFrame(testKey(), enc)
			if err != nil || gotNonce != nonce || !bytes.Equal(dec, frame) {
				t.Fatalf("%d-byte frame nonce %d: %v", n, nonce, err)
			}
		}
	}
}

func TestFrameLayout(t *testing.T) {
	enc, err := EncryptFrame(testKey(), 1, make([]byte, 41))
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) != 53 || !bytes.Equal(enc[len(enc)-4:], []byte{0x01, 0x0c, 0xfa, 0xfa}) {
		t.Fatalf("41-byte Opus frame → %d bytes ending %x; want 53 ending 010cfafa", len(enc), enc[len(enc)-4:])
	}
}

// The truncated tag must be the first 8 bytes of the standard GCM tag with
// the nonce 00×8 || LE32(n).
func TestTruncatedTagMatchesGCM(t *testing.T) {
	b, _ := aes.NewCipher(testKey())
	g, _ := cipher.NewGCM(b)
	frame := []byte("an opus frame of some length......")
	nonce := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0x78, 0x56, 0x34, 0x12}
	full := g.Seal(nil, nonce, frame, nil)
	enc, err := EncryptFrame(testKey(), 0x12345678, frame)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc[:len(frame)+TagSize], full[:len(frame)+TagSize]) {
		t.Fatal("ciphertext or tag differs from AES-GCM")
	}
}

func TestFrameRanges(t *testing.T) {
	c, _ := newFrameCipher(testKey())
	frame := []byte("0123456789abcdefghij")
	ranges := []Range{{0, 2}, {5, 3}, {19, 1}}
	enc, err := encryptFrame(nil, c, 9, frame, ranges)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc[:2], frame[:2]) || !bytes.Equal(enc[5:8], frame[5:8]) {
		t.Fatal("unencrypted ranges were changed")
	}
	p, err := parseFrame(enc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decryptFrame(nil, c, p)
	if err != nil || !bytes.Equal(out, frame) {
		t.Fatalf("ranges round trip: %v %q", err, out)
	}
	enc[6] ^= 1 // range bytes are authenticated
	p, _ = parseFrame(enc)
	if _, err := decryptFrame(nil, c, p); !errors.Is(err, ErrAuth) {
		t.Fatalf("tampered range: %v", err)
	}
	if _, err := encryptFrame(nil, c, 1, frame, []Range{{5, 3}, {0, 2}}); err == nil {
		t.Fatal("unordered ranges accepted")
	}
}

func TestFrameRejects(t *testing.T) {
	good, _ := EncryptFrame(testKey(), 300, []byte("hello opus"))
	tampered := bytes.Clone(good)
	tampered[0] ^= 0x80
	badTag := bytes.Clone(good)
	badTag[len("hello opus")] ^= 1
	for name, c := range map[string]struct {
		frame []byte
		want  error
	}{
		"short":          {[]byte{1, 2, 0xfa, 0xfa}, ErrNotProtocolFrame},
		"no marker":      {append(bytes.Clone(good[:len(good)-1]), 0xfb), ErrNotProtocolFrame},
		"size too big":   {append(append(bytes.Clone(good[:len(good)-3]), 200), 0xfa, 0xfa), ErrNotProtocolFrame},
		"size too small": {append(append(bytes.Clone(good[:len(good)-3]), 5), 0xfa, 0xfa), ErrNotProtocolFrame},
		"ciphertext":     {tampered, ErrAuth},
		"tag":            {badTag, ErrAuth},
		"plain opus":     {[]byte{0x78, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, ErrNotProtocolFrame},
	} {
		if _, _, err := DecryptFrame(testKey(), c.frame); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, _, err := DecryptFrame(bytes.Repeat([]byte{8}, 16), good); !errors.Is(err, ErrAuth) {
		t.Errorf("wrong key: %v", err)
	}
}

func TestULEB128(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 1<<32 - 1, 1<<64 - 1} {
		b := appendULEB128(nil, v)
		got, n := readULEB128(b)
		if got != v || n != len(b) {
			t.Errorf("%d: decoded %d (%d of %d bytes)", v, got, n, len(b))
		}
	}
	if _, n := readULEB128([]byte{0x80, 0x80}); n != 0 {
		t.Error("unterminated ULEB128 accepted")
	}
}

func TestDisplayableCode(t *testing.T) {
	code, err := DisplayableCode(bytes.Repeat([]byte{0xAB}, 32), 30, 5)
	if err != nil || code != "621556215562155621556215562155" {
		t.Fatalf("code %q, %v", code, err)
	}
	if _, err := DisplayableCode(make([]byte, 4), 30, 5); err == nil {
		t.Fatal("short data accepted")
	}
}

func FuzzDecryptFrame(f *testing.F) {
	good, _ := EncryptFrame(testKey(), 300, []byte("hello opus"))
	c, _ := newFrameCipher(testKey())
	ranged, _ := encryptFrame(nil, c, 5, []byte("0123456789"), []Range{{1, 2}, {6, 1}})
	f.Add(good)
	f.Add(ranged)
	f.Add([]byte{0xF8, 0xFF, 0xFE})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseFrame(b)
		if err != nil {
			return
		}
		if len(p.tag) != TagSize {
			t.Fatal("bad tag slice")
		}
		out, err := decryptFrame(nil, c, p)
		if err == nil && len(out) != len(p.body) {
			t.Fatalf("plaintext of %d bytes from %d-byte body", len(out), len(p.body))
		}
	})
}

func BenchmarkFrameEncryptDecrypt(b *testing.B) {
	frame := make([]byte, 120)
	rand.Read(frame)
	base := bytes.Repeat([]byte{3}, 16)
	s := &sendState{keys: newKeyRatchet(base)}
	r := newRecvState(base)
	now := fixedNow()
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		enc, err := s.encrypt(frame, now)
		if err != nil {
			b.Fatal(err)
		}
		p, err := parseFrame(enc)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.decrypt(p, now); err != nil {
			b.Fatal(err)
		}
	}
	perSec := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(perSec, "frames/s")
	b.ReportMetric(perSec/50, "x-realtime")
}
