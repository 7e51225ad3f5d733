package bot_test

// Adversarial review of the joiner (bot/voicelink.go): Discord's answer to
// our own Join while the session is watched (a connection's Rejoin) is not
// a move, a real move during the join is still reported. Discord is an
// independent peer here: its updates come in any order a network allows,
// and a human may drag the bot at any moment.
//
// The session handles events in the order Discord sent them
// (SyncEvents), so that what the joiner saw is known when the test moves
// on: settled sends a marker event and waits until its handler ran, after
// every update sent before it. The fake answers op 4 itself in setup and
// not after manual(): the test then sends each half of Discord's answer
// when it chooses.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/voice/conn"
)

const (
	atkEndpoint  = "voice.example:443"
	atkEndpoint2 = "voice2.example:443"
	atkMark      = "GLYPHOXA_TEST_MARK"
)

type joinerWorld struct {
	t     *testing.T
	fake  *discordtest.Server
	sess  *discordgo.Session
	j     *bot.Joiner
	marks chan string
	n     int
}

func newJoinerWorld(t *testing.T, ctx context.Context) *joinerWorld {
	t.Helper()
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.AddGuild(&discordgo.Guild{ID: guildID})
	fake.SetVoiceEndpoint(atkEndpoint)
	sess, _ := discordgo.New("Bot x")
	sess.LogLevel = discordgo.LogError
	sess.SyncEvents = true
	fake.Attach(sess)
	j := bot.NewJoiner(sess)
	for _, h := range j.Handlers() {
		sess.AddHandler(h)
	}
	w := &joinerWorld{t: t, fake: fake, sess: sess, j: j, marks: make(chan string, 16)}
	sess.AddHandler(func(_ *discordgo.Session, e *discordgo.Event) {
		if e.Type != atkMark {
			return
		}
		var m struct {
			N string `json:"n"`
		}
		json.Unmarshal(e.RawData, &m)
		w.marks <- m.N
	})
	if err := sess.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	for {
		sess.State.RLock()
		u := sess.State.User
		sess.State.RUnlock()
		if u != nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no READY from the fake Discord")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return w
}

// settled returns once the joiner handled every update sent before.
func (w *joinerWorld) settled(ctx context.Context) {
	w.t.Helper()
	w.n++
	n := strconv.Itoa(w.n)
	if err := w.fake.Dispatch(atkMark, map[string]any{"n": n}); err != nil {
		w.t.Fatal(err)
	}
	for {
		select {
		case m := <-w.marks:
			if m == n {
				return
			}
		case <-ctx.Done():
			w.t.Fatal("the session did not handle the marker event")
		}
	}
}

// manual makes the fake leave op 4 unanswered: the test answers.
func (w *joinerWorld) manual() { w.fake.SetVoiceEndpoint("") }

// state sends the bot's VOICE_STATE_UPDATE (channel "" for none).
func (w *joinerWorld) state(channel, session string) {
	w.t.Helper()
	var ch any
	if channel != "" {
		ch = channel
	}
	if err := w.fake.Dispatch("VOICE_STATE_UPDATE", map[string]any{"guild_id": guildID, "channel_id": ch,
		"user_id": w.fake.BotUser.ID, "session_id": session}); err != nil {
		w.t.Fatal(err)
	}
}

// server sends VOICE_SERVER_UPDATE.
func (w *joinerWorld) server(token, endpoint string) {
	w.t.Helper()
	if err := w.fake.Dispatch("VOICE_SERVER_UPDATE", map[string]any{"token": token, "guild_id": guildID,
		"endpoint": endpoint}); err != nil {
		w.t.Fatal(err)
	}
}

// op4 waits for the bot's next voice state update (op 4) and returns its
// channel ("" to leave).
func (w *joinerWorld) op4(ctx context.Context) string {
	w.t.Helper()
	for {
		select {
		case op := <-w.fake.GatewayOps():
			if op.Op != 4 {
				continue
			}
			var d struct {
				ChannelID *string `json:"channel_id"`
			}
			json.Unmarshal(op.Data, &d)
			if d.ChannelID == nil {
				return ""
			}
			return *d.ChannelID
		case <-ctx.Done():
			w.t.Fatal("the joiner sent no voice state update")
			return ""
		}
	}
}

// join joins channel with the fake answering.
func (w *joinerWorld) join(ctx context.Context, channel string) conn.Params {
	w.t.Helper()
	p, err := w.j.Join(ctx, guildID, channel)
	if err != nil {
		w.t.Fatal(err)
	}
	w.op4(ctx)
	w.settled(ctx)
	return p
}

type joinResult struct {
	p   conn.Params
	err error
}

// rejoin starts the guild's Rejoin in the background, as a connection's
// reconnector does (with its connection's context: no deadline).
func (w *joinerWorld) rejoin(ctx context.Context) <-chan joinResult {
	done := make(chan joinResult, 1)
	go func() {
		p, err := w.j.Rejoin(guildID)(ctx)
		done <- joinResult{p, err}
	}()
	return done
}

func atkCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// report waits for the watcher's next report; with none by the hang
// guard, the test fails with the message (format and args).
func report(t *testing.T, ctx context.Context, watch <-chan conn.Params, format string, args ...any) conn.Params {
	t.Helper()
	select {
	case np := <-watch:
		return np
	case <-ctx.Done():
		t.Fatalf(format, args...)
		return conn.Params{}
	}
}

// noReport fails the test, with format naming the report (its one %s),
// when the watcher holds one it has not read.
func noReport(t *testing.T, watch <-chan conn.Params, format string) {
	t.Helper()
	select {
	case np := <-watch:
		t.Fatalf(format, brief(np))
	default:
	}
}

func brief(p conn.Params) string {
	return fmt.Sprintf("{channel %s, session %s, token %s, endpoint %s}", p.ChannelID, p.SessionID, p.Token, p.Endpoint)
}

// TestAttackJoinerMoveDuringRejoin (failed since 2c6e9e8; at its parent the
// watcher was told of the move, though the connection, blocked on its switch
// lock behind the rejoin, could not follow it either: see voicesession's
// TestAttackLinkMovedWhileRejoining, which fails at both): a connection
// rejoins channel 700 (its session was lost) while the session is watched;
// Discord answers the state half, and before the server half a member drags
// the bot to 701. The bot is in 701 now, with the move's session and token.
// Either the rejoin answers with 701 or the watcher is told of the move; the
// join must not wait for 700, where the bot no longer is. The connection's
// reconnector rejoins with its connection's context, which has no deadline
// (conn.redial), and holds the connection's switch lock while it does: a
// join that never ends leaves the bot deaf for good.
func TestAttackJoinerMoveDuringRejoin(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	watch := w.j.Watch(guildID)
	w.manual()
	rctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := w.rejoin(rctx)
	if ch := w.op4(ctx); ch != "700" {
		t.Fatalf("the rejoin asked for %q", ch)
	}
	w.state("700", "answer-session")
	w.state("701", "move-session")
	w.server("answer-token", atkEndpoint)
	w.server("move-token", atkEndpoint)
	w.settled(ctx)
	var rejoined *joinResult
	for {
		select {
		case np := <-watch:
			if np.ChannelID != "701" || np.SessionID != "move-session" || np.Token != "move-token" {
				t.Fatalf("the watcher was told of %s, want the move to 701", brief(np))
			}
			return
		case r := <-done:
			rejoined = &r
			if r.err == nil && r.p.ChannelID == "701" && r.p.SessionID == "move-session" {
				return // the rejoin answered with where the bot is
			}
			done = nil
		case <-ctx.Done():
			if rejoined != nil {
				t.Fatalf("a member moved the bot to 701 during a rejoin: the rejoin returned %s, %v and the watcher was never told of the move",
					brief(rejoined.p), rejoined.err)
			}
			t.Fatalf("a member moved the bot to 701 while a rejoin of 700 waited for Discord's answer: %s later the rejoin "+
				"still waits (for the bot to be in 700) and the watcher was told nothing (joiner channel %q)", hangGuard, w.j.Channel(guildID))
		}
	}
}

// TestAttackJoinerRejoinWhileGatewayIsDown (failed at 2c6e9e8 and at its
// parent: discordgo's ChannelVoiceJoinManual writes to its nil websocket):
// the main gateway is down (discordgo between two reconnect attempts: its
// websocket is nil for the whole backoff, up to ten minutes) when a voice
// connection that lost its session rejoins. The rejoin must not panic: the
// panic was on the reconnector's goroutine and ended the process. It now
// waits for the gateway to come back, and fails when its caller gives up. A network blip that drops
// both the voice and the main gateway connections leads there once the voice
// resumes fail.
func TestAttackJoinerRejoinWhileGatewayIsDown(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	w.j.Watch(guildID)
	w.sess.Close()
	// The rejoin waits for the gateway to come back, until its caller
	// gives up: here at once (a caller that gave up; no clock decides it).
	gaveUp, cancel := context.WithCancel(ctx)
	cancel()
	var err error
	panicked := func() (v any) {
		defer func() { v = recover() }()
		_, err = w.j.Rejoin(guildID)(gaveUp)
		return nil
	}()
	if panicked != nil {
		t.Fatalf("a rejoin while the main gateway is down panicked (in production: on the voice connection's reconnector "+
			"goroutine, the process dies): %v", panicked)
	}
	if err == nil {
		t.Fatal("a rejoin with the main gateway down succeeded")
	}
}

// TestAttackJoinerSupersededMoveAfterRejoin (failed at 2c6e9e8 and at its
// parent): a member moves the bot to 701 and the watcher's report of it is
// not read yet (the link is busy switching); then the connection rejoins 701
// and gets a new session. Afterwards the watcher must not hand out the
// move's session, which the rejoin's replaced: the link would switch the
// fresh connection to it.
func TestAttackJoinerSupersededMoveAfterRejoin(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	watch := w.j.Watch(guildID)
	if err := w.fake.MoveBot(guildID, "701"); err != nil {
		t.Fatal(err)
	}
	for len(watch) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the move was not reported")
		}
		time.Sleep(5 * time.Millisecond)
	}
	rejoined, err := w.j.Rejoin(guildID)(ctx)
	if err != nil || rejoined.ChannelID != "701" {
		t.Fatalf("rejoin %s %v", brief(rejoined), err)
	}
	w.op4(ctx)
	w.settled(ctx)
	select {
	case np := <-watch:
		if np != rejoined {
			t.Fatalf("after the rejoin answered %s, the watcher handed out %s, the move's session the rejoin replaced",
				brief(rejoined), brief(np))
		}
	default:
	}
}

