package conn_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// testMoveWait is the move wait of these tests, on a fake clock that only
// the kick tests advance.
const testMoveWait = 3 * time.Second

// moveClock gives a connection a fake clock for its move wait and turns
// keepalives off, so that the clock's only timer is the move wait.
func moveClock(clk *clocktest.Fake) func(*conn.Config) {
	return func(c *conn.Config) {
		daveConfig(c)
		c.Clock, c.MoveWait, c.KeepaliveInterval = clk, testMoveWait, -1
	}
}

// kickThenSwitch plays a move as Discord does it: the voice gateway closes
// the bot's socket with code, and once the bot is waiting the main
// gateway's new updates arrive (Switch with p).
func kickThenSwitch(srv *voicetest.Server, bot *conn.Conn, events *eventLog, t *testing.T, code int, p conn.Params) func(context.Context) error {
	return func(ctx context.Context) error {
		srv.Kick(botID, code)
		events.wait(t, "waiting for a move", kind(conn.EventWaitingForMove, ""))
		return bot.Switch(ctx, p)
	}
}

func TestMoveClosedWith4014FollowsTheBot(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Unix(1_800_000_000, 0))
	srv, a, b := twoChannels(t)
	bot := dialAt(t, params(srv, botID), moveClock(clk))
	events := recordEvents(bot)
	playerA := dialAt(t, params(srv, playerID), daveConfig)
	playerB := dialAt(t, inB(params(srv, playerBID)), daveConfig)
	codeA := a.settle(t, 1, bot, playerA)
	epochsBefore := session(bot)

	talk := cycle(speechOpus(t, "Hold the door! The orcs are coming up the stairs."), 150)
	r := talkAcross(t, bot, playerA, playerID, talk, 50, kickThenSwitch(srv, bot, events, t, gateway.CloseDisconnected, inB(params(srv, botID))))
	checkOldChannelStops(t, "moved (4014, then new updates)", r, talk)
	t.Logf("move by 4014: %d of the %d frames said before the move were not delivered (in flight when the socket closed)",
		r.before-len(r.received), r.before)

	waiting := events.wait(t, "waiting for a move", kind(conn.EventWaitingForMove, ""))
	if waiting.ChannelID != chanID {
		t.Fatalf("waiting names channel %q, want %s", waiting.ChannelID, chanID)
	}
	moved := events.wait(t, "moved", kind(conn.EventMoved, ""))
	if moved.ChannelID != chanB {
		t.Fatalf("moved to %q", moved.ChannelID)
	}
	codeB := b.settle(t, 1, bot, playerB)
	if codeA == codeB || session(bot) == epochsBefore {
		t.Fatal("the DAVE session was not renewed for the new channel")
	}
	if got := bot.Users(); !slices.Equal(got, []string{playerBID}) {
		t.Fatalf("after the move the bot sees %v", got)
	}
	// The connection lives on: both ways in channel B.
	speech := speechOpus(t, "Welcome to the lower hall.")
	sent := streamFrames(t, playerB, speech, nil)
	got, lost := collect(bot, playerBID, sent)
	if len(got) != sent || lost != 0 || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("player B → bot after the move: sent %d, got %d, lost %d; %+v", sent, len(got), lost, bot.Stats())
	}
	sameFrames(t, "player B → bot", got, speech)
	reply := speechOpus(t, "I was sent by the council.")
	sent = streamFrames(t, bot, reply, nil)
	got, _ = collect(playerB, botID, sent)
	if len(got) != sent {
		t.Fatalf("bot → player B after the move: sent %d, got %d", sent, len(got))
	}
	sameFrames(t, "bot → player B", got, reply)
	// The wait was claimed: running the clock past it ends nothing.
	clk.Advance(2 * testMoveWait)
	time.Sleep(100 * time.Millisecond)
	for _, e := range events.snapshot() {
		if e.Kind == conn.EventClosed {
			t.Fatalf("the connection closed after the move: %+v", e)
		}
	}
}

func TestServerChangeClosedWith4022FollowsTheBot(t *testing.T) {
	t.Parallel()
	clk := clocktest.NewFake(time.Unix(1_800_000_000, 0))
	old, next := newDAVECall(t), newDAVECall(t)
	bot := dialAt(t, params(old.srv, botID), moveClock(clk))
	events := recordEvents(bot)
	stayer := dialAt(t, params(old.srv, playerID), daveConfig)
	old.settle(t, 1, bot, stayer)
	there := dialAt(t, params(next.srv, playerBID), daveConfig)

	p := params(next.srv, botID)
	p.SessionID, p.Token = "sess-new-server", "tok-new-server"
	talk := cycle(speechOpus(t, "The storm is breaking over the harbour."), 120)
	r := talkAcross(t, bot, stayer, playerID, talk, 40, kickThenSwitch(old.srv, bot, events, t, gateway.CloseCallTerminated, p))
	checkOldChannelStops(t, "server change (4022, then new updates)", r, talk)
	t.Logf("server change by 4022: %d of the %d frames said before it were not delivered", r.before-len(r.received), r.before)
	events.wait(t, "moved", kind(conn.EventMoved, ""))
	next.settle(t, 1, bot, there)
	speech := speechOpus(t, "Quick, into the lighthouse.")
	sent := streamFrames(t, there, speech, nil)
	got, lost := collect(bot, playerBID, sent)
	if len(got) != sent || lost != 0 {
		t.Fatalf("player → bot on the new server: sent %d, got %d, lost %d", sent, len(got), lost)
	}
	sameFrames(t, "new server", got, speech)
}

