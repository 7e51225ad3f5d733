package conn_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/dave/davetest"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

const (
	chanB     = "666666666666666666"
	playerBID = "777777777777777777"
)

// dialAt connects user with explicit parameters.
func dialAt(t *testing.T, p conn.Params, mod func(*conn.Config)) *conn.Conn {
	t.Helper()
	cfg := conn.Config{Logger: quiet(), Backoff: conn.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Attempts: 5},
		HandshakeTimeout: time.Minute}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	c, err := conn.Dial(ctx, p, cfg)
	if err != nil {
		t.Fatalf("dial %s in %s: %v", p.UserID, p.ChannelID, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// inB moves parameters to channel B of a twoChannels server, with a new
// session.
func inB(p conn.Params) conn.Params {
	p.ChannelID = chanB
	p.SessionID += "-b"
	p.Token += "-b"
	return p
}

func newGateway(t *testing.T, channel string) *davetest.Gateway {
	t.Helper()
	gw, err := davetest.New(parseID(t, channel), davetest.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	return gw
}

// twoChannels is one fake voice server hosting two DAVE channels: A
// (chanID) and B (chanB); a token ending in "-b" joins B.
func twoChannels(t *testing.T) (srv *voicetest.Server, a, b *daveCall) {
	t.Helper()
	gwA, gwB := newGateway(t, chanID), newGateway(t, chanB)
	tap := &wireTap{byUser: map[string][][]byte{}}
	srv = server(t, voicetest.Config{DAVEVersion: dave.ProtocolVersion, RequireDAVE: true, Observe: tap.observe,
		Channel: func(id gateway.Identify) string {
			if strings.HasSuffix(id.Token, "-b") {
				return chanB
			}
			return chanID
		},
		ChannelDAVE: func(ch string) voicetest.DAVEHandler {
			if ch == chanB {
				return gwB
			}
			return gwA
		}})
	return srv, &daveCall{srv: srv, gw: gwA, tap: tap}, &daveCall{srv: srv, gw: gwB, tap: tap}
}

// eventLog keeps a connection's events.
type eventLog struct {
	mu     sync.Mutex
	events []conn.Event
}

func recordEvents(c *conn.Conn) *eventLog {
	l := &eventLog{}
	go func() {
		for e := range c.Events() {
			l.mu.Lock()
			l.events = append(l.events, e)
			l.mu.Unlock()
		}
	}()
	return l
}

// wait returns the first event that matches, waiting up to 10 s.
func (l *eventLog) wait(t *testing.T, what string, match func(conn.Event) bool) conn.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var found conn.Event
	err := voicetest.Wait(ctx, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, e := range l.events {
			if match(e) {
				found = e
				return true
			}
		}
		return false
	})
	if err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("no event %s among %v", what, l.events)
	}
	return found
}

func kind(k conn.EventKind, user string) func(conn.Event) bool {
	return func(e conn.Event) bool { return e.Kind == k && (user == "" || e.UserID == user) }
}

// moveReport is what a listener heard from a talker across a move.
type moveReport struct {
	sent       int           // frames the talker sent
	before     int           // of them, sent before Switch was called
	during     int           // sent while Switch ran
	took       time.Duration // how long Switch took
	received   [][]byte      // the talker's frames the mover received
	lost       int
	switchErr  error
	doneBefore int // index of the first frame sent after Switch returned
}

// talkAcrossMove has talker send frames (20 ms apart) to mover, and calls
// mover.Switch(p) before frame at; it collects what mover received from
// the talker until the stream went quiet.
func talkAcrossMove(t *testing.T, mover, talker *conn.Conn, talkerID string, frames [][]byte, at int, p conn.Params) moveReport {
	t.Helper()
	return talkAcross(t, mover, talker, talkerID, frames, at, func(ctx context.Context) error { return mover.Switch(ctx, p) })
}

