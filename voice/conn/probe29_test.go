package conn_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// stallingEndpoint is a voice server that accepts TCP connections and
// never answers: a handshake to it hangs until the listener closes.
func stallingEndpoint(t *testing.T) (endpoint string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 16)
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return "ws://" + ln.Addr().String() + "/", ch
}

// Probe 2 (issue 29): the bot's voice session is lost (4006) and the
// main gateway hands it a new voice server, whose handshake is slow. The
// bot keeps speaking meanwhile. Every frame the old server still relays
// from it must carry DAVE's trailer: the new voice server means a new DAVE
// session, which has not seen op 4 yet, and must not let frames out as
// plain Opus.
func TestProbe29NoPlaintextWhileRejoiningAnotherServer(t *testing.T) {
	t.Parallel()
	d := newDAVECall(t)
	stall, accepted := stallingEndpoint(t)
	bot := dial(t, d.srv, botID, func(c *conn.Config) {
		daveConfig(c)
		c.Rejoin = func(ctx context.Context) (conn.Params, error) {
			p := params(d.srv, botID)
			p.Endpoint, p.SessionID, p.Token = stall, "sess-2", "tok-2"
			return p, nil
		}
	})
	player := d.dial(t, playerID)
	d.settle(t, 1, bot, player)
	before := session(bot)
	// The bot is in the middle of an NPC's turn when its session is lost.
	if sent := stream(t, bot, 10, nil); sent != 10 {
		t.Fatalf("sent %d of 10 frames before the loss", sent)
	}

	d.srv.CloseWS(botID, gateway.CloseSessionInvalid)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	select {
	case <-accepted:
	case <-ctx.Done():
		t.Fatal("the bot never dialled the new voice server")
	}
	if err := voicetest.Wait(ctx, func() bool { return bot.E2EE() != before }); err != nil {
		t.Fatal("the bot kept its DAVE session for a new voice server")
	}
	wireBefore := len(d.tap.frames(botID))
	plain := make([][]byte, 20)
	sent := 0
	for i := range plain {
		plain[i] = frame(1000 + i)
		if err := bot.WriteOpus(plain[i]); err == nil {
			sent++
		} else if i == 0 {
			t.Logf("first frame: %v", err)
		}
	}
	// The relay is asynchronous: a frame sent is relayed after it; wait
	// for as many as went out (none, if the bot held them back).
	if sent > 0 {
		if err := voicetest.Wait(ctx, func() bool { return len(d.tap.frames(botID)) >= wireBefore+sent }); err != nil {
			t.Fatalf("sent %d frames, the old server relayed %d", sent, len(d.tap.frames(botID))-wireBefore)
		}
	}
	wire := d.tap.frames(botID)[wireBefore:]
	leaked := 0
	for _, w := range wire {
		for _, p := range plain {
			if bytes.Equal(w, p) {
				leaked++
			}
		}
	}
	t.Logf("while rejoining another server: WriteOpus accepted %d of %d frames; the old server relayed %d, %d of them plain Opus; stats %+v",
		sent, len(plain), len(wire), leaked, bot.Stats())
	if leaked > 0 {
		t.Fatalf("%d frames went out as plain Opus while DAVE was on", leaked)
	}
}

// talkUntil streams frames from c every 20 ms until stop is closed.
func talkUntil(c *conn.Conn, stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
			c.WriteOpus(frame(i))
		}
	}
}

