package audio

import "errors"

// ErrBadPacket is wrapped by every error about an Opus packet that cannot be
// decoded; the lane that reported it keeps running.
var ErrBadPacket = errors.New("bad opus packet")

var (
	errBadPacket = ErrBadPacket
	errBadWAV    = errors.New("bad wav")
	errConfig    = errors.New("bad audio config")
)
