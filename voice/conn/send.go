package conn

import (
	"bytes"
	"fmt"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
)

// SilenceFrame is the Opus frame of silence Discord expects five of at the
// end of a stream.
var silenceFrame = []byte{0xF8, 0xFF, 0xFE}

// SilenceFrame returns the Opus silence frame.
func SilenceFrame() []byte { return bytes.Clone(silenceFrame) }

const (
	samplesPerFrame = 960 // 20 ms at 48 kHz
	frameDuration   = 20 * time.Millisecond
)

// WriteOpus sends one 20 ms Opus frame now; the caller paces frames. The
// first frame of a stream announces speaking (op 5), and so does the first
// frame after the connection's SSRC changed (a re-identify or a Switch in
// the middle of a stream). Frames are DAVE-encrypted (except the 3-byte
// silence frame, which receivers pass through) and then
// transport-encrypted; while DAVE is on but has no send key the frame is
// not sent (counted in Stats.NotEncrypted) and the error wraps the
// session's.
func (c *Conn) WriteOpus(frame []byte) error {
	if c.closed.Load() || c.ctx.Err() != nil {
		return ErrClosed
	}
	c.mu.Lock()
	gen, udp, ssrc, ready := c.gen, c.udp, c.ssrc, c.ready
	c.mu.Unlock()
	if !ready || udp == nil {
		return ErrNotReady
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if !c.speaking || c.spokeAs != ssrc {
		if err := gen.sendJSON(gateway.OpSpeaking, gateway.Speaking{Speaking: gateway.SpeakingMicrophone, SSRC: ssrc}); err != nil {
			return err
		}
		c.speaking, c.spokeAs = true, ssrc
	}
	return c.writeLocked(udp, ssrc, frame)
}

// writeLocked sends a frame; c.sendMu is held.
func (c *Conn) writeLocked(udp interface{ Write([]byte) (int, error) }, ssrc uint32, frame []byte) error {
	payload := frame
	if e := c.currentE2EE(); e != nil && !bytes.Equal(frame, silenceFrame) {
		enc, err := e.Encrypt(frame)
		if err != nil {
			// No key, no frame: never plaintext into an encrypted call.
			c.stats.notEncrypted.Add(1)
			return fmt.Errorf("voice: frame not sent: DAVE encryption: %w", err)
		}
		payload = enc
	}
	now := time.Now()
	// After a pause the timestamp jumps by the time that passed, so that
	// receivers play the next frame on time rather than early.
	if !c.lastSent.IsZero() {
		if gap := now.Sub(c.lastSent); gap > 2*frameDuration {
			c.ts += uint32(gap/frameDuration-1) * samplesPerFrame
		}
	}
	c.lastSent = now
	h := rtp.Header{PayloadType: rtp.PayloadTypeOpus, Sequence: c.seq, Timestamp: c.ts, SSRC: ssrc}
	var hb [16]byte
	n, _ := h.MarshalTo(hb[:])
	ciph := c.cipher.Load()
	pkt := ciph.Seal(make([]byte, 0, n+len(payload)+ciph.Overhead()), hb[:n], payload, c.nonce)
	c.seq++
	c.ts += samplesPerFrame
	c.nonce++
	if _, err := udp.Write(pkt); err != nil {
		return fmt.Errorf("voice: sending audio: %w", err)
	}
	c.stats.sent.Add(1)
	return nil
}

// SetSpeaking ends (false) or announces (true) a stream. Ending sends five
// silence frames, 20 ms apart, so receivers do not interpolate, then tells
// the gateway we stopped.
func (c *Conn) SetSpeaking(on bool) error {
	c.mu.Lock()
	gen, udp, ssrc, ready := c.gen, c.udp, c.ssrc, c.ready
	c.mu.Unlock()
	if !ready {
		return ErrNotReady
	}
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if on == c.speaking && (!on || c.spokeAs == ssrc) {
		return nil
	}
	if on {
		c.speaking, c.spokeAs = true, ssrc
		return gen.sendJSON(gateway.OpSpeaking, gateway.Speaking{Speaking: gateway.SpeakingMicrophone, SSRC: ssrc})
	}
	for i := 0; i < 5; i++ {
		if i > 0 {
			time.Sleep(frameDuration)
		}
		if err := c.writeLocked(udp, ssrc, silenceFrame); err != nil {
			return err
		}
	}
	c.speaking = false
	return gen.sendJSON(gateway.OpSpeaking, gateway.Speaking{Speaking: 0, SSRC: ssrc})
}
