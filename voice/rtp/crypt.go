package rtp

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// Transport encryption modes Discord offers.
const (
	ModeAES256GCM = "aead_aes256_gcm_rtpsize"
	ModeXChaCha20 = "aead_xchacha20_poly1305_rtpsize"
)

// KeySize is the length of the session description's secret_key.
const KeySize = 32

const (
	tagLen     = 16
	counterLen = 4
)

var (
	errUnsupportedMode = errors.New("rtp: unsupported encryption mode")
	// ErrAuth is returned for a packet whose tag does not verify.
	ErrAuth = errors.New("rtp: packet authentication failed")
)

// ChooseMode picks the transport mode from those the server offers:
// AES-256-GCM when offered, else XChaCha20-Poly1305 (which Discord always
// offers). It fails when neither is.
func ChooseMode(offered []string) (string, error) {
	has := map[string]bool{}
	for _, m := range offered {
		has[m] = true
	}
	switch {
	case has[ModeAES256GCM]:
		return ModeAES256GCM, nil
	case has[ModeXChaCha20]:
		return ModeXChaCha20, nil
	}
	return "", fmt.Errorf("%w: the server offers %v, glyphoxa speaks %s and %s", errUnsupportedMode, offered, ModeAES256GCM, ModeXChaCha20)
}

// Cipher seals and opens packets in one rtpsize mode with one key. It is
// safe for concurrent use; the nonce counter is the caller's (one per
// sender).
type Cipher struct {
	aead  cipher.AEAD
	mode  string
	nonce int // AEAD nonce size
}

// NewCipher returns a cipher for mode with the 32-byte secret key; the key
// is copied.
func NewCipher(mode string, key []byte) (*Cipher, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("rtp: secret key of %d bytes, want %d", len(key), KeySize)
	}
	k := append([]byte(nil), key...)
	var a cipher.AEAD
	var err error
	switch mode {
	case ModeAES256GCM:
		var b cipher.Block
		if b, err = aes.NewCipher(k); err == nil {
			a, err = cipher.NewGCM(b)
		}
	case ModeXChaCha20:
		a, err = chacha20poly1305.NewX(k)
	default:
		return nil, fmt.Errorf("%w: %q", errUnsupportedMode, mode)
	}
	if err != nil {
		return nil, fmt.Errorf("rtp: %s: %w", mode, err)
	}
	return &Cipher{aead: a, mode: mode, nonce: a.NonceSize()}, nil
}

// Mode is the cipher's mode name.
func (c *Cipher) Mode() string { return c.mode }

// Overhead is what sealing adds to a packet: the tag and the counter.
func (c *Cipher) Overhead() int { return tagLen + counterLen }

// nonceFor writes the counter, big-endian, at the start of a zeroed nonce.
// The nonce never repeats for a key because each sender's counter only
// increases and wraps only after 2^32 packets (over two years of audio).
func (c *Cipher) nonceFor(buf []byte, counter uint32) []byte {
	n := buf[:c.nonce]
	clear(n)
	binary.BigEndian.PutUint32(n, counter)
	return n
}

// Seal appends to dst a packet made of header (the additional data, as
// MarshalTo wrote it), the encrypted payload, the tag and the counter.
func (c *Cipher) Seal(dst, header, payload []byte, counter uint32) []byte {
	var nb [24]byte
	nonce := c.nonceFor(nb[:], counter)
	dst = append(dst, header...)
	dst = c.aead.Seal(dst, nonce, payload, header)
	return binary.BigEndian.AppendUint32(dst, counter)
}

// Open authenticates and decrypts a packet whose header is headerLen bytes
// long (from Header.Unmarshal), appending the plaintext to dst. The
// plaintext still holds the extension body, if the header announced one,
// and padding; see Payload.
func (c *Cipher) Open(dst, packet []byte, headerLen int) ([]byte, error) {
	if len(packet) < headerLen+tagLen+counterLen {
		return nil, fmt.Errorf("%w: %d bytes cannot hold a %d-byte header, a tag and a counter", errShortPacket, len(packet), headerLen)
	}
	body := packet[headerLen : len(packet)-counterLen]
	counter := binary.BigEndian.Uint32(packet[len(packet)-counterLen:])
	var nb [24]byte
	out, err := c.aead.Open(dst, c.nonceFor(nb[:], counter), body, packet[:headerLen])
	if err != nil {
		return nil, ErrAuth
	}
	return out, nil
}

// Payload strips from a decrypted plaintext the extension body (when the
// header has an extension) and the padding (when it has padding), leaving
// the media frame. It aliases plaintext.
func Payload(h *Header, plaintext []byte) ([]byte, error) {
	p := plaintext
	if h.Extension {
		n := 4 * int(h.ExtensionWords)
		if n > len(p) {
			return nil, fmt.Errorf("%w: extension of %d bytes in a %d-byte payload", errShortPacket, n, len(p))
		}
		p = p[n:]
	}
	if h.Padding {
		if len(p) == 0 {
			return nil, fmt.Errorf("%w: padding flag on an empty payload", errShortPacket)
		}
		pad := int(p[len(p)-1])
		if pad == 0 || pad > len(p) {
			return nil, fmt.Errorf("rtp: bad padding length %d in a %d-byte payload", pad, len(p))
		}
		p = p[:len(p)-pad]
	}
	return p, nil
}
