package conn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// Issue 29: a new voice session in the middle of an utterance (a Switch,
// or a re-identify after the session was lost) has a new SSRC; the bot
// announces it (op 5) before its next frame, so listeners map the new
// SSRC to the bot and hear the rest of the turn instead of dropping it as
// an unknown source.
func TestSpeakingIsAnnouncedForEveryNewSSRC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// renew starts the new session; the bot keeps writing meanwhile.
		renew func(t *testing.T, srv *voicetest.Server, bot *conn.Conn)
	}{
		{"switch", func(t *testing.T, srv *voicetest.Server, bot *conn.Conn) {
			p := params(srv, botID)
			p.SessionID, p.Token = "sess-switched", "tok-switched"
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if err := bot.Switch(ctx, p); err != nil {
				t.Errorf("switch: %v", err)
			}
		}},
		{"re-identify", func(t *testing.T, srv *voicetest.Server, bot *conn.Conn) {
			srv.CloseWS(botID, gateway.CloseSessionInvalid)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := server(t, voicetest.Config{})
			bot := dial(t, srv, botID, func(c *conn.Config) {
				c.Rejoin = func(ctx context.Context) (conn.Params, error) {
					p := params(srv, botID)
					p.SessionID, p.Token = "sess-rejoined", "tok-rejoined"
					return p, nil
				}
			})
			player := dial(t, srv, playerID, nil)
			waitUser(t, player, botID)
			oldSSRC := srv.SSRC(botID)

			// The bot is speaking when its session is renewed.
			for i := 0; i < 10; i++ {
				if err := bot.WriteOpus(frame(i)); err != nil {
					t.Fatal(err)
				}
			}
			waitPacketFrom(t, player, botID, oldSSRC)
			tc.renew(t, srv, bot)
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if err := voicetest.Wait(ctx, func() bool { return srv.SSRC(botID) != oldSSRC && bot.WriteOpus(frame(99)) == nil }); err != nil {
				t.Fatalf("the bot never sent under a new SSRC (still %d)", srv.SSRC(botID))
			}
			newSSRC := srv.SSRC(botID)
			// The same utterance goes on, without SetSpeaking: the
			// listener must learn the new SSRC from an op 5.
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for i := 100; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
						bot.WriteOpus(frame(i))
					}
				}
			}()
			defer func() { close(stop); <-done }()
			p := waitPacketFrom(t, player, botID, newSSRC)
			t.Logf("%s: the listener heard the bot under its new SSRC %d (was %d), sequence %d", tc.name, newSSRC, oldSSRC, p.Sequence)
		})
	}
}

// waitPacketFrom waits for a packet of user under ssrc (a hang guard of
// 20 s; frames from an SSRC never announced are dropped after a second).
func waitPacketFrom(t *testing.T, c *conn.Conn, user string, ssrc uint32) audio.Packet {
	t.Helper()
	timeout := time.After(hangGuard)
	for {
		select {
		case p, ok := <-c.Packets():
			if !ok {
				t.Fatal("packets closed")
			}
			if p.UserID == user && p.SSRC == ssrc {
				return p
			}
		case <-timeout:
			t.Fatalf("no packet from %s under SSRC %d; stats %+v", user, ssrc, c.Stats())
		}
	}
}

// Issue 29, on the wire: a speaker's sequence numbers jump by -5000 and
// then +40000, and after the speaker's client disconnects (op 13) and
// comes back, its SSRC is reused with lower sequence numbers at once. The
// stream goes on through all of it, in order, with no loss reported.
func TestReceiveLaneSurvivesJumpsAndSSRCReuse(t *testing.T) {
	t.Parallel()
	srv := server(t, voicetest.Config{})
	bot := dial(t, srv, botID, nil)
	events := recordEvents(bot)
	player := dial(t, srv, playerID, nil)
	waitUser(t, bot, playerID)
	const fake = 7777
	srv.AnnounceSpeaker(botID, playerID, fake)
	inject := func(first uint16, n int) {
		for i := 0; i < n; i++ {
			seq := first + uint16(i)
			pkt, err := srv.Seal(botID, rtp.Header{PayloadType: rtp.PayloadTypeOpus, Sequence: seq, Timestamp: uint32(seq) * 960, SSRC: fake},
				[]byte(fmt.Sprint(seq)))
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.InjectUDP(botID, pkt); err != nil {
				t.Fatal(err)
			}
		}
	}
	expect := func(what string, first uint16, n int) {
		t.Helper()
		var got []uint16
		lost := 0
		timeout := time.After(hangGuard)
		for len(got) < n {
			select {
			case p := <-bot.Packets():
				if p.SSRC == fake {
					got = append(got, p.Sequence)
					lost += p.Lost
				}
			case <-timeout:
				t.Fatalf("%s: got %v; stats %+v", what, got, bot.Stats())
			}
		}
		for i, s := range got {
			if s != first+uint16(i) {
				t.Fatalf("%s: got %v, want %d from %d", what, got, n, first)
			}
		}
		if lost != 0 {
			t.Fatalf("%s: %d reported lost", what, lost)
		}
	}
	inject(10000, 10)
	expect("start", 10000, 10)
	inject(5000, 10)
	expect("a jump of -5000", 5000, 10)
	inject(45000, 10)
	expect("a jump of +40000", 45000, 10)

	// The client leaves (op 13) and its SSRC comes back at once with
	// lower sequence numbers.
	inject(500, 10)
	expect("a new stream", 500, 10)
	player.Close()
	events.wait(t, "player left", kind(conn.EventUserLeft, playerID))
	srv.AnnounceSpeaker(botID, playerID, fake)
	waitUser(t, bot, playerID)
	inject(495, 10)
	expect("the SSRC reused after op 13", 495, 10)
	if st := bot.Stats(); st.Late != 0 || st.Lost != 0 {
		t.Fatalf("stats %+v", st)
	}
}