// Probe 1 (issue 29): the gateway sends the bot only commits and welcomes
// it cannot process, while two players keep talking the whole time (their
// frames under the epoch the bot still holds keep decrypting). The bot
// must still stop: at most MaxRecoveries+1 op 31 in all, then
// EventE2EEFailed, however many good frames arrive in between: a good
// frame says nothing about a commit that does not process.
func TestProbe29InvalidCommitsWhilePlayersTalk(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, chanID)
	sp := &spoiler{gw: gw, victim: botID}
	tap := &wireTap{byUser: map[string][][]byte{}}
	srv := server(t, voicetest.Config{DAVEVersion: dave.ProtocolVersion, DAVE: sp, RequireDAVE: true, Observe: tap.observe})
	clk := &manualNow{t: time.Unix(1_800_000_000, 0)}
	bot := dial(t, srv, botID, func(c *conn.Config) {
		c.NewE2EE = dave.NewE2EE(quiet(), dave.WithClock(clk.now))
	})
	events := recordEvents(bot)
	player := dial(t, srv, playerID, daveConfig)
	call := &daveCall{srv: srv, gw: gw}
	call.settle(t, 1, bot, player)

	stop := make(chan struct{})
	var talkers sync.WaitGroup
	talkers.Add(1)
	go talkUntil(player, stop, &talkers)
	defer func() { close(stop); talkers.Wait() }()
	// Wait until the player's frames reach the bot.
	waitDelivered := func(n uint64) {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := voicetest.Wait(ctx, func() bool { return bot.Stats().Delivered >= n }); err != nil {
			t.Fatalf("the player's frames do not reach the bot: %+v", bot.Stats())
		}
	}
	waitDelivered(10)

	sp.set(true, false)
	playerB := dial(t, srv, playerBID, daveConfig)
	talkers.Add(1)
	go talkUntil(playerB, stop, &talkers)

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	const storm = 3 * (dave.MaxRecoveries + 1)
	for {
		failed := false
		for _, e := range events.snapshot() {
			failed = failed || e.Kind == conn.EventE2EEFailed
		}
		if failed {
			break
		}
		inv, kps := sp.counts()
		if inv >= storm {
			t.Fatalf("a recovery storm: the bot sent %d op 31 and %d key packages with no EventE2EEFailed (gateway epoch %d)", inv, kps, gw.Epoch())
		}
		if inv >= kps {
			// A refusal's key package waits for its backoff (one key
			// package went out before any refusal): let the session's
			// clock run a second at a time until it leaves, and stand
			// still while the gateway answers, so the answer is never
			// late (dave.RecoveryTimeout).
			clk.advance(time.Second)
		}
		select {
		case <-ctx.Done():
			inv, kps := sp.counts()
			t.Fatalf("no EventE2EEFailed: the bot sent %d op 31 and %d key packages; events %v", inv, kps, events.snapshot())
		case <-time.After(10 * time.Millisecond):
		}
	}
	e := events.wait(t, "e2ee failed", kind(conn.EventE2EEFailed, ""))
	inv, kps := sp.counts()
	t.Logf("invalid commits while two players talk: %d op 31, %d key packages, gateway epoch %d, then %v", inv, kps, gw.Epoch(), e.Err)
	if !errors.Is(e.Err, dave.ErrRecoveryGaveUp) {
		t.Fatalf("EventE2EEFailed with %v", e.Err)
	}
	if inv > dave.MaxRecoveries+1 {
		t.Fatalf("op 31 sent %d times, want at most %d", inv, dave.MaxRecoveries+1)
	}
}

// Probe 4 (issue 29), on the wire: an SSRC passes from one user to another
// with no pause, the new user's numbering just below where the old one's
// stopped, and its first two packets swapped. Once with the old user's op
// 13 before the new user's op 5, once with only the op 5 that names the
// new owner. Every packet of the new user is delivered, in order, as the
// new user's, with nothing reported lost or late.
func TestProbe29SSRCPassesToAnotherUser(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		leaves bool // the old user's client disconnects first (op 13)
	}{
		{"after op 13", true},
		{"op 5 alone", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := server(t, voicetest.Config{})
			bot := dial(t, srv, botID, nil)
			events := recordEvents(bot)
			player := dial(t, srv, playerID, nil)
			dial(t, srv, playerBID, nil)
			waitUser(t, bot, playerID)
			waitUser(t, bot, playerBID)
			const ssrc = 4242
			send := func(seqs ...uint16) {
				for _, seq := range seqs {
					pkt, err := srv.Seal(botID, rtp.Header{PayloadType: rtp.PayloadTypeOpus, Sequence: seq, Timestamp: uint32(seq) * 960, SSRC: ssrc},
						[]byte(fmt.Sprint("opus ", seq)))
					if err != nil {
						t.Fatal(err)
					}
					if err := srv.InjectUDP(botID, pkt); err != nil {
						t.Fatal(err)
					}
				}
			}
			expect := func(what, user string, want []uint16) {
				t.Helper()
				var got []uint16
				lost := 0
				timeout := time.After(hangGuard)
				for len(got) < len(want) {
					select {
					case p := <-bot.Packets():
						if p.SSRC != ssrc {
							continue
						}
						if p.UserID != user {
							t.Fatalf("%s: packet %d delivered as %s's, want %s's", what, p.Sequence, p.UserID, user)
						}
						got = append(got, p.Sequence)
						lost += p.Lost
					case <-timeout:
						t.Fatalf("%s: got %v, want %v; stats %+v", what, got, want, bot.Stats())
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want) || lost != 0 {
					t.Fatalf("%s: got %v (lost %d), want %v", what, got, lost, want)
				}
			}
			srv.AnnounceSpeaker(botID, playerID, ssrc)
			events.wait(t, "speaking", kind(conn.EventSpeaking, playerID))
			send(3000, 3001, 3002, 3003, 3004, 3005)
			expect("the first owner", playerID, []uint16{3000, 3001, 3002, 3003, 3004, 3005})
			if tc.leaves {
				player.Close()
				events.wait(t, "player left", kind(conn.EventUserLeft, playerID))
			}
			srv.AnnounceSpeaker(botID, playerBID, ssrc)
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if err := voicetest.Wait(ctx, func() bool {
				n := 0
				for _, e := range events.snapshot() {
					if e.Kind == conn.EventSpeaking && e.UserID == playerBID {
						n++
					}
				}
				return n > 0
			}); err != nil {
				t.Fatal("the new owner's op 5 never arrived")
			}
			send(2991, 2990, 2992, 2993, 2994, 2995)
			expect("the new owner", playerBID, []uint16{2990, 2991, 2992, 2993, 2994, 2995})
			if st := bot.Stats(); st.Late != 0 || st.Lost != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
