package dave

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Frame format constants.
const (
	// MagicMarker ends every protected frame.
	MagicMarker = 0xFAFA
	// minSupplemental is tag + size byte + marker.
	minSupplemental = TagSize + 1 + 2
	maxULEB128Len   = 10
)

// ErrNotProtocolFrame is returned for a frame that does not carry the
// DAVE supplemental data.
var ErrNotProtocolFrame = errors.New("dave: not a protected frame")

// silence is the Opus silence frame the SFU may synthesise unencrypted.
var silence = []byte{0xF8, 0xFF, 0xFE}

// IsSilence reports whether frame is the exact 3-byte Opus silence frame.
func IsSilence(frame []byte) bool { return bytes.Equal(frame, silence) }

// Range is an unencrypted byte range of a frame.
type Range struct {
	Offset, Length uint64
}

func appendULEB128(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// readULEB128 decodes a ULEB128 value from the front of b and returns it
// with the number of bytes read (0 on error).
func readULEB128(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < maxULEB128Len; i++ {
		c := b[i]
		if i == maxULEB128Len-1 && c > 1 {
			return 0, 0
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// parsedFrame is the split view of a protected frame. Slices alias the
// input.
type parsedFrame struct {
	body   []byte // interleaved ciphertext and unencrypted ranges
	tag    []byte
	nonce  uint32
	ranges []Range
}

// parseFrame performs the protocol-frame check and splits the frame.
func parseFrame(frame []byte) (*parsedFrame, error) {
	n := len(frame)
	if n < minSupplemental+1 {
		return nil, fmt.Errorf("%w: %d bytes", ErrNotProtocolFrame, n)
	}
	if binary.BigEndian.Uint16(frame[n-2:]) != MagicMarker {
		return nil, fmt.Errorf("%w: no magic marker", ErrNotProtocolFrame)
	}
	size := int(frame[n-3])
	if size < minSupplemental+1 || size > n {
		return nil, fmt.Errorf("%w: supplemental size %d of %d-byte frame", ErrNotProtocolFrame, size, n)
	}
	p := &parsedFrame{body: frame[:n-size], tag: frame[n-size : n-size+TagSize]}
	meta := frame[n-size+TagSize : n-3]
	nonce, k := readULEB128(meta)
	if k == 0 || nonce > 0xFFFFFFFF {
		return nil, fmt.Errorf("%w: bad nonce", ErrNotProtocolFrame)
	}
	p.nonce = uint32(nonce)
	meta = meta[k:]
	var end uint64
	for len(meta) > 0 {
		off, k1 := readULEB128(meta)
		if k1 == 0 {
			return nil, fmt.Errorf("%w: bad range offset", ErrNotProtocolFrame)
		}
		ln, k2 := readULEB128(meta[k1:])
		if k2 == 0 {
			return nil, fmt.Errorf("%w: bad range length", ErrNotProtocolFrame)
		}
		meta = meta[k1+k2:]
		if off < end || ln > uint64(len(p.body)) || off > uint64(len(p.body))-ln {
			return nil, fmt.Errorf("%w: range %d+%d out of order or outside %d-byte body", ErrNotProtocolFrame, off, ln, len(p.body))
		}
		end = off + ln
		p.ranges = append(p.ranges, Range{Offset: off, Length: ln})
	}
	return p, nil
}

func frameNonce(n uint32) [gcmNonceSize]byte {
	var nonce [gcmNonceSize]byte
	binary.LittleEndian.PutUint32(nonce[8:], n)
	return nonce
}

// split separates the unencrypted range bytes (AAD) from the rest.
func split(body []byte, ranges []Range) (aad, rest []byte) {
	if len(ranges) == 0 {
		return nil, body
	}
	var pos uint64
	for _, r := range ranges {
		rest = append(rest, body[pos:r.Offset]...)
		aad = append(aad, body[r.Offset:r.Offset+r.Length]...)
		pos = r.Offset + r.Length
	}
	return aad, append(rest, body[pos:]...)
}

// interleave rebuilds a frame from range bytes and the other bytes.
func interleave(dst []byte, ranges []Range, aad, rest []byte) []byte {
	var pos uint64
	for _, r := range ranges {
		k := r.Offset - pos
		dst = append(dst, rest[:k]...)
		rest = rest[k:]
		dst = append(dst, aad[:r.Length]...)
		aad = aad[r.Length:]
		pos = r.Offset + r.Length
	}
	return append(dst, rest...)
}

// encryptFrame protects frame with nonce n, leaving ranges unencrypted.
func encryptFrame(dst []byte, c *frameCipher, n uint32, frame []byte, ranges []Range) ([]byte, error) {
	var end uint64
	for _, r := range ranges {
		if r.Offset < end || r.Length > uint64(len(frame)) || r.Offset > uint64(len(frame))-r.Length {
			return nil, fmt.Errorf("dave: range %d+%d invalid for %d-byte frame", r.Offset, r.Length, len(frame))
		}
		end = r.Offset + r.Length
	}
	start := len(dst)
	if len(ranges) == 0 {
		dst = c.seal(dst, frameNonce(n), frame, nil)
	} else {
		aad, rest := split(frame, ranges)
		sealed := c.seal(nil, frameNonce(n), rest, aad)
		ct, tag := sealed[:len(rest)], sealed[len(rest):]
		dst = interleave(dst, ranges, aad, ct)
		dst = append(dst, tag...)
	}
	dst = appendULEB128(dst, uint64(n))
	for _, r := range ranges {
		dst = appendULEB128(dst, r.Offset)
		dst = appendULEB128(dst, r.Length)
	}
	size := len(dst) - start - len(frame) + 3
	if size > 255 {
		return nil, fmt.Errorf("dave: supplemental data of %d bytes (too many ranges)", size)
	}
	dst = append(dst, byte(size), 0xFA, 0xFA)
	return dst, nil
}

// decryptFrame opens a parsed frame with c.
func decryptFrame(dst []byte, c *frameCipher, p *parsedFrame) ([]byte, error) {
	if len(p.ranges) == 0 {
		return c.open(dst, frameNonce(p.nonce), p.body, p.tag, nil)
	}
	aad, rest := split(p.body, p.ranges)
	pt, err := c.open(nil, frameNonce(p.nonce), rest, p.tag, aad)
	if err != nil {
		return nil, err
	}
	return interleave(dst, p.ranges, aad, pt), nil
}

// EncryptFrame protects an Opus frame (fully encrypted) with a 16-byte
// AES-128 key and the 32-bit truncated nonce n.
func EncryptFrame(key []byte, n uint32, frame []byte) ([]byte, error) {
	c, err := newFrameCipher(key)
	if err != nil {
		return nil, err
	}
	return encryptFrame(nil, c, n, frame, nil)
}

// DecryptFrame opens a protected frame with key, returning the plaintext
// frame and the truncated nonce it carried.
func DecryptFrame(key []byte, frame []byte) ([]byte, uint32, error) {
	p, err := parseFrame(frame)
	if err != nil {
		return nil, 0, err
	}
	c, err := newFrameCipher(key)
	if err != nil {
		return nil, 0, err
	}
	out, err := decryptFrame(nil, c, p)
	return out, p.nonce, err
}
