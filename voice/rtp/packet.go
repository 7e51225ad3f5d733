package rtp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Header field offsets and masks (RFC 3550 §5.1).
const (
	fixedHeaderLen  = 12
	versionShift    = 6
	paddingBit      = 0x20
	extensionBit    = 0x10
	csrcCountMask   = 0x0f
	markerBit       = 0x80
	payloadTypeMask = 0x7f
	extPreambleLen  = 4

	// Version is the RTP version Discord uses.
	Version = 2
	// PayloadTypeOpus is Discord's payload type for Opus audio.
	PayloadTypeOpus = 120
	// ExtensionProfileOneByte marks RFC 8285 one-byte header extensions.
	ExtensionProfileOneByte = 0xBEDE
)

var (
	errShortPacket = errors.New("rtp: packet too short")
	errVersion     = errors.New("rtp: not RTP version 2")
)

// Header is an RTP header. With transport encryption, the extension body
// is part of the ciphertext, so the header holds only the extension's
// preamble (profile and length).
type Header struct {
	Padding     bool
	Marker      bool
	PayloadType uint8
	Sequence    uint16
	Timestamp   uint32
	SSRC        uint32
	CSRC        []uint32
	// Extension is set when the header has an extension; ExtensionProfile
	// and ExtensionWords come from its preamble.
	Extension        bool
	ExtensionProfile uint16
	ExtensionWords   uint16
}

// Unmarshal parses the header at the start of buf and returns its length
// (the "rtpsize" additional data: fixed header, CSRCs, and extension
// preamble). CSRC reuses h.CSRC's capacity.
func (h *Header) Unmarshal(buf []byte) (int, error) {
	if len(buf) < fixedHeaderLen {
		return 0, fmt.Errorf("%w: %d bytes, need %d", errShortPacket, len(buf), fixedHeaderLen)
	}
	if buf[0]>>versionShift != Version {
		return 0, fmt.Errorf("%w (first byte %#02x)", errVersion, buf[0])
	}
	h.Padding = buf[0]&paddingBit != 0
	h.Extension = buf[0]&extensionBit != 0
	cc := int(buf[0] & csrcCountMask)
	h.Marker = buf[1]&markerBit != 0
	h.PayloadType = buf[1] & payloadTypeMask
	h.Sequence = binary.BigEndian.Uint16(buf[2:4])
	h.Timestamp = binary.BigEndian.Uint32(buf[4:8])
	h.SSRC = binary.BigEndian.Uint32(buf[8:12])
	n := fixedHeaderLen + 4*cc
	if len(buf) < n {
		return 0, fmt.Errorf("%w: %d CSRCs need %d bytes, have %d", errShortPacket, cc, n, len(buf))
	}
	h.CSRC = h.CSRC[:0]
	for i := 0; i < cc; i++ {
		h.CSRC = append(h.CSRC, binary.BigEndian.Uint32(buf[fixedHeaderLen+4*i:]))
	}
	h.ExtensionProfile, h.ExtensionWords = 0, 0
	if h.Extension {
		if len(buf) < n+extPreambleLen {
			return 0, fmt.Errorf("%w: extension preamble needs %d bytes, have %d", errShortPacket, n+extPreambleLen, len(buf))
		}
		h.ExtensionProfile = binary.BigEndian.Uint16(buf[n:])
		h.ExtensionWords = binary.BigEndian.Uint16(buf[n+2:])
		n += extPreambleLen
	}
	return n, nil
}

// MarshalSize is the header's length on the wire.
func (h *Header) MarshalSize() int {
	n := fixedHeaderLen + 4*len(h.CSRC)
	if h.Extension {
		n += extPreambleLen
	}
	return n
}

// MarshalTo writes the header into buf and returns its length.
func (h *Header) MarshalTo(buf []byte) (int, error) {
	n := h.MarshalSize()
	if len(buf) < n {
		return 0, io.ErrShortBuffer
	}
	if len(h.CSRC) > csrcCountMask {
		return 0, fmt.Errorf("rtp: %d CSRCs, at most %d", len(h.CSRC), csrcCountMask)
	}
	buf[0] = Version<<versionShift | byte(len(h.CSRC))
	if h.Padding {
		buf[0] |= paddingBit
	}
	if h.Extension {
		buf[0] |= extensionBit
	}
	buf[1] = h.PayloadType & payloadTypeMask
	if h.Marker {
		buf[1] |= markerBit
	}
	binary.BigEndian.PutUint16(buf[2:], h.Sequence)
	binary.BigEndian.PutUint32(buf[4:], h.Timestamp)
	binary.BigEndian.PutUint32(buf[8:], h.SSRC)
	off := fixedHeaderLen
	for _, c := range h.CSRC {
		binary.BigEndian.PutUint32(buf[off:], c)
		off += 4
	}
	if h.Extension {
		binary.BigEndian.PutUint16(buf[off:], h.ExtensionProfile)
		binary.BigEndian.PutUint16(buf[off+2:], h.ExtensionWords)
		off += extPreambleLen
	}
	return off, nil
}

// Marshal returns the header's bytes.
func (h *Header) Marshal() ([]byte, error) {
	buf := make([]byte, h.MarshalSize())
	_, err := h.MarshalTo(buf)
	return buf, err
}

// IsRTCP reports whether a datagram is RTCP (payload types 200–204 when its
// second byte is read whole), which shares the voice UDP socket.
func IsRTCP(buf []byte) bool {
	return len(buf) >= 2 && buf[1] >= 200 && buf[1] <= 204
}