// talkAcross has talker send frames (20 ms apart) to mover, and runs move
// before frame at; it collects what mover received from the talker until
// the stream went quiet.
func talkAcross(t *testing.T, mover, talker *conn.Conn, talkerID string, frames [][]byte, at int, move func(context.Context) error) moveReport {
	t.Helper()
	var r moveReport
	var rx [][]byte
	var lost int
	var heard atomic.Int64 // frames from the talker so far
	collected := make(chan struct{})
	stopCollect := make(chan struct{})
	go func() {
		defer close(collected)
		for {
			select {
			case pk, ok := <-mover.Packets():
				if !ok {
					return
				}
				if pk.UserID == talkerID {
					rx = append(rx, pk.Opus)
					lost += pk.Lost
					heard.Add(1)
				}
			case <-stopCollect:
				return
			}
		}
	}()
	switched := make(chan struct{})
	r.doneBefore = -1
	r.sent = streamFrames(t, talker, frames, func(i int) {
		if i == at {
			r.before = i
			// The move starts once what was said before it arrived (on
			// a loaded machine a frame can take a while): the check is
			// that the old channel stops at the move, not how fast.
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if err := voicetest.Wait(ctx, func() bool { return heard.Load() >= int64(at) }); err != nil {
				t.Fatalf("before the move the bot received %d of the %d frames sent", heard.Load(), at)
			}
			go func() {
				defer close(switched)
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				start := time.Now()
				r.switchErr = move(ctx)
				r.took = time.Since(start)
			}()
		}
		if i > at && r.doneBefore < 0 {
			select {
			case <-switched:
				r.doneBefore = i
			default:
				r.during++
			}
		}
	})
	<-switched
	if r.doneBefore < 0 {
		r.doneBefore = len(frames)
	}
	time.Sleep(300 * time.Millisecond)
	close(stopCollect)
	<-collected
	r.received, r.lost = rx, lost
	return r
}

// checkOldChannelStops verifies that the mover heard the talker of its
// old channel in order until the move, and nothing it said afterwards.
func checkOldChannelStops(t *testing.T, what string, r moveReport, frames [][]byte) {
	t.Helper()
	t.Logf("%s: the old channel's talker sent %d frames (%d before the move, %d while Switch ran for %s, %d after); the bot received %d of them, %d reported lost",
		what, r.sent, r.before, r.during, r.took.Round(time.Millisecond), r.sent-r.before-r.during, len(r.received), r.lost)
	if r.switchErr != nil {
		t.Fatalf("%s: Switch: %v", what, r.switchErr)
	}
	// The talker says everything until the move; once the bot has left
	// it is alone, the gateway resets its group (op 24 epoch 1) and it
	// has no key to send with until someone joins: no key, no frame.
	if r.sent < r.before || r.sent > len(frames) {
		t.Fatalf("%s: the talker sent %d of %d frames, %d of them before the move", what, r.sent, len(frames), r.before)
	}
	// Everything said before the move arrives, in order, except perhaps
	// the last frame, sent as the bot left; nothing said after it does.
	if len(r.received) < r.before-1 || len(r.received) > r.doneBefore || r.lost != 0 {
		t.Fatalf("%s: received %d frames (%d lost), want between %d and %d", what, len(r.received), r.lost, r.before-1, r.doneBefore)
	}
	sameFrames(t, what+", old channel", r.received, frames[:len(r.received)])
}