// waitPending waits until the fake clock has a timer due in d.
func waitPending(t *testing.T, clk *clocktest.Fake, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool { return slices.Contains(clk.Pending(), d) }); err != nil {
		t.Fatalf("no timer of %s armed: %v", d, clk.Pending())
	}
}

func TestKickWithoutANewSessionEndsWithAReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		code int
	}{
		{"kicked (4014)", gateway.CloseDisconnected},
		{"call terminated (4022)", gateway.CloseCallTerminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.NewFake(time.Unix(1_800_000_000, 0))
			call := newDAVECall(t)
			bot := dial(t, call.srv, botID, moveClock(clk))
			events := recordEvents(bot)
			player := call.dial(t, playerID)
			call.settle(t, 1, bot, player)

			call.srv.Kick(botID, tc.code)
			events.wait(t, "waiting for a move", kind(conn.EventWaitingForMove, ""))
			if err := bot.WriteOpus(frame(0)); !errors.Is(err, conn.ErrNotReady) {
				t.Fatalf("writing while waiting for a move: %v, want ErrNotReady", err)
			}
			waitPending(t, clk, testMoveWait)
			clk.Advance(testMoveWait - time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			for _, e := range events.snapshot() {
				if e.Kind == conn.EventClosed {
					t.Fatalf("closed before the move wait ran out: %+v", e)
				}
			}
			clk.Advance(time.Millisecond)
			closed := events.wait(t, "closed", kind(conn.EventClosed, ""))
			var de *conn.DisconnectedError
			if !errors.As(closed.Err, &de) || !errors.Is(closed.Err, conn.ErrDisconnected) || de.Code != tc.code || de.ChannelID != chanID || de.Reason == "" {
				t.Fatalf("closed with %v, want a DisconnectedError with code %d in %s", closed.Err, tc.code, chanID)
			}
			t.Logf("%s with no new session: %v", tc.name, closed.Err)
			waitPacketsClosed(t, bot)
			if err := bot.Close(); !errors.Is(err, conn.ErrDisconnected) {
				t.Fatalf("Close after a kick: %v", err)
			}
			if err := bot.Switch(context.Background(), params(call.srv, botID)); !errors.Is(err, conn.ErrClosed) {
				t.Fatalf("Switch after the end: %v", err)
			}
			// The channel saw the bot go.
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if err := voicetest.Wait(ctx, func() bool {
				return !slices.Contains(player.Users(), botID) && !slices.Contains(call.gw.Members(), botID)
			}); err != nil {
				t.Fatalf("the player still sees the bot: %v, group %v", player.Users(), call.gw.Members())
			}
		})
	}
}

func waitPacketsClosed(t *testing.T, c *conn.Conn) {
	t.Helper()
	timeout := time.After(hangGuard)
	for {
		select {
		case _, ok := <-c.Packets():
			if !ok {
				return
			}
		case <-timeout:
			t.Fatal("Packets was not closed")
		}
	}
}

func TestModeratorDisconnectEndsAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		removedFirst bool // the main gateway's news arrives before the close
	}{
		{"close, then the voice state without a channel", false},
		{"voice state without a channel, then the close", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.NewFake(time.Unix(1_800_000_000, 0))
			call := newDAVECall(t)
			bot := dial(t, call.srv, botID, moveClock(clk))
			events := recordEvents(bot)
			player := call.dial(t, playerID)
			call.settle(t, 1, bot, player)
			const why = "a moderator disconnected the bot from the voice channel"
			if tc.removedFirst {
				bot.Removed(why)
				call.srv.Disconnect(botID)
			} else {
				call.srv.Disconnect(botID)
				events.wait(t, "waiting for a move", kind(conn.EventWaitingForMove, ""))
				bot.Removed(why)
			}
			// No clock advance: the end does not wait for the move timeout.
			closed := events.wait(t, "closed", kind(conn.EventClosed, ""))
			var de *conn.DisconnectedError
			if !errors.As(closed.Err, &de) || de.Reason != why || de.Code != 0 {
				t.Fatalf("closed with %#v", closed.Err)
			}
			waitPacketsClosed(t, bot)
			n := 0
			for _, e := range events.snapshot() {
				if e.Kind == conn.EventClosed {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("%d close events", n)
			}
		})
	}
}
