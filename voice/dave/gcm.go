package dave

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// TagSize is the length of DAVE's truncated AES-GCM tag.
const TagSize = 8

const gcmNonceSize = 12

// ErrAuth is returned when a frame fails authentication.
var ErrAuth = errors.New("dave: frame authentication failed")

// frameCipher is AES-128-GCM with the tag truncated to 8 bytes. Go's GCM
// refuses tags shorter than 12 bytes, so sealing keeps the first 8 bytes of
// the full tag, and opening recovers the plaintext with GCM's counter mode
// (counter blocks nonce || BE32(i) from i = 2, the 32-bit increment of
// NIST SP 800-38D), recomputes the full tag by sealing that plaintext
// again, and compares the first 8 bytes in constant time before releasing
// anything. A frameCipher is not safe for concurrent use (it keeps a
// scratch buffer); Session serialises access.
type frameCipher struct {
	block   cipher.Block
	gcm     cipher.AEAD
	scratch []byte
	// Per-call buffers kept here so they do not escape to the heap
	// through the cipher interfaces on every frame.
	nonce   [gcmNonceSize]byte
	ctr, ks [16]byte
}

func newFrameCipher(key []byte) (*frameCipher, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("dave: media key of %d bytes: %w", len(key), err)
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		return nil, fmt.Errorf("dave: GCM: %w", err)
	}
	return &frameCipher{block: b, gcm: g}, nil
}

// seal appends ciphertext and the truncated tag of plaintext to dst.
func (c *frameCipher) seal(dst []byte, nonce [gcmNonceSize]byte, plaintext, aad []byte) []byte {
	n := len(dst)
	c.nonce = nonce
	dst = c.gcm.Seal(dst, c.nonce[:], plaintext, aad)
	return dst[:n+len(plaintext)+TagSize]
}

// open decrypts ciphertext with its truncated tag, appending the
// plaintext to dst only if the tag matches.
func (c *frameCipher) open(dst []byte, nonce [gcmNonceSize]byte, ciphertext, tag, aad []byte) ([]byte, error) {
	if len(tag) != TagSize {
		return nil, fmt.Errorf("dave: tag of %d bytes", len(tag))
	}
	n := len(dst)
	dst = slices.Grow(dst, len(ciphertext))[:n+len(ciphertext)]
	pt := dst[n:]
	copy(c.ctr[:], nonce[:])
	counter := uint32(2)
	for off := 0; off < len(ciphertext); off += 16 {
		binary.BigEndian.PutUint32(c.ctr[12:], counter)
		counter++
		c.block.Encrypt(c.ks[:], c.ctr[:])
		subtle.XORBytes(pt[off:], ciphertext[off:], c.ks[:])
	}
	c.nonce = nonce
	c.scratch = c.gcm.Seal(c.scratch[:0], c.nonce[:], pt, aad)
	if subtle.ConstantTimeCompare(c.scratch[len(pt):len(pt)+TagSize], tag) != 1 {
		clear(pt)
		return nil, ErrAuth
	}
	return dst, nil
}
