package conn_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// The SFU holds the transport key and forwards media in every member's
// name; in an end-to-end encrypted call it can put any DAVE frame on the
// wire but must not be able to change the bot's keys. One forged frame in
// the player's name, whose nonce names the next key generation and whose
// tag is wrong, is refused, as it should be; but the bot took that
// generation as the player's newest and erased the one the player really
// uses KeyExpiry later: from then on none of the player's genuine frames
// decrypts (the bot re-keys the whole call to get out of it, and the
// player's speech meanwhile is lost).
func TestAttackOneForgedFrameMakesTheBotDeafToAPlayer(t *testing.T) {
	t.Parallel()
	call := newDAVECall(t)
	clk := &manualNow{t: time.Unix(1_800_000_000, 0)}
	bot := dial(t, call.srv, botID, func(c *conn.Config) { c.NewE2EE = dave.NewE2EE(quiet(), dave.WithClock(clk.now)) })
	player := call.dial(t, playerID)
	call.settle(t, 1, bot, player)
	call.srv.AnnounceSpeaker(botID, playerID, call.srv.SSRC(playerID))

	sent := stream(t, player, 10, nil)
	if got, lost := collect(bot, playerID, sent); len(got) != sent || lost != 0 {
		t.Fatalf("before the forged frame the bot heard %d of %d frames, %d lost", len(got), sent, lost)
	}
	forged, err := dave.EncryptFrame(bytes.Repeat([]byte{0x42}, dave.KeySize), 1<<24|1, []byte("forged by the SFU"))
	if err != nil {
		t.Fatal(err)
	}
	pkt, err := call.srv.Seal(botID, rtp.Header{PayloadType: rtp.PayloadTypeOpus, Sequence: 50000, Timestamp: 4_000_000,
		SSRC: call.srv.SSRC(playerID)}, forged)
	if err != nil {
		t.Fatal(err)
	}
	refused := bot.Stats().E2EEFailed
	if err := call.srv.InjectUDP(botID, pkt); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool { return bot.Stats().E2EEFailed > refused }); err != nil {
		t.Fatalf("the forged frame was not refused: %+v", bot.Stats())
	}
	// The call goes on; the bot's DAVE clock passes KeyExpiry.
	clk.advance(dave.KeyExpiry + time.Second)
	sent = stream(t, player, 40, nil)
	got, lost := collect(bot, playerID, sent)
	if len(got) != sent || lost != 0 {
		t.Fatalf("after one forged frame (refused) and %v, the bot heard %d of the player's %d genuine frames, %d lost; bot stats %+v",
			dave.KeyExpiry+time.Second, len(got), sent, lost, bot.Stats())
	}
}