func TestSwitchToAnotherChannelOnTheSameServer(t *testing.T) {
	t.Parallel()
	srv, a, b := twoChannels(t)
	bot := dialAt(t, params(srv, botID), daveConfig)
	events := recordEvents(bot)
	playerA := dialAt(t, params(srv, playerID), daveConfig)
	playerB := dialAt(t, inB(params(srv, playerBID)), daveConfig)
	codeA := a.settle(t, 1, bot, playerA)
	if b.gw.Epoch() != 0 {
		t.Fatalf("channel B has a group with one member: epoch %d", b.gw.Epoch())
	}
	if users := bot.Users(); !slices.Equal(users, []string{playerID}) {
		t.Fatalf("before the move the bot sees %v", users)
	}

	// Player A talks while the bot is moved to channel B.
	talk := cycle(speechOpus(t, "Hold the door! The orcs are coming up the stairs."), 150)
	r := talkAcrossMove(t, bot, playerA, playerID, talk, 50, inB(params(srv, botID)))
	checkOldChannelStops(t, "move to another channel", r, talk)

	moved := events.wait(t, "moved", kind(conn.EventMoved, ""))
	if moved.ChannelID != chanB {
		t.Fatalf("moved event names channel %q", moved.ChannelID)
	}
	events.wait(t, "player A left", kind(conn.EventUserLeft, playerID))
	events.wait(t, "player B joined", kind(conn.EventUserJoined, playerBID))
	codeB := b.settle(t, 1, bot, playerB)
	if codeA == codeB {
		t.Fatal("channel B's group has channel A's privacy code")
	}
	if users := bot.Users(); !slices.Equal(users, []string{playerBID}) {
		t.Fatalf("after the move the bot sees %v, want only player B", users)
	}
	// Channel A saw the bot leave: the player was told, and its group
	// shrank to the player alone.
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool {
		return !slices.Contains(playerA.Users(), botID) && !slices.Contains(a.gw.Members(), botID)
	}); err != nil {
		t.Fatalf("channel A did not see the bot leave: player A sees %v, group %v", playerA.Users(), a.gw.Members())
	}

	// In channel B, both ways, DAVE-protected.
	speech := speechOpus(t, "Welcome to the lower hall, stranger. Mind the traps.")
	sent := streamFrames(t, playerB, speech, nil)
	if err := playerB.SetSpeaking(false); err != nil {
		t.Fatal(err)
	}
	got, lost := collect(bot, playerBID, sent+5)
	t.Logf("after the move, player B → bot: sent %d frames, received %d (5 of them silence), %d lost; DAVE failures %d",
		sent, len(got), lost, bot.Stats().E2EEFailed)
	if len(got) != sent+5 || lost != 0 || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("player B → bot: sent %d, got %d, lost %d; %+v", sent, len(got), lost, bot.Stats())
	}
	sameFrames(t, "player B → bot", got, speech)
	wire := b.tap.frames(playerBID)
	checkProtected(t, wire[len(wire)-len(speech)-5:], speech)

	reply := speechOpus(t, "I was sent by the council.")
	sent = streamFrames(t, bot, reply, nil)
	got, lost = collect(playerB, botID, sent)
	t.Logf("after the move, bot → player B: sent %d, received %d, %d lost", sent, len(got), lost)
	if len(got) != sent || lost != 0 {
		t.Fatalf("bot → player B: sent %d, got %d, lost %d", sent, len(got), lost)
	}
	sameFrames(t, "bot → player B", got, reply)
	if got, _ := collect(playerA, botID, 0); len(got) != 0 {
		t.Fatalf("player A, in the old channel, still hears the bot: %d frames", len(got))
	}
}

func TestSwitchToANewVoiceServer(t *testing.T) {
	t.Parallel()
	old, next := newDAVECall(t), newDAVECall(t)
	bot := dialAt(t, params(old.srv, botID), daveConfig)
	events := recordEvents(bot)
	stayer := dialAt(t, params(old.srv, playerID), daveConfig)
	old.settle(t, 1, bot, stayer)
	// Someone is already on the new server.
	there := dialAt(t, params(next.srv, playerBID), daveConfig)

	talk := cycle(speechOpus(t, "The storm is breaking over the harbour."), 120)
	p := params(next.srv, botID)
	p.SessionID, p.Token = "sess-new-server", "tok-new-server"
	r := talkAcrossMove(t, bot, stayer, playerID, talk, 40, p)
	checkOldChannelStops(t, "voice server change", r, talk)
	events.wait(t, "moved", kind(conn.EventMoved, ""))

	// The old server saw the bot leave.
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool {
		return !old.srv.Connected(botID) && !slices.Contains(stayer.Users(), botID) && !slices.Contains(old.gw.Members(), botID)
	}); err != nil {
		t.Fatalf("the old server did not see the bot leave: connected %v, player sees %v, group %v",
			old.srv.Connected(botID), stayer.Users(), old.gw.Members())
	}
	relayedOld := old.srv.Relayed()

	// The bot receives and sends on the new server, in its new group.
	next.settle(t, 1, bot, there)
	speech := speechOpus(t, "Quick, into the lighthouse before the tide comes in.")
	sent := streamFrames(t, there, speech, nil)
	got, lost := collect(bot, playerBID, sent)
	t.Logf("new server, player → bot: sent %d, received %d, %d lost", sent, len(got), lost)
	if len(got) != sent || lost != 0 || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("player → bot on the new server: sent %d, got %d, lost %d; %+v", sent, len(got), lost, bot.Stats())
	}
	sameFrames(t, "new server, player → bot", got, speech)
	reply := speechOpus(t, "Lead the way.")
	sent = streamFrames(t, bot, reply, nil)
	got, lost = collect(there, botID, sent)
	t.Logf("new server, bot → player: sent %d, received %d, %d lost", sent, len(got), lost)
	if len(got) != sent || lost != 0 {
		t.Fatalf("bot → player on the new server: sent %d, got %d, lost %d", sent, len(got), lost)
	}
	sameFrames(t, "new server, bot → player", got, reply)
	checkProtected(t, next.tap.frames(botID), reply)
	if old.srv.Relayed() != relayedOld {
		t.Fatalf("the old server still relays: %d packets, was %d", old.srv.Relayed(), relayedOld)
	}
}

