package dave

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/crypto/scrypt"
)

// DisplayableCode renders data as groups of decimal digits: each group of
// groupSize bytes, read big-endian, is reduced mod 10^groupSize and
// zero-padded. length must be a positive multiple of groupSize (≤ 8) and data must
// hold at least length bytes.
func DisplayableCode(data []byte, length, groupSize int) (string, error) {
	if groupSize < 1 || groupSize > 8 || length < 1 || length%groupSize != 0 || len(data) < length {
		return "", fmt.Errorf("dave: displayable code of %d digits in groups of %d from %d bytes", length, groupSize, len(data))
	}
	mod := uint64(1)
	for range groupSize {
		mod *= 10
	}
	var b strings.Builder
	for i := 0; i < length; i += groupSize {
		var v uint64
		for _, c := range data[i : i+groupSize] {
			v = v<<8 | uint64(c)
		}
		fmt.Fprintf(&b, "%0*d", groupSize, v%mod)
	}
	return b.String(), nil
}

// Pairwise fingerprint parameters (version 0).
var fingerprintSalt = []byte{0x24, 0xca, 0xb1, 0x7a, 0x7a, 0xf8, 0xec, 0x2b, 0x82, 0xb4, 0x12, 0xb9, 0x2d, 0xab, 0x19, 0x2e}

const (
	fingerprintN   = 16384
	fingerprintR   = 8
	fingerprintP   = 2
	fingerprintLen = 64
)

// PairwiseFingerprint computes the version-0 fingerprint of two users'
// signature public keys: each side is BE16(0) || key || BE64(user id); the
// two are sorted bytewise, concatenated and stretched with scrypt.
func PairwiseFingerprint(key1 []byte, user1 uint64, key2 []byte, user2 uint64) ([]byte, error) {
	if len(key1) == 0 || len(key2) == 0 {
		return nil, fmt.Errorf("dave: fingerprint of an empty signature key (%d and %d bytes)", len(key1), len(key2))
	}
	a := fingerprintInput(key1, user1)
	b := fingerprintInput(key2, user2)
	if bytes.Compare(a, b) > 0 {
		a, b = b, a
	}
	fp, err := scrypt.Key(append(a, b...), fingerprintSalt, fingerprintN, fingerprintR, fingerprintP, fingerprintLen)
	if err != nil {
		return nil, fmt.Errorf("dave: fingerprint: %w", err)
	}
	return fp, nil
}

func fingerprintInput(key []byte, user uint64) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = append(b, key...)
	return binary.BigEndian.AppendUint64(b, user)
}

// VerificationCode renders a pairwise fingerprint as 45 digits.
func VerificationCode(fingerprint []byte) (string, error) {
	return DisplayableCode(fingerprint, 45, 5)
}
