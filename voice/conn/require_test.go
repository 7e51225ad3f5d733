package conn_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// A bot made with dave.RequireE2EE in an encrypted call that the voice
// server downgrades (op 21 and op 22 to protocol version 0): the player
// follows, the bot does not. It reports EventE2EEFailed with
// dave.ErrE2EERequired, sends none of its speech (least of all in the
// clear), hears none of the player's plaintext, and a rejoin into a call
// without DAVE fails with the same reason.
func TestRequireE2EERefusesADowngradeOnTheWire(t *testing.T) {
	t.Parallel()
	call := newDAVECall(t)
	plainCall := server(t, voicetest.Config{DAVEVersion: 0})
	bot := dial(t, call.srv, botID, func(c *conn.Config) {
		c.NewE2EE = dave.NewE2EE(quiet(), dave.RequireE2EE())
		c.Rejoin = func(ctx context.Context) (conn.Params, error) { return params(plainCall, botID), nil }
	})
	events := recordEvents(bot)
	player := call.dial(t, playerID)
	call.settle(t, 1, bot, player)

	downgrade := map[string]int{"transition_id": 9, "protocol_version": 0}
	execute := map[string]int{"transition_id": 9}
	call.srv.Send([]voicetest.Delivery{
		{UserID: botID, Op: gateway.OpDAVEPrepareTransition, JSON: downgrade},
		{UserID: playerID, Op: gateway.OpDAVEPrepareTransition, JSON: downgrade},
		{UserID: botID, Op: gateway.OpDAVEExecuteTransition, JSON: execute},
		{UserID: playerID, Op: gateway.OpDAVEExecuteTransition, JSON: execute},
	})
	e := events.wait(t, "e2ee failed", kind(conn.EventE2EEFailed, ""))
	if !errors.Is(e.Err, dave.ErrE2EERequired) {
		t.Fatalf("EventE2EEFailed with %v, want dave.ErrE2EERequired", e.Err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool { return !session(player).Ready() }); err != nil {
		t.Fatal("the player did not follow the downgrade")
	}

	// The NPC speaks: nothing reaches the wire but the closing silence.
	onWire := len(call.tap.frames(botID))
	for i := 0; i < 10; i++ {
		if err := bot.WriteOpus(frame(i)); !errors.Is(err, dave.ErrNoSendKey) {
			t.Fatalf("frame %d after the refused downgrade: %v, want dave.ErrNoSendKey", i, err)
		}
	}
	if err := bot.SetSpeaking(false); err != nil {
		t.Fatal(err)
	}
	if err := voicetest.Wait(ctx, func() bool { return len(call.tap.frames(botID)) >= onWire+5 }); err != nil {
		t.Fatalf("the closing silence did not arrive")
	}
	for i, w := range call.tap.frames(botID)[onWire:] {
		if !bytes.Equal(w, conn.SilenceFrame()) {
			t.Fatalf("after the refused downgrade, bot frame %d went on the wire: %x", i, w[:min(len(w), 16)])
		}
	}

	// The player speaks in the clear now: the bot hears none of it.
	for len(bot.Packets()) > 0 {
		<-bot.Packets()
	}
	before := bot.Stats().E2EEFailed
	sent := stream(t, player, 10, nil)
	if err := voicetest.Wait(ctx, func() bool { return bot.Stats().E2EEFailed >= before+uint64(sent) }); err != nil {
		t.Fatalf("the player's %d plain frames were not refused: %d refused", sent, bot.Stats().E2EEFailed-before)
	}
	if n := len(bot.Packets()); n != 0 {
		t.Fatalf("the bot heard %d plain frames", n)
	}

	// What the table does next: rejoin. The call it finds has no DAVE.
	if err := bot.Rejoin(ctx); !errors.Is(err, dave.ErrE2EERequired) {
		t.Fatalf("rejoining a call without DAVE: %v, want dave.ErrE2EERequired", err)
	}
}
