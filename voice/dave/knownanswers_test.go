package dave

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

// Known answers published with libdave (discord/libdave, js/__tests__ and
// cpp/test/codec_utils_tests.cpp), typed in here.

func TestDisplayableCodeKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		name          string
		data          string // hex
		length, group int
		want          string // "" = must fail
	}{
		{"five bytes, one group", "aabbccddee", 5, 5, "05870"},
		{"thirty bytes, six groups", "aabbccddeebbccddeeffccddeeffaaddeeffaabbeeffaabbccffaabbccdd", 30, 5, "058708105556138052119572494877"},
		{"too few bytes", "aabbccdd", 5, 5, ""},
		{"length not a multiple of the group", "aabbccdd", 4, 3, ""},
		{"group too large", strings.Repeat("00", 1024), 1024, 11, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := hex.DecodeString(tc.data)
			got, err := DisplayableCode(data, tc.length, tc.group)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("accepted: %q", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// libdave's key fingerprint is BE16(version) || key || BE64(user id); its
// tests print the bytes as decimals joined.
func TestFingerprintInputKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		keyLen int
		user   uint64
		want   string
	}{
		{33, 1234, "000000000000000000000000000000000000000004210"},
		{65, 12345678, "0000000000000000000000000000000000000000000000000000000000000000000000001889778"},
	} {
		var b strings.Builder
		for _, c := range fingerprintInput(make([]byte, tc.keyLen), tc.user) {
			b.WriteString(itoa(int(c)))
		}
		if b.String() != tc.want {
			t.Fatalf("key of %d bytes, user %d: %s, want %s", tc.keyLen, tc.user, b.String(), tc.want)
		}
	}
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var d []byte
	for ; v > 0; v /= 10 {
		d = append([]byte{byte('0' + v%10)}, d...)
	}
	return string(d)
}

func TestPairwiseFingerprintKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		name         string
		key1         []byte
		user1        uint64
		key2         []byte
		user2        uint64
		want         []byte
		wantRejected bool
	}{
		{"zero keys of 33 and 65 bytes", make([]byte, 33), 1234, make([]byte, 65), 5678, []byte{
			133, 129, 241, 44, 36, 135, 79, 195, 27, 28, 151, 69, 124, 197, 189, 41, 192, 7, 16, 45, 79, 247, 138, 58, 126,
			161, 178, 136, 12, 109, 96, 164, 169, 92, 2, 232, 136, 174, 74, 156, 173, 144, 191, 184, 34, 45, 242, 136, 41,
			133, 14, 158, 119, 79, 204, 48, 6, 220, 121, 6, 242, 11, 164, 60}, false},
		{"inputs sorted as bytes, not by user", []byte{0, 100}, 1, []byte{0, 20}, 2, []byte{
			141, 169, 194, 143, 22, 72, 22, 245, 13, 140, 66, 228, 159, 195, 101, 106, 119, 240, 69, 191, 178, 227, 194,
			126, 162, 255, 222, 148, 138, 5, 33, 215, 240, 167, 234, 245, 149, 182, 46, 20, 4, 83, 191, 31, 165, 74, 253,
			165, 199, 16, 29, 71, 193, 205, 169, 154, 255, 154, 34, 30, 94, 171, 247, 43}, false},
		{"an empty key", nil, 1234, make([]byte, 33), 5678, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PairwiseFingerprint(tc.key1, tc.user1, tc.key2, tc.user2)
			if tc.wantRejected {
				if err == nil {
					t.Fatalf("accepted: %x", got)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			// Either order of the two users gives the same fingerprint.
			if swapped, err := PairwiseFingerprint(tc.key2, tc.user2, tc.key1, tc.user1); err != nil || !bytes.Equal(swapped, got) {
				t.Fatalf("swapped users: %x, %v", swapped, err)
			}
		})
	}
}

// libdave's SplitReconstruct: a 76-byte frame with four unencrypted ranges
// of 10 bytes (at 0, 20, 40 and 60), nonce 0, a zero tag. Parsing splits
// it into range bytes and the rest; putting them back rebuilds the frame.
func TestFrameSplitKnownAnswer(t *testing.T) {
	const body = "0dc5aedd5bdc3f20be5697e54dd1f437b896a36f858c6f20bbd69e2a493ca170c4f0c1b9acd4" +
		"9d324b92afa788d09b12b29115a2feb3552b60fff983234a6c9608af3933683efc6b0f5579a9"
	frame, err := hex.DecodeString(body + "0000000000000000" + "00" + "000a140a280a3c0a" + "14" + "fafa")
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseFrame(frame)
	if err != nil {
		t.Fatalf("libdave's frame is not a protocol frame here: %v", err)
	}
	want := []Range{{0, 10}, {20, 10}, {40, 10}, {60, 10}}
	if len(p.body) != 76 || p.nonce != 0 || len(p.ranges) != len(want) {
		t.Fatalf("body %d bytes, nonce %d, ranges %v", len(p.body), p.nonce, p.ranges)
	}
	for i := range want {
		if p.ranges[i] != want[i] {
			t.Fatalf("ranges %v, want %v", p.ranges, want)
		}
	}
	if !bytes.Equal(p.tag, make([]byte, TagSize)) {
		t.Fatalf("tag %x", p.tag)
	}
	aad, rest := split(p.body, p.ranges)
	if len(aad) != 40 || len(rest) != 36 {
		t.Fatalf("split into %d range bytes and %d others, want 40 and 36", len(aad), len(rest))
	}
	raw, _ := hex.DecodeString(body)
	if !bytes.Equal(aad[:10], raw[:10]) || !bytes.Equal(aad[10:20], raw[20:30]) || !bytes.Equal(rest[:10], raw[10:20]) {
		t.Fatal("range bytes and others taken from the wrong places")
	}
	if got := interleave(nil, p.ranges, aad, rest); !bytes.Equal(got, raw) {
		t.Fatalf("reconstructed %x, want %x", got, raw)
	}
}

// libdave's RandomOpusFrame: an Opus frame is encrypted whole, no
// unencrypted range; the protected frame is 76 + 8 (tag) + nonce + 1 + 2
// bytes and opens again.
func TestOpusFrameEncryptedWhole(t *testing.T) {
	frame, _ := hex.DecodeString("0dc5aedd5bdc3f20be5697e54dd1f437b896a36f858c6f20bbd69e2a493ca170c4f0c1b9acd4" +
		"9d324b92afa788d09b12b29115a2feb3552b60fff983234a6c9608af3933683efc6b0f5579a9")
	key := bytes.Repeat([]byte{7}, 16)
	out, err := EncryptFrame(key, 1, frame)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parseFrame(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 76+TagSize+1+1+2 || len(p.ranges) != 0 || bytes.Contains(out, frame[:16]) {
		t.Fatalf("protected frame of %d bytes with ranges %v", len(out), p.ranges)
	}
	back, n, err := DecryptFrame(key, out)
	if err != nil || n != 1 || !bytes.Equal(back, frame) {
		t.Fatalf("decrypt: %v, nonce %d", err, n)
	}
}