// closedEndpoint is a voice endpoint nobody listens on.
func closedEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "ws://" + addr + "/"
}

func TestSwitchToARefusingServerRejoins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		endpoint func(t *testing.T) string
		wantErr  string
	}{
		{"closed port", closedEndpoint, "connection refused"},
		{"session invalid (4006)", func(t *testing.T) string {
			srv := server(t, voicetest.Config{})
			srv.RefuseIdentify(gateway.CloseSessionInvalid)
			return srv.Endpoint()
		}, "4006"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := server(t, voicetest.Config{})
			good := server(t, voicetest.Config{})
			const initial = 80 * time.Millisecond
			var mu sync.Mutex
			var rejoins []time.Time
			bot := dialAt(t, params(home, botID), func(c *conn.Config) {
				c.Backoff = conn.Backoff{Initial: initial, Max: time.Second, Attempts: 3}
				c.Rejoin = func(ctx context.Context) (conn.Params, error) {
					mu.Lock()
					rejoins = append(rejoins, time.Now())
					mu.Unlock()
					p := params(good, botID)
					p.SessionID, p.Token = "sess-rejoined", "tok-rejoined"
					return p, nil
				}
			})
			events := recordEvents(bot)
			p := params(home, botID)
			p.Endpoint, p.SessionID, p.Token = tc.endpoint(t), "sess-refused", "tok-refused"
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			// The rejoin waits the backoff from a moment after Switch is
			// called: measured from the call, the wait is never shorter
			// than the backoff, however late Switch returns on a loaded
			// machine (measured from its return, it once was: 61 ms of 80
			// ±20%).
			called := time.Now()
			err := bot.Switch(ctx, p)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Switch to a refusing server: %v, want an error naming %q", err, tc.wantErr)
			}
			if werr := bot.WriteOpus(frame(0)); !errors.Is(werr, conn.ErrNotReady) {
				t.Fatalf("writing while rejoining: %v, want ErrNotReady", werr)
			}
			events.wait(t, "re-identified", kind(conn.EventReidentified, ""))
			mu.Lock()
			n, first := len(rejoins), rejoins[0]
			mu.Unlock()
			wait := first.Sub(called)
			t.Logf("%s: Switch failed with %q; rejoined through Config.Rejoin %d time(s), the first after %s (backoff %s ±20%%)",
				tc.name, err, n, wait.Round(time.Millisecond), initial)
			if n != 1 || wait < initial*8/10 {
				t.Fatalf("rejoins %d, first after %s; want one, after the backoff", n, wait)
			}
			if st := bot.Stats(); st.Reidentifies != 1 {
				t.Fatalf("stats %+v", st)
			}
			// The bot works on the server Rejoin named.
			player := dial(t, good, playerID, nil)
			waitUser(t, player, botID)
			sent := stream(t, player, 30, nil)
			got, lost := collect(bot, playerID, sent)
			t.Logf("%s: after rejoining, player → bot: sent %d, received %d, %d lost", tc.name, sent, len(got), lost)
			if len(got) != sent || lost != 0 {
				t.Fatalf("after rejoining the bot got %d of %d frames, %d lost", len(got), sent, lost)
			}
			sameFrames(t, "after rejoining", got, framesUpTo(sent))
			sent = stream(t, bot, 20, nil)
			if got, _ := collect(player, botID, sent); len(got) != sent {
				t.Fatalf("after rejoining the player got %d of %d frames", len(got), sent)
			}
			if home.Connected(botID) {
				t.Fatal("the old server still has the bot")
			}
		})
	}
}