// TestAttackJoinerKeepsTheNewestMove (failed at 2c6e9e8 and at its parent:
// older than the commit): a member drags the bot to 701, and while the link
// has not read that report (it is switching), to 702. The watcher must end
// on 702: the bot is there. (Its channel holds one report and a newer one
// that finds it full is dropped, while emitted says it was told.)
func TestAttackJoinerKeepsTheNewestMove(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	watch := w.j.Watch(guildID)
	if err := w.fake.MoveBot(guildID, "701"); err != nil {
		t.Fatal(err)
	}
	for len(watch) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the move was not reported")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := w.fake.MoveBot(guildID, "702"); err != nil {
		t.Fatal(err)
	}
	w.settled(ctx)
	// Past the settle delay, so the second report was made (a slow
	// machine may make it later: the test then passes by the timing).
	time.Sleep(time.Second)
	var last conn.Params
	for last.ChannelID != "702" {
		select {
		case last = <-watch:
		case <-ctx.Done():
			t.Fatalf("the bot was moved to 701, then to 702 while the first report was unread: the watcher reported %s "+
				"and never 702; the link stays on a session Discord replaced", brief(last))
		}
	}
}

// TestAttackJoinerMoveWhileConnecting (failed before the fix, older than
// 2c6e9e8): GatewayLink.Join joined, dialled the voice connection (a
// handshake: a while) and only then watched. A member who dragged the bot
// meanwhile had moved it away from the session the connection dialled; the
// watch started from where the bot was then, so it was never told, and the
// connection was left on the replaced session (4014, then the end of the
// connection after its move wait). The link now watches before it joins:
// the join's own answer is not reported, the member's move is.
func TestAttackJoinerMoveWhileConnecting(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	watch := w.j.Watch(guildID)
	p := w.join(ctx, "700")
	if err := w.fake.MoveBot(guildID, "701"); err != nil {
		t.Fatal(err)
	}
	np := report(t, ctx, watch, "the join answered %s; a member moved the bot to 701 while the link connected; the watcher was never told",
		brief(p))
	if np.ChannelID != "701" {
		t.Fatalf("the join answered %s; the watcher was told of %s, want the member's move to 701", brief(p), brief(np))
	}
}

