package audio

import (
	"bytes"
	"fmt"
	"time"
)

// Packet is one Opus packet of one speaker, as a voice connection delivers
// it.
type Packet struct {
	// UserID is the Discord user id of the speaker.
	UserID string
	// SSRC is the RTP synchronisation source; a change means the speaker's
	// client restarted its stream.
	SSRC uint32
	// Sequence is the RTP sequence number.
	Sequence uint16
	// Timestamp is the RTP timestamp, on the 48 kHz Opus clock.
	Timestamp uint32
	// Opus is the Opus packet.
	Opus []byte
	// Lost is how many packets just before this one the transport has
	// already given up on (after its own reordering); the lane conceals
	// them at once instead of waiting for them.
	Lost int
	// Received is when the packet arrived. The per-speaker rate limit
	// measures time by it; a packet without it is not limited.
	Received time.Time

	// cut marks a packet the rate limit dropped: the lane takes its place
	// in the sequence and its time out of the stream, and decodes nothing.
	cut bool
}

// SilenceFrame is the Opus packet Discord clients send (five times) when a
// user stops talking: one 20 ms CELT frame of silence.
var SilenceFrame = []byte{0xF8, 0xFF, 0xFE}

// IsSilenceFrame reports whether b is Discord's silence frame.
func IsSilenceFrame(b []byte) bool { return bytes.Equal(b, SilenceFrame) }

// PacketSamples returns the duration of an Opus packet in samples at 48 kHz,
// read from its TOC byte (RFC 6716, section 3.1).
func PacketSamples(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("%w: empty packet", errBadPacket)
	}
	toc := b[0]
	config := int(toc >> 3)
	var frame int // samples at 48 kHz
	switch {
	case config < 12: // SILK: 10, 20, 40, 60 ms
		frame = [...]int{480, 960, 1920, 2880}[config%4]
	case config < 16: // hybrid: 10, 20 ms
		frame = [...]int{480, 960}[config%2]
	default: // CELT: 2.5, 5, 10, 20 ms
		frame = [...]int{120, 240, 480, 960}[config%4]
	}
	var n int
	switch toc & 3 {
	case 0:
		n = 1
	case 1, 2:
		n = 2
	default:
		if len(b) < 2 {
			return 0, fmt.Errorf("%w: code 3 packet of %d bytes has no frame count", errBadPacket, len(b))
		}
		n = int(b[1] & 0x3F)
		if n == 0 {
			return 0, fmt.Errorf("%w: code 3 packet with zero frames", errBadPacket)
		}
	}
	if d := n * frame; d > 5760 { // 120 ms, RFC 6716 section 3.2.5
		return 0, fmt.Errorf("%w: packet lasts %d samples, more than 120 ms", errBadPacket, d)
	} else {
		return d, nil
	}
}