func framesUpTo(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = frame(i)
	}
	return out
}

func TestSwitchGivesUpWhenRejoinKeepsFailing(t *testing.T) {
	t.Parallel()
	home := server(t, voicetest.Config{})
	const attempts = 3
	var rejoins atomic.Int32
	errNoChannel := errors.New("the main gateway did not answer the voice state update")
	bot := dialAt(t, params(home, botID), func(c *conn.Config) {
		c.Backoff = conn.Backoff{Initial: 20 * time.Millisecond, Max: 80 * time.Millisecond, Attempts: attempts}
		c.Rejoin = func(ctx context.Context) (conn.Params, error) {
			rejoins.Add(1)
			return conn.Params{}, errNoChannel
		}
	})
	p := params(home, botID)
	p.Endpoint = closedEndpoint(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	start := time.Now()
	if err := bot.Switch(ctx, p); err == nil {
		t.Fatal("Switch to a closed port succeeded")
	}
	var closed conn.Event
	timeout := time.After(hangGuard)
	for done := false; !done; {
		select {
		case e, ok := <-bot.Events():
			if !ok {
				t.Fatal("events closed without EventClosed")
			}
			if e.Kind == conn.EventReidentified || e.Kind == conn.EventMoved {
				t.Fatalf("unexpected %v", e.Kind)
			}
			if e.Kind == conn.EventClosed {
				closed, done = e, true
			}
		case <-timeout:
			t.Fatalf("no EventClosed; %d rejoins so far", rejoins.Load())
		}
	}
	t.Logf("Rejoin failing every time: gave up after %d attempts in %s: %v", rejoins.Load(), time.Since(start).Round(time.Millisecond), closed.Err)
	if !errors.Is(closed.Err, reconnect.ErrGaveUp) || !errors.Is(closed.Err, errNoChannel) {
		t.Fatalf("closed with %v, want the give-up naming the rejoin error", closed.Err)
	}
	if n := rejoins.Load(); n != attempts {
		t.Fatalf("Rejoin called %d times, want %d", n, attempts)
	}
	// The connection has ended: Packets is closed without Close being
	// called, and no retry follows.
	select {
	case _, ok := <-bot.Packets():
		if ok {
			t.Fatal("a packet after the end")
		}
	case <-time.After(hangGuard):
		t.Fatal("Packets was not closed after giving up")
	}
	time.Sleep(200 * time.Millisecond)
	if n := rejoins.Load(); n != attempts {
		t.Fatalf("Rejoin called again after giving up: %d", n)
	}
	if err := bot.WriteOpus(frame(0)); !errors.Is(err, conn.ErrClosed) {
		t.Fatalf("write after the end: %v", err)
	}
	if err := bot.Switch(ctx, params(home, botID)); !errors.Is(err, conn.ErrClosed) {
		t.Fatalf("switch after the end: %v", err)
	}
	if err := bot.Close(); !errors.Is(err, reconnect.ErrGaveUp) {
		t.Fatalf("Close after the end: %v, want the error that ended it", err)
	}
}

func TestCloseInterruptsASwitch(t *testing.T) {
	t.Parallel()
	home := server(t, voicetest.Config{})
	bot := dial(t, home, botID, nil)
	// A server that accepts TCP and never answers.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var held []net.Conn
	var hmu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			hmu.Lock()
			held = append(held, c)
			hmu.Unlock()
		}
	}()
	defer func() {
		hmu.Lock()
		for _, c := range held {
			c.Close()
		}
		hmu.Unlock()
	}()
	p := params(home, botID)
	p.Endpoint = "ws://" + l.Addr().String() + "/"
	done := make(chan error, 1)
	go func() { done <- bot.Switch(context.Background(), p) }()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := bot.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Logf("Close during a hanging Switch returned after %s; Switch returned %v", time.Since(start).Round(time.Millisecond), err)
		if !errors.Is(err, conn.ErrClosed) {
			t.Fatalf("Switch returned %v, want ErrClosed", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Switch did not end when the connection closed")
	}
}

// snapshot returns the events so far.
func (l *eventLog) snapshot() []conn.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}