// TestAttackJoinerTwoRejoinsAtOnce: two joins of the guild wait at once
// (both op 4 sent), Discord answers the first, both joins return it, then
// answers the second: the session is the second's now. Whoever connected
// with the first answer must learn of the second (the watcher), else it
// holds a session Discord replaced.
func TestAttackJoinerTwoRejoinsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	watch := w.j.Watch(guildID)
	w.manual()
	a, b := w.rejoin(ctx), w.rejoin(ctx)
	w.op4(ctx)
	w.op4(ctx)
	w.state("700", "first-session")
	w.server("first-token", atkEndpoint)
	ra, rb := <-a, <-b
	if ra.err != nil || rb.err != nil {
		t.Fatal(ra.err, rb.err)
	}
	w.state("700", "second-session")
	w.server("second-token", atkEndpoint)
	w.settled(ctx)
	if ra.p.SessionID == "second-session" && rb.p.SessionID == "second-session" {
		return
	}
	np := report(t, ctx, watch, "two rejoins returned %s and %s; Discord's session is the second answer's, and nobody was told",
		brief(ra.p), brief(rb.p))
	if np.SessionID != "second-session" || np.Token != "second-token" {
		t.Fatalf("told of %s, want the second session", brief(np))
	}
}

// TestAttackJoinerFailedRejoinThenMove: a rejoin whose context ends
// before Discord answers fails; the joiner must not stay "joining" (which
// holds back every report): a later move is reported.
func TestAttackJoinerFailedRejoinThenMove(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	watch := w.j.Watch(guildID)
	w.manual()
	rctx, stop := context.WithCancel(ctx)
	done := w.rejoin(rctx)
	w.op4(ctx)
	stop()
	if r := <-done; r.err == nil {
		t.Fatalf("a rejoin without an answer returned %s", brief(r.p))
	}
	w.state("701", "move-session")
	w.server("move-token", atkEndpoint)
	if np := report(t, ctx, watch, "after a failed rejoin a move was not reported"); np.ChannelID != "701" || np.SessionID != "move-session" {
		t.Fatalf("told of %s", brief(np))
	}
}

