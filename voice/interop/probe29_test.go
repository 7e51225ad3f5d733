package interop_test

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
)

// Probe 3 (issue 29), heard by discord.js: the bot's voice session is lost
// (4006) in the middle of an NPC's turn. It identifies again and gets a new
// SSRC; the turn goes on without the bot ever saying it stopped speaking.
// discord.js drops packets from an SSRC no speaking op (op 5) named, so
// the rest of the turn is heard only if the bot announced its new SSRC
// by itself. Every frame the bot sent after it was back in the group must
// reach discord.js, in order, after the frames it sent before the loss.
func TestProbe29DiscordJSHearsTheTurnAcrossAReidentify(t *testing.T) {
	c := newCall(t, "aead_aes256_gcm_rtpsize", botID)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	p := conn.Params{Endpoint: c.srv.Endpoint(), GuildID: guildID, ChannelID: chanID, UserID: botID,
		SessionID: "sess-bot", Token: "tok-bot"}
	bot, err := conn.Dial(ctx, p, conn.Config{Logger: quiet(), NewE2EE: dave.NewE2EE(quiet()),
		Backoff: conn.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Attempts: 5},
		Rejoin: func(context.Context) (conn.Params, error) {
			q := p
			q.SessionID, q.Token = "sess-bot-2", "tok-bot-2"
			return q, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bot.Close() })
	reidentified := make(chan struct{})
	go func() {
		once := false
		for e := range bot.Events() {
			if e.Kind == conn.EventReidentified && !once {
				once = true
				close(reidentified)
			}
		}
	}()
	c.joinDJS()
	code := c.settle("", bot)

	frames := opusFrames(t, 60, 11)
	before, after := frames[:30], frames[30:]
	oldSSRC := bot.SSRC()
	if err := bot.SetSpeaking(true); err != nil {
		t.Fatal(err)
	}
	c.djs.call("knows", map[string]any{"userId": botID})
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, f := range before {
		<-tick.C
		if err := bot.WriteOpus(f); err != nil {
			t.Fatalf("before the loss: %v", err)
		}
	}
	heardBefore := c.djs.call("received", map[string]any{"userId": botID, "count": len(before), "ms": hangGuard.Milliseconds()}).Frames
	sameHex(t, "before the loss", heardBefore, before)

	// The session is lost mid-turn; the bot identifies again.
	c.srv.CloseWS(botID, gateway.CloseSessionInvalid)
	select {
	case <-reidentified:
	case <-ctx.Done():
		t.Fatal("the bot did not identify again")
	}
	if bot.SSRC() == oldSSRC {
		t.Fatalf("the fake server gave the new session the old SSRC %d", oldSSRC)
	}
	c.settle(code, bot)

	// The rest of the turn, with no SetSpeaking in between: the bot is
	// still speaking as far as its caller knows.
	for i, f := range after {
		<-tick.C
		if err := bot.WriteOpus(f); err != nil {
			t.Fatalf("after the re-identify, frame %d: %v", i, err)
		}
	}
	if err := bot.SetSpeaking(false); err != nil {
		t.Fatal(err)
	}
	want := append(append([][]byte{}, after...), silence, silence, silence, silence, silence)
	got := c.djs.call("received", map[string]any{"userId": botID, "count": len(want), "ms": hangGuard.Milliseconds()}).Frames
	// Frames the bot sent into the dying session may be heard too; what
	// matters is the tail.
	if len(got) > len(want) {
		got = got[len(got)-len(want):]
	}
	t.Logf("re-identify mid-turn: SSRC %d -> %d; discord.js heard %d frames of the rest of the turn, want %d (%d + 5 silence)",
		oldSSRC, bot.SSRC(), len(got), len(want), len(after))
	if len(got) < len(want) {
		t.Fatalf("discord.js heard %d frames of the rest of the turn, want %d; missing %v", len(got), len(want), missingFrames(got, want))
	}
	for i := range want {
		if got[i] != hex.EncodeToString(want[i]) {
			t.Fatalf("after the re-identify frame %d differs", i)
		}
	}
	if st := bot.Stats(); st.NotEncrypted != 0 {
		t.Logf("frames not sent for want of a key: %d", st.NotEncrypted)
	}
}
