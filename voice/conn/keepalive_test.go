package conn_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// listenOnly runs a simulated ten-minute session in which the bot only
// listens: every 5 s of fake time a player says five frames. The fake
// server plays a NAT that forgets a client silent for 30 s. It returns
// what the player sent and what the bot received.
func listenOnly(t *testing.T, keepalive, length time.Duration) (sent, received, lost int, srv *voicetest.Server, bot *conn.Conn) {
	t.Helper()
	clk := clocktest.NewFake(time.Unix(1_800_000_000, 0))
	srv = server(t, voicetest.Config{NATTimeout: 30 * time.Second, Clock: clk})
	bot = dial(t, srv, botID, func(c *conn.Config) { c.Clock, c.KeepaliveInterval = clk, keepalive })
	player := dial(t, srv, playerID, func(c *conn.Config) { c.Clock, c.KeepaliveInterval = clk, -1 })
	waitUser(t, bot, playerID)
	const (
		step = 5 * time.Second
	)
	steps := int(length / step)
	ctx, cancel := context.WithTimeout(context.Background(), 5*hangGuard) // a hang guard for the whole walk
	defer cancel()
	for i := 0; i < steps; i++ {
		if keepalive > 0 {
			if !clk.WaitTimers(ctx, 1) {
				t.Fatalf("step %d: the keepalive timer is not armed", i)
			}
		}
		clk.Advance(step)
		if keepalive > 0 {
			want := i + 1
			if err := voicetest.Wait(ctx, func() bool { return srv.Keepalives(botID) >= want }); err != nil {
				t.Fatalf("step %d: the server counted %d keepalives", i, srv.Keepalives(botID))
			}
		}
		for j := 0; j < 5; j++ {
			if err := player.WriteOpus(frame(i*5 + j)); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		wait := hangGuard // all five come, however slowly
		if keepalive < 0 {
			wait = 150 * time.Millisecond // the control: most frames never come
		}
		got, l := collectN(bot, playerID, 5, wait)
		received += got
		lost += l
	}
	return sent, received, lost, srv, bot
}

func TestListenOnlyTenMinutesKeepsTheNATMapping(t *testing.T) {
	t.Parallel()
	sent, received, lost, srv, bot := listenOnly(t, 5*time.Second, 10*time.Minute)
	t.Logf("10 simulated minutes listening: the player sent %d frames, the bot received %d (%d lost); the bot sent %d keepalives, the server counted %d; NAT drops %d",
		sent, received, lost, bot.Stats().Keepalives, srv.Keepalives(botID), srv.NATDropped())
	if received != sent || lost != 0 || srv.NATDropped() != 0 {
		t.Fatalf("received %d of %d frames, %d lost, %d dropped by the NAT", received, sent, lost, srv.NATDropped())
	}
	if k := srv.Keepalives(botID); k < 120 || uint64(k) > bot.Stats().Keepalives {
		t.Fatalf("the server counted %d keepalives, the bot sent %d; want one per 5 s (120)", k, bot.Stats().Keepalives)
	}
	if bot.Stats().Sent != 0 {
		t.Fatalf("the bot sent media: %+v", bot.Stats())
	}
}

// Without keepalives the same session loses the mapping: the test above
// measures something.
func TestListenOnlyWithoutKeepaliveLosesTheNATMapping(t *testing.T) {
	t.Parallel()
	sent, received, _, srv, _ := listenOnly(t, -1, 2*time.Minute)
	t.Logf("without keepalives: the player sent %d frames, the bot received %d; NAT drops %d", sent, received, srv.NATDropped())
	if received >= sent || srv.NATDropped() == 0 || srv.Keepalives(botID) != 0 {
		t.Fatalf("received %d of %d with no keepalive; NAT drops %d", received, sent, srv.NATDropped())
	}
}

// collectN reads c's packets from a user until n arrived or none came for
// quiet.
func collectN(c *conn.Conn, from string, n int, quiet time.Duration) (got, lost int) {
	for got < n {
		select {
		case p, ok := <-c.Packets():
			if !ok {
				return
			}
			if p.UserID == from {
				got++
				lost += p.Lost
			}
		case <-time.After(quiet):
			return
		}
	}
	return
}