// TestAttackJoinerUnwatchDuringRejoin: the link stops watching (Drop)
// while a rejoin waits; its answer comes; a new watch from there is not
// told of that answer, and is told of a real move.
func TestAttackJoinerUnwatchDuringRejoin(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	w.j.Watch(guildID)
	w.manual()
	done := w.rejoin(ctx)
	w.op4(ctx)
	w.j.Unwatch(guildID)
	w.state("700", "answer-session")
	w.server("answer-token", atkEndpoint)
	r := <-done
	if r.err != nil || r.p.SessionID != "answer-session" {
		t.Fatalf("rejoin %s %v", brief(r.p), r.err)
	}
	w.settled(ctx)
	watch := w.j.Watch(guildID)
	time.Sleep(time.Second) // past the settle delay: a report of the answer would be here
	noReport(t, watch, "a new watch was told of %s, the rejoin's own answer")
	w.state("701", "move-session")
	w.server("move-token", atkEndpoint)
	if np := report(t, ctx, watch, "the move after the rejoin was not reported"); np.ChannelID != "701" {
		t.Fatalf("told of %s", brief(np))
	}
}

// TestAttackJoinerLeaveDuringRejoin: the session ends (Leave) while a
// rejoin waits for its answer; Discord takes the bot out. The rejoin ends
// with its connection (its context); afterwards a rejoin has nowhere to go
// and nothing is reported; a new join and watch work.
func TestAttackJoinerLeaveDuringRejoin(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	watch := w.j.Watch(guildID)
	w.manual()
	rctx, stop := context.WithCancel(ctx)
	done := w.rejoin(rctx)
	w.op4(ctx)
	if err := w.j.Leave(guildID); err != nil {
		t.Fatal(err)
	}
	if ch := w.op4(ctx); ch != "" {
		t.Fatalf("leave asked for %q", ch)
	}
	w.state("", "gone")
	w.settled(ctx)
	stop() // the connection closes
	if r := <-done; r.err == nil {
		t.Fatalf("a rejoin ended by Leave returned %s", brief(r.p))
	}
	if p, err := w.j.Rejoin(guildID)(ctx); err == nil {
		t.Fatalf("a rejoin after Leave joined %s", brief(p))
	}
	noReport(t, watch, "after Leave the old watch was told of %s")
	w.fake.SetVoiceEndpoint(atkEndpoint)
	p := w.join(ctx, "702")
	watch = w.j.Watch(guildID)
	if err := w.fake.MoveBot(guildID, "703"); err != nil {
		t.Fatal(err)
	}
	if np := report(t, ctx, watch, "a move after a new join was not reported"); np.ChannelID != "703" || np.SessionID == p.SessionID {
		t.Fatalf("told of %s", brief(np))
	}
}

