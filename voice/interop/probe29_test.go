package interop_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/dave/davetest"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
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

// holdDJS passes the DAVE gateway's messages through, except that while
// holding it keeps discord.js's commits, welcomes and transitions back
// (until release): discord.js is in the call, its DAVE session not ready.
type holdDJS struct {
	gw      voicetest.DAVEHandler
	mu      sync.Mutex
	holding bool
	held    []voicetest.Delivery
}

func (h *holdDJS) filter(ds []voicetest.Delivery) []voicetest.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.holding {
		return ds
	}
	var out []voicetest.Delivery
	for _, d := range ds {
		if d.UserID == djsID && d.Op >= gateway.OpDAVEPrepareTransition {
			h.held = append(h.held, d)
			continue
		}
		out = append(out, d)
	}
	return out
}

func (h *holdDJS) Joined(u string) []voicetest.Delivery { return h.filter(h.gw.Joined(u)) }
func (h *holdDJS) Left(u string) []voicetest.Delivery   { return h.filter(h.gw.Left(u)) }
func (h *holdDJS) FromClient(u string, op gateway.Op, p []byte) []voicetest.Delivery {
	return h.filter(h.gw.FromClient(u, op, p))
}

func (h *holdDJS) release() []voicetest.Delivery {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.holding = false
	out := h.held
	h.held = nil
	return out
}

// Probe 5 (issue 29), with discord.js: discord.js rejoins a call the bot
// shares with another glyphoxa client and plays while its DAVE session is
// not ready (the gateway holds its welcome back), so it sends its frames
// unencrypted, as the protocol allows a member that (re)joins. The bot
// hears them, and the rest once the group includes discord.js, in order,
// none lost.
func TestProbe29DiscordJSPlaysBeforeItsSessionIsReady(t *testing.T) {
	ch, err := gateway.Snowflake(chanID)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := davetest.New(ch, davetest.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	race := &raceGateway{gw: gw, favour: botID, present: map[string]bool{}}
	hold := &holdDJS{gw: race}
	tp := &tap{byUser: map[string][][]byte{}}
	srv, err := voicetest.New(voicetest.Config{Modes: []string{"aead_aes256_gcm_rtpsize"}, DAVEVersion: dave.ProtocolVersion, DAVE: hold,
		RequireDAVE: true, Observe: tp.observe, HeartbeatInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	front, caFile := newTLSFront(t, hostPort(srv.Endpoint()))
	c := &call{t: t, srv: srv, gw: gw, race: race, tap: tp, front: front}
	c.djs = startDJS(t, caFile)

	// The bot's DAVE session runs on a clock that stands still until the
	// test moves it: the window in which a (re)joining member's plain
	// frames pass (dave.KeyExpiry) cannot run out on a slow machine.
	var clockMu sync.Mutex
	frozen := time.Unix(1_800_000_000, 0)
	now := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return frozen
	}
	ctx0, cancel0 := context.WithTimeout(context.Background(), hangGuard)
	defer cancel0()
	bot, err := conn.Dial(ctx0, conn.Params{Endpoint: srv.Endpoint(), GuildID: guildID, ChannelID: chanID, UserID: botID,
		SessionID: "sess-bot", Token: "tok-bot"}, conn.Config{Logger: quiet(),
		NewE2EE: dave.NewE2EE(quiet(), dave.WithClock(now)),
		Backoff: conn.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Attempts: 5}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bot.Close() })
	third := c.dial(thirdID)
	c.joinDJS()
	code := c.settle("", bot, third)
	c.djs.call("leave", nil)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool { return len(gw.Members()) == 2 && gw.Settled() }); err != nil {
		t.Fatalf("discord.js did not leave the group: members %v", gw.Members())
	}
	hold.mu.Lock()
	hold.holding = true
	hold.mu.Unlock()
	c.tap.take(djsID)
	c.joinDJS()
	frames := opusFrames(t, 40, 12)
	hexes := make([]string, len(frames))
	for i, f := range frames {
		hexes[i] = hex.EncodeToString(f)
	}
	played := make(chan struct{})
	go func() {
		defer close(played)
		c.djs.call("play", map[string]any{"frames": hexes[:20]})
	}()
	// Half of it heard unencrypted; then the gateway lets discord.js in.
	first, lost := collect(bot, djsID, 20, 20)
	<-played
	srv.Send(hold.release())
	code = c.settle(code, bot, third)
	c.djs.call("play", map[string]any{"frames": hexes[20:]})
	rest, lost2 := collect(bot, djsID, 21, 25)
	var got [][]byte
	for _, f := range append(first, rest...) {
		if !bytes.Equal(f, silence) {
			got = append(got, f)
		}
	}
	plain := 0
	for _, w := range c.tap.take(djsID) {
		for _, f := range frames {
			if bytes.Equal(w, f) {
				plain++
			}
		}
	}
	t.Logf("discord.js played %d frames before its session was ready (%d crossed the server unencrypted) and %d after; the bot heard %d, %d lost; stats %+v",
		20, plain, 20, len(got), lost+lost2, bot.Stats())
	if plain == 0 {
		t.Fatal("discord.js sent nothing unencrypted: the probe did not reach a session that is not ready")
	}
	if lost+lost2 != 0 || len(got) != len(frames) {
		t.Fatalf("the bot heard %d of %d frames, %d lost", len(got), len(frames), lost+lost2)
	}
	sameFrames(t, "discord.js before and after its session was ready", got, frames)

	// Now that discord.js's frames decrypt, and a minute later (past the
	// window that follows the bot's own first transition), a plain frame
	// in its name (the server injecting audio) is refused, not heard.
	clockMu.Lock()
	frozen = frozen.Add(time.Minute)
	clockMu.Unlock()
	failed := bot.Stats().E2EEFailed
	spoof := opusFrames(t, 1, 13)[0]
	pkt, err := srv.Seal(botID, rtp.Header{PayloadType: rtp.PayloadTypeOpus, Sequence: 60000, Timestamp: 1 << 30, SSRC: srv.SSRC(djsID)}, spoof)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.InjectUDP(botID, pkt); err != nil {
		t.Fatal(err)
	}
	if err := voicetest.Wait(ctx, func() bool { return bot.Stats().E2EEFailed > failed }); err != nil {
		t.Fatalf("the spoofed plain frame was not refused: stats %+v", bot.Stats())
	}
	select {
	case p := <-bot.Packets():
		if bytes.Equal(p.Opus, spoof) {
			t.Fatal("the spoofed plain frame was delivered")
		}
	default:
	}
}
