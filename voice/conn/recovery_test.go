package conn_test

import (
	"bytes"
	"context"
	"errors"
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

// spoiler is a DAVE gateway that, once spoiling, corrupts every commit
// and welcome it sends one user, and counts what that user sends.
type spoiler struct {
	gw     *davetest.Gateway
	victim string

	mu       sync.Mutex
	on       bool
	deaf     bool // drop the victim's op 31 and key packages: never re-add it
	invalid  int  // op 31 from the victim
	packages int  // op 26 from the victim
}

func (s *spoiler) spoil(ds []voicetest.Delivery) []voicetest.Delivery {
	s.mu.Lock()
	on := s.on
	s.mu.Unlock()
	if !on {
		return ds
	}
	for i, d := range ds {
		if d.UserID == s.victim && (d.Op == gateway.OpDAVEAnnounceCommit || d.Op == gateway.OpDAVEWelcome) && len(d.Binary) > 2 {
			b := append([]byte(nil), d.Binary...)
			for j := 2; j < len(b); j++ {
				b[j] ^= 0x5a
			}
			ds[i].Binary = b
		}
	}
	return ds
}

func (s *spoiler) Joined(u string) []voicetest.Delivery { return s.spoil(s.gw.Joined(u)) }
func (s *spoiler) Left(u string) []voicetest.Delivery   { return s.spoil(s.gw.Left(u)) }
func (s *spoiler) FromClient(u string, op gateway.Op, p []byte) []voicetest.Delivery {
	if u == s.victim {
		s.mu.Lock()
		recovery := false
		switch op {
		case gateway.OpDAVEInvalidCommitWelcome:
			s.invalid++
			recovery = true
		case gateway.OpDAVEKeyPackage:
			s.packages++
			recovery = true
		}
		deaf := s.deaf
		s.mu.Unlock()
		if deaf && recovery {
			return nil
		}
	}
	return s.spoil(s.gw.FromClient(u, op, p))
}

func (s *spoiler) set(on, deaf bool) {
	s.mu.Lock()
	s.on, s.deaf = on, deaf
	s.mu.Unlock()
}

func (s *spoiler) counts() (invalid, packages int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.invalid, s.packages
}

// manualNow is a settable clock for the DAVE session's backoff.
type manualNow struct {
	mu sync.Mutex
	t  time.Time
}

func (m *manualNow) now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

func (m *manualNow) advance(d time.Duration) {
	m.mu.Lock()
	m.t = m.t.Add(d)
	m.mu.Unlock()
}

// A gateway that keeps sending the bot commits and welcomes it cannot
// process: the bot refuses each (op 31), asks to be re-added with backoff,
// and after MaxRecoveries gives up with EventE2EEFailed; then it sends
// nothing more.
func TestDAVEGivesUpOnAGatewayThatKeepsSendingInvalidCommits(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, chanID)
	sp := &spoiler{gw: gw, victim: botID}
	tap := &wireTap{byUser: map[string][][]byte{}}
	srv := server(t, voicetest.Config{DAVEVersion: dave.ProtocolVersion, DAVE: sp, RequireDAVE: true, Observe: tap.observe})
	clk := &manualNow{t: time.Unix(1_800_000_000, 0)}
	bot := dial(t, srv, botID, func(c *conn.Config) {
		c.NewE2EE = dave.NewE2EE(quiet(), dave.WithClock(clk.now))
		c.Rejoin = func(ctx context.Context) (conn.Params, error) {
			p := params(srv, botID)
			p.SessionID, p.Token = "sess-rejoined", "tok-rejoined"
			return p, nil
		}
	})
	events := recordEvents(bot)
	player := dial(t, srv, playerID, daveConfig)
	call := &daveCall{srv: srv, gw: gw}
	call.settle(t, 1, bot, player)

	// From now on the bot gets only spoilt commits and welcomes; a third
	// member joining makes a commit.
	sp.mu.Lock()
	sp.on = true
	sp.mu.Unlock()
	playerB := dial(t, srv, playerBID, daveConfig)

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	seen := 0
	for {
		failed := false
		for _, e := range events.snapshot() {
			failed = failed || e.Kind == conn.EventE2EEFailed
		}
		if failed {
			break
		}
		inv, _ := sp.counts()
		if inv > seen {
			// The key package of refusal inv waits for its backoff (the
			// first goes out at once, then 1, 2, 4, 8 s): let the
			// session's clock run to its end, no further. The clock
			// then stands still while the gateway answers, so the
			// answer is never late (dave.RecoveryTimeout).
			seen = inv
			if inv > 1 {
				clk.advance(min(dave.RecoveryBackoff<<(inv-2), dave.MaxRecoveryBackoff))
			}
		}
		select {
		case <-ctx.Done():
			inv, kps := sp.counts()
			t.Fatalf("no EventE2EEFailed: the bot sent %d op 31 and %d key packages; events %v", inv, kps, events.snapshot())
		case <-time.After(10 * time.Millisecond):
		}
	}
	e := events.wait(t, "e2ee failed", kind(conn.EventE2EEFailed, ""))
	if !errors.Is(e.Err, dave.ErrRecoveryGaveUp) {
		t.Fatalf("EventE2EEFailed with %v", e.Err)
	}
	// The last op 31 may still be on its way to the server when the
	// event arrives: wait for it (a hang guard only).
	wctx, wcancel := context.WithTimeout(context.Background(), hangGuard)
	defer wcancel()
	if err := voicetest.Wait(wctx, func() bool { inv, _ := sp.counts(); return inv >= dave.MaxRecoveries+1 }); err != nil {
		inv, kps := sp.counts()
		t.Fatalf("op 31 sent %d times, key packages %d; want %d op 31", inv, kps, dave.MaxRecoveries+1)
	}
	inv, kps := sp.counts()
	// Key packages: the first at the session description, one per
	// recovery but the last.
	t.Logf("a gateway sending only invalid commits and welcomes: the bot refused %d (op 31), sent %d key packages, then gave up: %v",
		inv, kps, e.Err)
	if inv != dave.MaxRecoveries+1 || kps != 1+dave.MaxRecoveries {
		t.Fatalf("op 31 sent %d times, key packages %d; want %d and %d", inv, kps, dave.MaxRecoveries+1, 1+dave.MaxRecoveries)
	}
	// The end is final: nothing more from the bot's DAVE session.
	clk.advance(time.Hour)
	time.Sleep(300 * time.Millisecond)
	if inv2, kps2 := sp.counts(); inv2 != inv || kps2 != kps {
		t.Fatalf("after giving up the bot sent %d op 31 and %d key packages more", inv2-inv, kps2-kps)
	}
	n := 0
	for _, e := range events.snapshot() {
		if e.Kind == conn.EventE2EEFailed {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d EventE2EEFailed", n)
	}

	endsClearly(t, bot, events, tap, sp, player, playerB, gw)
}

// Issue 29: a gateway that ignores the bot's recovery (op 31 and its
// fresh key package) never re-adds it; without a timeout the bot would
// wait for ever, out of the group and silent. dave.RecoveryTimeout after
// the key package went out, on the session's clock, the bot gives up:
// EventE2EEFailed (dave.ErrRecoveryUnanswered), the same clear end state
// as after too many refusals, and a rejoin puts it back in the group.
func TestDAVEGivesUpWhenTheGatewayIgnoresARecovery(t *testing.T) {
	t.Parallel()
	gw := newGateway(t, chanID)
	sp := &spoiler{gw: gw, victim: botID}
	tap := &wireTap{byUser: map[string][][]byte{}}
	srv := server(t, voicetest.Config{DAVEVersion: dave.ProtocolVersion, DAVE: sp, RequireDAVE: true, Observe: tap.observe})
	clk := &manualNow{t: time.Unix(1_800_000_000, 0)}
	bot := dial(t, srv, botID, func(c *conn.Config) {
		c.NewE2EE = dave.NewE2EE(quiet(), dave.WithClock(clk.now))
		c.Rejoin = func(ctx context.Context) (conn.Params, error) {
			p := params(srv, botID)
			p.SessionID, p.Token = "sess-rejoined", "tok-rejoined"
			return p, nil
		}
	})
	events := recordEvents(bot)
	player := dial(t, srv, playerID, daveConfig)
	call := &daveCall{srv: srv, gw: gw}
	call.settle(t, 1, bot, player)

	// The bot gets a spoilt commit (a third member joins) and refuses it;
	// the gateway takes no notice of its op 31 and key package.
	sp.set(true, true)
	playerB := dial(t, srv, playerBID, daveConfig)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool { inv, kps := sp.counts(); return inv == 1 && kps == 2 }); err != nil {
		inv, kps := sp.counts()
		t.Fatalf("the bot sent %d op 31 and %d key packages; want its first recovery (1 and 2)", inv, kps)
	}
	// Just short of the timeout the bot still waits (the receive loop
	// polls the session every few tens of milliseconds; give it many).
	clk.advance(dave.RecoveryTimeout - time.Millisecond)
	for i := 0; i < 20; i++ {
		time.Sleep(10 * time.Millisecond)
		if f := session(bot).Failed(); f != nil {
			t.Fatalf("gave up before dave.RecoveryTimeout: %v", f)
		}
	}
	clk.advance(time.Millisecond)
	e := events.wait(t, "e2ee failed", kind(conn.EventE2EEFailed, ""))
	if !errors.Is(e.Err, dave.ErrRecoveryGaveUp) || !errors.Is(e.Err, dave.ErrRecoveryUnanswered) {
		t.Fatalf("EventE2EEFailed with %v; want dave.ErrRecoveryGaveUp and dave.ErrRecoveryUnanswered", e.Err)
	}
	t.Logf("a gateway ignoring op 31: the bot gave up %v after its key package: %v", dave.RecoveryTimeout, e.Err)
	inv, kps := sp.counts()
	// The end is final: nothing more from the bot's DAVE session, one
	// event.
	clk.advance(time.Hour)
	time.Sleep(300 * time.Millisecond)
	if inv2, kps2 := sp.counts(); inv2 != inv || kps2 != kps {
		t.Fatalf("after giving up the bot sent %d op 31 and %d key packages more", inv2-inv, kps2-kps)
	}
	n := 0
	for _, e := range events.snapshot() {
		if e.Kind == conn.EventE2EEFailed {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d EventE2EEFailed", n)
	}
	endsClearly(t, bot, events, tap, sp, player, playerB, gw)
}

// Issue 29: one member whose frames never decrypt, while another
// member's do, does not make the bot re-key the call: no op 31, the same
// epoch and privacy code, and the good member is still heard.
func TestDAVEOneBrokenSenderAmongGoodOnesStartsNoRecovery(t *testing.T) {
	t.Parallel()
	call := newDAVECall(t)
	bot := call.dial(t, botID)
	player := call.dial(t, playerID)
	call.settle(t, 1, bot, player)
	breaker := call.dial(t, playerBID)
	code := call.settle(t, 2, bot, player, breaker)
	invalid := call.gw.Stats().Invalid

	// The good member speaks and is heard: the group works.
	sent := stream(t, player, 10, nil)
	if got, lost := collect(bot, playerID, sent); len(got) != sent || lost != 0 {
		t.Fatalf("before: heard %d of %d, %d lost", len(got), sent, lost)
	}
	// The breaker's frames never decrypt (a wrong key), far past the
	// threshold.
	call.srv.AnnounceSpeaker(botID, playerBID, call.srv.SSRC(playerBID))
	wrongKey := make([]byte, 16)
	const bad = 4 * dave.RecoveryThreshold
	failed := bot.Stats().E2EEFailed
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	for i := 0; i < bad; i++ {
		if i > 0 && i%32 == 0 {
			// Packets from an SSRC not yet announced wait (64 at
			// most): send in batches, each once the last was counted.
			if err := voicetest.Wait(ctx, func() bool { return bot.Stats().E2EEFailed >= failed+uint64(i) }); err != nil {
				t.Fatalf("the bot counted %d undecryptable frames of %d", bot.Stats().E2EEFailed-failed, i)
			}
		}
		forged, err := dave.EncryptFrame(wrongKey, uint32(i+1), frame(i))
		if err != nil {
			t.Fatal(err)
		}
		pkt, err := call.srv.Seal(botID, rtp.Header{PayloadType: rtp.PayloadTypeOpus, Sequence: uint16(20000 + i),
			Timestamp: uint32(i * 960), SSRC: call.srv.SSRC(playerBID)}, forged)
		if err != nil {
			t.Fatal(err)
		}
		if err := call.srv.InjectUDP(botID, pkt); err != nil {
			t.Fatal(err)
		}
	}
	if err := voicetest.Wait(ctx, func() bool { return bot.Stats().E2EEFailed >= failed+bad }); err != nil {
		t.Fatalf("the bot counted %d undecryptable frames of %d", bot.Stats().E2EEFailed-failed, bad)
	}
	// A recovery would have left the group at once (epoch 0).
	s := session(bot)
	if s.Epoch() != 2 || s.PrivacyCode() != code || !s.Ready() || call.gw.Stats().Invalid != invalid {
		t.Fatalf("after %d undecryptable frames from one member: epoch %d, ready %v, op 31 %d (was %d)",
			bad, s.Epoch(), s.Ready(), call.gw.Stats().Invalid, invalid)
	}
	sent = stream(t, player, 10, nil)
	if got, lost := collect(bot, playerID, sent); len(got) != sent || lost != 0 {
		t.Fatalf("after: heard %d of %d, %d lost", len(got), sent, lost)
	}
	t.Logf("%d undecryptable frames from one member among good ones: no op 31, epoch %d, bot stats %+v", bad, s.Epoch(), bot.Stats())
}

// More than dave.RecoveryThreshold frames in a row from a member that do
// not decrypt (here: forged with a wrong key) make the bot ask to be
// re-added (op 31 and a new key package); the gateway removes and adds it
// again, the group has a new privacy code, and speech flows again.
func TestDAVERecoversAfterUndecryptableFrames(t *testing.T) {
	t.Parallel()
	call := newDAVECall(t)
	bot := call.dial(t, botID)
	player := call.dial(t, playerID)
	oldCode := call.settle(t, 1, bot, player)
	invalid := call.gw.Stats().Invalid

	// The bot learns the player's SSRC (as when the player starts to
	// speak); forged frames then come from it.
	call.srv.AnnounceSpeaker(botID, playerID, call.srv.SSRC(playerID))
	wrongKey := make([]byte, 16)
	for i := 0; i < dave.RecoveryThreshold+1; i++ {
		forged, err := dave.EncryptFrame(wrongKey, uint32(i+1), frame(i))
		if err != nil {
			t.Fatal(err)
		}
		pkt, err := call.srv.Seal(botID, rtp.Header{PayloadType: rtp.PayloadTypeOpus, Sequence: uint16(40000 + i),
			Timestamp: uint32(i * 960), SSRC: call.srv.SSRC(playerID)}, forged)
		if err != nil {
			t.Fatal(err)
		}
		if err := call.srv.InjectUDP(botID, pkt); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool { return call.gw.Stats().Invalid > invalid }); err != nil {
		t.Fatalf("the bot did not ask to be re-added after %d undecryptable frames: %+v, bot %+v",
			dave.RecoveryThreshold+1, call.gw.Stats(), bot.Stats())
	}
	// Re-added: both members in a group with a new privacy code (with two
	// members, removing the bot leaves the player alone, so the group forms
	// anew).
	if err := voicetest.Wait(ctx, func() bool {
		c := session(bot).PrivacyCode()
		return call.gw.Settled() && len(call.gw.Members()) == 2 && c != "" && c != oldCode &&
			session(bot).Ready() && session(player).PrivacyCode() == c
	}); err != nil {
		t.Fatalf("the bot was not re-added: gateway epoch %d, members %v, bot epoch %d", call.gw.Epoch(), call.gw.Members(), session(bot).Epoch())
	}
	epoch := call.gw.Epoch()
	code := call.settle(t, epoch, bot, player)
	t.Logf("after %d forged frames the bot asked to be re-added; the group is at epoch %d (privacy code %s); bot stats %+v",
		dave.RecoveryThreshold+1, epoch, code, bot.Stats())
	sent := stream(t, player, 40, nil)
	got, lost := collect(bot, playerID, sent)
	if len(got) != sent || lost != 0 {
		t.Fatalf("after the recovery the bot heard %d of %d frames, %d lost", len(got), sent, lost)
	}
	sameFrames(t, "after the recovery", got, framesUpTo(sent))
}

// endsClearly checks the state after the bot's DAVE session gave up, and
// what the table does then (EventE2EEFailed: rejoin): the NPC's speech
// after the end never reaches the wire, least of all as plain Opus; a
// rejoin with the gateway behaving again puts the bot back in the group,
// heard by the player.
func endsClearly(t *testing.T, bot *conn.Conn, events *eventLog, tap *wireTap, sp *spoiler, player, playerB *conn.Conn, gw *davetest.Gateway) {
	t.Helper()
	wctx, wcancel := context.WithTimeout(context.Background(), hangGuard)
	defer wcancel()
	// Issue 29: the NPC speaks after the session gave up: no key, no
	// frame. Nothing of it reaches the wire, least of all plain Opus.
	onWire := len(tap.frames(botID))
	const frames = 20
	for i := 0; i < frames; i++ {
		if err := bot.WriteOpus(frame(i)); !errors.Is(err, dave.ErrNoSendKey) {
			t.Fatalf("frame %d after giving up: %v, want dave.ErrNoSendKey", i, err)
		}
	}
	// The silence frames that end a stream carry no speech and pass.
	if err := bot.SetSpeaking(false); err != nil {
		t.Fatal(err)
	}
	if err := voicetest.Wait(wctx, func() bool { return len(tap.frames(botID)) >= onWire+5 }); err != nil {
		t.Fatalf("the closing silence frames did not arrive: %d frames on the wire", len(tap.frames(botID))-onWire)
	}
	wire := tap.frames(botID)[onWire:]
	for i, w := range wire {
		if !bytes.Equal(w, conn.SilenceFrame()) {
			t.Fatalf("after giving up, frame %d went on the wire: %x", i, w[:min(len(w), 16)])
		}
	}
	if st := bot.Stats(); st.NotEncrypted != frames {
		t.Fatalf("NotEncrypted %d, want %d", st.NotEncrypted, frames)
	}

	// What the table does on EventE2EEFailed: rejoin, with a new voice
	// session and a new DAVE session; the gateway behaves again.
	sp.set(false, false)
	if err := bot.Rejoin(wctx); err != nil {
		t.Fatalf("rejoin: %v", err)
	}
	if err := voicetest.Wait(wctx, func() bool {
		s := session(bot)
		return s.Ready() && s.Failed() == nil && s.PrivacyCode() != "" && s.PrivacyCode() == session(player).PrivacyCode() &&
			session(playerB).PrivacyCode() == s.PrivacyCode() && gw.Settled()
	}); err != nil {
		t.Fatalf("after rejoining the bot is not in the group: bot epoch %d, gateway epoch %d, members %v", session(bot).Epoch(), gw.Epoch(), gw.Members())
	}
	speech := framesUpTo(20)
	sent := streamFrames(t, bot, speech, nil)
	heard, lost := collect(player, botID, sent+5)
	var got [][]byte // the closing silence before the rejoin aside
	for _, f := range heard {
		if !bytes.Equal(f, conn.SilenceFrame()) {
			got = append(got, f)
		}
	}
	if sent != len(speech) || len(got) != sent || lost != 0 {
		t.Fatalf("after rejoining: sent %d of %d, the player heard %d, %d lost", sent, len(speech), len(got), lost)
	}
	sameFrames(t, "after rejoining", got, speech)
	all := tap.frames(botID)
	checkProtected(t, all[len(all)-len(speech):], speech)
}