// TestAttackJoinerManyRejoinsWithMoves: rejoins from many goroutines
// interleaved with members' moves (the fake answering): every rejoin
// ends (those a move left waiting by their context), and after a last
// move the watcher ends on it.
func TestAttackJoinerManyRejoinsWithMoves(t *testing.T) {
	t.Parallel()
	ctx := atkCtx(t)
	w := newJoinerWorld(t, ctx)
	w.join(ctx, "700")
	// The link reads the watcher at once, as GatewayLink's follower does.
	seen := make(chan conn.Params, 64)
	go func(watch <-chan conn.Params) {
		for p := range watch {
			seen <- p
		}
	}(w.j.Watch(guildID))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			w.j.Rejoin(guildID)(rctx) // may fail: a move may take the bot elsewhere under it
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 5 {
			w.fake.MoveBot(guildID, strconv.Itoa(710+i))
		}
	}()
	wg.Wait()
	// Each rejoin sent one op 4. Discord answers them asynchronously: an
	// answer dispatched after the last move would put the bot back where
	// that rejoin asked (the joiner then rightly reports that channel), so
	// the last move waits for every answer.
	for range 8 {
		w.op4(ctx)
	}
	if err := w.fake.WaitVoiceAnswers(ctx); err != nil {
		t.Fatal(err)
	}
	w.settled(ctx)
	if err := w.fake.MoveBot(guildID, "799"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		select {
		case np := <-seen:
			if np.ChannelID == "799" {
				return
			}
			got = append(got, brief(np))
		case <-ctx.Done():
			t.Fatalf("after concurrent rejoins and moves the last move was not reported; reported %v, bot in %s",
				got, w.j.Channel(guildID))
		}
	}
}
