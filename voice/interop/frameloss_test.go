package interop_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/rtp"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// Issue 29 (FRAMELOSS): now and then discord.js lost one frame of a
// stream from glyphoxa ("34 frames, want 35; missing frames [13]"). The
// peer's log showed the cause: davey refused the frame as unencrypted
// (UnencryptedWhenPassthroughDisabled) although the relay had carried a
// whole DAVE frame (nonce in sequence, generation 0). @discordjs/voice
// 0.19.2's VoiceReceiver.parsePacket looks for the extension profile BE DE
// at bytes 12-13 of every packet without checking the RTP X bit; in a
// packet without an extension those bytes are the first two of the
// transport ciphertext, so one packet in 65,536 loses 4 × (bytes 14-15)
// bytes off its front and, with them, its DAVE trailer's worth of sense.
//
// The fake voice server, which picks each receiver's transport counter
// as Discord's SFU does, now never sends such a packet: it takes the next
// counter. This test steers the relay onto a counter under which the first
// packet of a stream, a silence frame (the one payload whose plaintext the
// test knows in advance), would read BE DE followed by a non-zero length,
// and checks that discord.js still hears every frame, in order.
func TestDiscordJSHearsAPacketWhoseCiphertextReadsAsAnExtension(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{rtp.ModeAES256GCM, rtp.ModeXChaCha20} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			c := newCall(t, mode, botID)
			bot := c.dial(botID)
			c.joinDJS()
			c.settle("", bot)

			// A counter, past any the relay used, under which the silence
			// frame's ciphertext starts BE DE and the length after it is at
			// least 256 words (its first byte is ciphertext too; the second
			// is the tag's, which depends on the header).
			h := rtp.Header{PayloadType: rtp.PayloadTypeOpus, SSRC: c.srv.SSRC(botID)}
			start := uint32(1 << 20)
			ctr := start
			for ; ; ctr++ {
				if ctr-start > 1<<24 {
					t.Fatalf("no counter in [%d, %d) makes the silence frame read BE DE", start, ctr)
				}
				p, err := c.srv.SealWithCounter(djsID, h, silence, ctr)
				if err != nil {
					t.Fatal(err)
				}
				if p[12] == 0xBE && p[13] == 0xDE && p[14] != 0 {
					break
				}
			}
			if err := c.srv.SetCounter(djsID, ctr-1); err != nil {
				t.Fatal(err)
			}
			resealed := c.srv.Resealed()

			frames := opusFrames(t, 20, 14)
			if err := bot.SetSpeaking(true); err != nil {
				t.Fatal(err)
			}
			c.djs.call("knows", map[string]any{"userId": botID})
			// The stream opens with a silence frame: the packet steered onto
			// the counter.
			stream := append([][]byte{silence}, frames...)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for i, f := range stream {
				<-tick.C
				if err := bot.WriteOpus(f); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
			}
			if err := bot.SetSpeaking(false); err != nil {
				t.Fatal(err)
			}
			want := append(append([][]byte{}, stream...), silence, silence, silence, silence, silence)
			r := c.djs.call("received", map[string]any{"userId": botID, "count": len(want), "ms": hangGuard.Milliseconds()})
			if len(r.Frames) != len(want) || len(r.Lost) != 0 {
				t.Logf("discord.js's receiver got %d packets and did not hand out %s", r.Packets, r.Lost)
			}
			sameHex(t, "a stream whose first packet was steered onto a BE DE counter", r.Frames, want)
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			// The relay met the steered counter and took the next one (the
			// test did reach the packet discord.js misreads).
			if err := voicetest.Wait(ctx, func() bool { return c.srv.Resealed() > resealed }); err != nil {
				t.Fatalf("the relay never met the steered counter %d: resealed %d", ctr, c.srv.Resealed())
			}
			t.Logf("%s: under counter %d the silence frame would have read BE DE; the relay resealed %d packet(s); discord.js heard all %d frames",
				mode, ctr, c.srv.Resealed()-resealed, len(want))
		})
	}
}
