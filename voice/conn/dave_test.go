package conn_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"layeh.com/gopus"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/dave/davetest"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/rtp"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// speechOpus synthesises text with espeak-ng and encodes it as a Discord
// client does: 48 kHz stereo Opus in 20 ms frames.
func speechOpus(t *testing.T, text string) [][]byte {
	t.Helper()
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("espeak-ng is not installed (scripts/testdeps.sh installs it): %v", err)
		}
		t.Skipf("espeak-ng is not installed: %v", err)
	}
	wav := filepath.Join(t.TempDir(), "speech.wav")
	if out, err := exec.Command("espeak-ng", "-v", "en-us", "-s", "160", "-w", wav, text).CombinedOutput(); err != nil {
		t.Fatalf("espeak-ng: %v: %s", err, out)
	}
	b, err := os.ReadFile(wav)
	if err != nil {
		t.Fatal(err)
	}
	rate, mono := parseWAV(t, b)
	// Linear resampling to 48 kHz, duplicated to two channels.
	const outRate = 48000
	n := len(mono) * outRate / rate
	n += 960 - n%960
	pcm := make([]int16, 2*n)
	for i := 0; i < n; i++ {
		pos := float64(i) * float64(rate) / outRate
		j := int(pos)
		var v float64
		if j+1 < len(mono) {
			f := pos - float64(j)
			v = float64(mono[j])*(1-f) + float64(mono[j+1])*f
		} else if j < len(mono) {
			v = float64(mono[j])
		}
		pcm[2*i], pcm[2*i+1] = int16(v), int16(v)
	}
	enc, err := gopus.NewEncoder(outRate, 2, gopus.Voip)
	if err != nil {
		t.Fatal(err)
	}
	var frames [][]byte
	for off := 0; off < len(pcm); off += 2 * 960 {
		f, err := enc.Encode(pcm[off:off+2*960], 960, 1275)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(f, conn.SilenceFrame()) {
			continue // the one frame receivers pass through unencrypted
		}
		frames = append(frames, bytes.Clone(f))
	}
	if len(frames) < 50 {
		t.Fatalf("espeak-ng made only %d frames of speech", len(frames))
	}
	return frames
}

// parseWAV reads a 16-bit mono PCM WAV file.
func parseWAV(t *testing.T, b []byte) (rate int, samples []int16) {
	t.Helper()
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatal("espeak-ng output is not a WAV file")
	}
	for p := 12; p+8 <= len(b); {
		id, size := string(b[p:p+4]), int(binary.LittleEndian.Uint32(b[p+4:]))
		body := b[p+8:]
		if size > len(body) || size < 0 {
			size = len(body)
		}
		switch id {
		case "fmt ":
			if size < 16 || binary.LittleEndian.Uint16(body) != 1 || binary.LittleEndian.Uint16(body[2:]) != 1 ||
				binary.LittleEndian.Uint16(body[14:]) != 16 {
				t.Fatal("espeak-ng output is not 16-bit mono PCM")
			}
			rate = int(binary.LittleEndian.Uint32(body[4:]))
		case "data":
			for i := 0; i+1 < size; i += 2 {
				samples = append(samples, int16(binary.LittleEndian.Uint16(body[i:])))
			}
		}
		p += 8 + size + size%2
	}
	if rate == 0 || len(samples) == 0 {
		t.Fatal("espeak-ng output has no audio")
	}
	return rate, samples
}

// wireTap keeps every media payload the fake server relays, as it saw
// it after removing transport encryption.
type wireTap struct {
	mu     sync.Mutex
	byUser map[string][][]byte
}

func (w *wireTap) observe(from string, _ rtp.Header, payload []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byUser[from] = append(w.byUser[from], bytes.Clone(payload))
}

func (w *wireTap) frames(user string) [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.byUser[user]
}

// daveCall is a fake voice server that requires DAVE, with the gateway's
// DAVE role played by davetest.
type daveCall struct {
	srv *voicetest.Server
	gw  *davetest.Gateway
	tap *wireTap
}

func newDAVECall(t *testing.T) *daveCall {
	t.Helper()
	ch, err := gateway.Snowflake(chanID)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := davetest.New(ch, davetest.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	tap := &wireTap{byUser: map[string][][]byte{}}
	srv := server(t, voicetest.Config{DAVEVersion: dave.ProtocolVersion, DAVE: gw, RequireDAVE: true, Observe: tap.observe})
	return &daveCall{srv: srv, gw: gw, tap: tap}
}

func daveConfig(c *conn.Config) { c.NewE2EE = dave.NewE2EE(quiet()) }

func (d *daveCall) dial(t *testing.T, user string) *conn.Conn {
	return dial(t, d.srv, user, daveConfig)
}

func session(c *conn.Conn) *dave.Session { return c.E2EE().(*dave.Session) }

// settle waits until the gateway has executed every transition at epoch
// and every client encrypts at that epoch with the same privacy code,
// which it returns.
func (d *daveCall) settle(t *testing.T, epoch uint64, cs ...*conn.Conn) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var code string
	err := voicetest.Wait(ctx, func() bool {
		if !d.gw.Settled() || d.gw.Epoch() != epoch {
			return false
		}
		code = session(cs[0]).PrivacyCode()
		for _, c := range cs {
			s := session(c)
			if !s.Ready() || s.Epoch() != epoch || s.PrivacyCode() != code {
				return false
			}
		}
		return len(code) == 30
	})
	if err != nil {
		var state []string
		for _, c := range cs {
			s := session(c)
			state = append(state, fmt.Sprintf("epoch %d ready %v code %s", s.Epoch(), s.Ready(), s.PrivacyCode()))
		}
		t.Fatalf("the DAVE group did not settle at epoch %d: gateway epoch %d, settled %v, members %v, stats %+v; clients %q",
			epoch, d.gw.Epoch(), d.gw.Settled(), d.gw.Members(), d.gw.Stats(), state)
	}
	return code
}

// streamFrames sends frames paced 20 ms apart, calling between(i) before
// frame i, and returns how many were sent.
func streamFrames(t *testing.T, c *conn.Conn, frames [][]byte, between func(i int)) (sent int) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for i, f := range frames {
		if between != nil {
			between(i)
		}
		<-tick.C
		if err := c.WriteOpus(f); err == nil {
			sent++
		}
	}
	return sent
}

// cycle repeats frames to n.
func cycle(frames [][]byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = frames[i%len(frames)]
	}
	return out
}

// checkDAVEWire verifies that what the server relayed for a stream of
// plain frames (then five silence frames) was DAVE-protected.
func checkDAVEWire(t *testing.T, wire, plain [][]byte) {
	t.Helper()
	if len(wire) != len(plain)+5 {
		t.Fatalf("the server relayed %d frames, want %d", len(wire), len(plain)+5)
	}
	checkProtected(t, wire[:len(plain)], plain)
	for _, w := range wire[len(plain):] {
		if !bytes.Equal(w, conn.SilenceFrame()) {
			t.Fatalf("silence frame relayed as %x", w)
		}
	}
}

// checkProtected verifies that each relayed frame is a DAVE protocol
// frame that does not contain its plaintext.
func checkProtected(t *testing.T, wire, plain [][]byte) {
	t.Helper()
	for i, p := range plain {
		w := wire[i]
		if len(w) < len(p)+12 || !bytes.HasSuffix(w, []byte{0xFA, 0xFA}) || bytes.Contains(w, p) {
			t.Fatalf("frame %d went over the wire unprotected: %d bytes %x… for %d plain bytes", i, len(w), w[:min(len(w), 16)], len(p))
		}
	}
}

func sameFrames(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	for i := range want {
		if i >= len(got) || !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: frame %d of %d differs (got %d frames)", what, i, len(want), len(got))
		}
	}
}

func TestDAVESpeechBothWays(t *testing.T) {
	t.Parallel()
	d := newDAVECall(t)
	bot := d.dial(t, botID)
	player := d.dial(t, playerID)
	code := d.settle(t, 1, bot, player)
	if v1, err := session(bot).VerificationCode(parseID(t, playerID)); err != nil || len(v1) != 45 {
		t.Fatalf("verification code %q: %v", v1, err)
	} else if v2, _ := session(player).VerificationCode(parseID(t, botID)); v2 != v1 {
		t.Fatalf("verification codes differ: %s, %s", v1, v2)
	}

	speech := speechOpus(t, "Welcome, travellers. The dragon sleeps beneath the mountain.")
	sent := streamFrames(t, player, speech, nil)
	if err := player.SetSpeaking(false); err != nil {
		t.Fatal(err)
	}
	got, lost := collect(bot, playerID, sent+5)
	t.Logf("player → bot: %d Opus frames of speech sent, %d received (5 of them silence), %d lost; privacy code %s", sent, len(got), lost, code)
	if sent != len(speech) || len(got) != sent+5 || lost != 0 || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("sent %d, got %d, lost %d; bot %+v", sent, len(got), lost, bot.Stats())
	}
	sameFrames(t, "player → bot", got, speech)
	checkDAVEWire(t, d.tap.frames(playerID), speech)

	reply := speechOpus(t, "I keep this tavern. What will you have, friends?")
	sent = streamFrames(t, bot, reply, nil)
	if err := bot.SetSpeaking(false); err != nil {
		t.Fatal(err)
	}
	got, lost = collect(player, botID, sent+5)
	t.Logf("bot → player: %d frames sent, %d received, %d lost", sent, len(got), lost)
	if sent != len(reply) || len(got) != sent+5 || lost != 0 || player.Stats().E2EEFailed != 0 {
		t.Fatalf("sent %d, got %d, lost %d; player %+v", sent, len(got), lost, player.Stats())
	}
	sameFrames(t, "bot → player", got, reply)
	checkDAVEWire(t, d.tap.frames(botID), reply)
}

func parseID(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := gateway.Snowflake(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDAVEResumeKeepsTheGroup(t *testing.T) {
	t.Parallel()
	d := newDAVECall(t)
	bot := d.dial(t, botID)
	player := d.dial(t, playerID)
	code := d.settle(t, 1, bot, player)
	var resumed atomic.Bool
	go func() {
		for e := range bot.Events() {
			if e.Kind == conn.EventResumed {
				resumed.Store(true)
			}
		}
	}()
	frames := cycle(speechOpus(t, "Roll for initiative. The goblins charge from the trees."), 150)
	var duringOutage int
	sent := streamFrames(t, player, frames, func(i int) {
		if i == 30 {
			d.srv.DropWS(botID)
		}
		if i >= 30 && !resumed.Load() {
			duringOutage++
		}
	})
	got, lost := collect(bot, playerID, sent)
	t.Logf("DAVE, WebSocket drop: sent %d frames (%d while the WebSocket was down), received %d, lost %d", sent, duringOutage, len(got), lost)
	if !resumed.Load() || bot.Stats().Resumes != 1 || bot.Stats().Reidentifies != 0 {
		t.Fatalf("the bot did not resume: %+v", bot.Stats())
	}
	if len(got)+lost != sent || lost > duringOutage || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("sent %d, got %d, lost %d, %d during the outage; bot %+v", sent, len(got), lost, duringOutage, bot.Stats())
	}
	if lost == 0 {
		sameFrames(t, "across the resume", got, frames)
	}
	// The resume kept the group: same epoch, same privacy code, no new
	// commit.
	if s := session(bot); s.Epoch() != 1 || s.PrivacyCode() != code || d.gw.Stats().Commits != 1 {
		t.Fatalf("after the resume: epoch %d, code %s (was %s), gateway %+v", s.Epoch(), s.PrivacyCode(), code, d.gw.Stats())
	}
	// DAVE messages still flow over the resumed WebSocket: a third member
	// moves the group to epoch 2.
	third := d.dial(t, "555555555555555555")
	d.settle(t, 2, bot, player, third)
}

func TestDAVEUDPOutageIsSurvived(t *testing.T) {
	t.Parallel()
	d := newDAVECall(t)
	bot := d.dial(t, botID)
	player := d.dial(t, playerID)
	d.settle(t, 1, bot, player)
	frames := cycle(speechOpus(t, "The bridge creaks under your weight as the river roars below."), 200)
	var start time.Time
	var pausedFor time.Duration
	sent := streamFrames(t, player, frames, func(i int) {
		switch i {
		case 50:
			d.srv.PauseUDP(true)
			start = time.Now()
		case 150:
			d.srv.PauseUDP(false)
			pausedFor = time.Since(start)
		}
	})
	got, lost := collect(bot, playerID, sent)
	t.Logf("DAVE, UDP outage of %s: sent %d, received %d, reported lost %d", pausedFor.Round(time.Millisecond), sent, len(got), lost)
	// The pause and the resume each meet what is in flight: on a loaded
	// machine a few frames sent just before the pause (up to inFlight) are
	// still queued and lost with the outage's, and a few of its last
	// frames still queued in the sender when it ends get through.
	const inFlight = 5
	if len(got)+lost != sent || lost < 100-inFlight || lost > 100+inFlight || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("got %d + lost %d, sent %d; bot %+v", len(got), lost, sent, bot.Stats())
	}
	sameFrames(t, "before the outage", got[:50-inFlight], frames[:50-inFlight])
	if !bytes.Equal(got[len(got)-1], frames[199]) {
		t.Fatal("the stream did not continue after the outage")
	}
	if st := bot.Stats(); st.Resumes != 0 || st.Reidentifies != 0 {
		t.Fatalf("a UDP outage must not reconnect the gateway: %+v", st)
	}
}

func TestDAVEThirdMemberJoinsMidStream(t *testing.T) {
	t.Parallel()
	d := newDAVECall(t)
	bot := d.dial(t, botID)
	player := d.dial(t, playerID)
	code1 := d.settle(t, 1, bot, player)
	const thirdID = "555555555555555555"
	frames := cycle(speechOpus(t, "A stranger in a grey cloak steps into the firelight and asks to join your party."), 150)
	var third *conn.Conn
	var thirdErr error
	joined := make(chan struct{})
	sent := streamFrames(t, player, frames, func(i int) {
		if i == 40 {
			go func() {
				defer close(joined)
				ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
				defer cancel()
				cfg := conn.Config{Logger: quiet(), HandshakeTimeout: time.Minute}
				daveConfig(&cfg)
				third, thirdErr = conn.Dial(ctx, params(d.srv, thirdID), cfg)
			}()
		}
	})
	<-joined
	if thirdErr != nil {
		t.Fatal(thirdErr)
	}
	t.Cleanup(func() { third.Close() })
	code2 := d.settle(t, 2, bot, player, third)
	var epochEvents int
	for drained := false; !drained; {
		select {
		case e := <-bot.Events():
			if e.Kind == conn.EventE2EEEpoch {
				epochEvents++
			}
		default:
			drained = true
		}
	}
	if epochEvents != 2 {
		t.Fatalf("the bot reported %d DAVE epoch changes, want 2 (0 → 1 → 2)", epochEvents)
	}
	got, lost := collect(bot, playerID, sent)
	t.Logf("DAVE, third member joins mid-stream (epoch 1 → 2): sent %d, received %d, lost %d; bot DAVE failures %d",
		sent, len(got), lost, bot.Stats().E2EEFailed)
	if len(got) != sent || lost != 0 || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("sent %d, got %d, lost %d; bot %+v", sent, len(got), lost, bot.Stats())
	}
	sameFrames(t, "across the epoch change", got, frames)
	if code1 == code2 {
		t.Fatal("the privacy code did not change with the epoch")
	}

	// Everyone decrypts everyone at epoch 2.
	words := speechOpus(t, "I am Elric, a wandering scholar.")
	sent = streamFrames(t, third, words, nil)
	for _, c := range []*conn.Conn{bot, player} {
		got, lost := collect(c, thirdID, sent)
		if len(got) != sent || lost != 0 {
			t.Fatalf("third → member: sent %d, got %d, lost %d; %+v", sent, len(got), lost, c.Stats())
		}
		sameFrames(t, "third → member", got, words)
	}
	more := frames[:50]
	sent = streamFrames(t, player, more, nil)
	got, lost = collect(third, playerID, sent)
	// Frames the player sent before the third joined the group are not
	// decryptable by it; from epoch 2 on everything is.
	got = got[len(got)-min(len(got), len(more)):]
	if len(got) != sent || lost != 0 {
		t.Fatalf("player → third: sent %d, got %d, lost %d", sent, len(got), lost)
	}
	sameFrames(t, "player → third", got, more)
	if got, lost := collect(bot, playerID, sent); len(got) != sent || lost != 0 {
		t.Fatalf("player → bot: sent %d, got %d, lost %d", sent, len(got), lost)
	}

	// The third leaves: a removal commit (with an update path) moves the
	// two left to epoch 3, and they keep talking.
	d.srv.Disconnect(thirdID)
	d.settle(t, 3, bot, player)
	sent = streamFrames(t, player, more, nil)
	got, lost = collect(bot, playerID, sent)
	if len(got) != sent || lost != 0 || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("after the removal: sent %d, got %d, lost %d; %+v", sent, len(got), lost, bot.Stats())
	}
	sameFrames(t, "after the removal", got, more)
}

func TestDAVERequiredButNotOffered(t *testing.T) {
	t.Parallel()
	d := newDAVECall(t)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	start := time.Now()
	_, err := conn.Dial(ctx, params(d.srv, botID), conn.Config{Logger: quiet()})
	if !errors.Is(err, conn.ErrE2EERequired) || !strings.Contains(err.Error(), "4017") {
		t.Fatalf("got %v, want ErrE2EERequired", err)
	}
	t.Logf("without DAVE: %v (after %s)", err, time.Since(start).Round(time.Millisecond))
	// The same server accepts a client that offers DAVE.
	bot := d.dial(t, botID)
	player := d.dial(t, playerID)
	d.settle(t, 1, bot, player)
}

func TestDAVEReidentifyFormsANewGroup(t *testing.T) {
	t.Parallel()
	d := newDAVECall(t)
	bot := dial(t, d.srv, botID, func(c *conn.Config) {
		daveConfig(c)
		c.Rejoin = func(ctx context.Context) (conn.Params, error) {
			p := params(d.srv, botID)
			p.SessionID, p.Token = "sess-2", "tok-2"
			return p, nil
		}
	})
	player := d.dial(t, playerID)
	code1 := d.settle(t, 1, bot, player)
	// The bot's session is gone: it identifies again with a fresh key
	// package; the player, left alone in the group, is reset, and the two
	// form a new group.
	d.srv.CloseWS(botID, gateway.CloseSessionInvalid)
	waitEvent(t, bot, conn.EventReidentified)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := voicetest.Wait(ctx, func() bool { return d.gw.Stats().Resets == 1 }); err != nil {
		t.Fatalf("the player was not reset: %+v", d.gw.Stats())
	}
	code2 := d.settle(t, 1, bot, player)
	if code1 == code2 || d.gw.Stats().Commits != 2 {
		t.Fatalf("no new group: codes %s, %s; gateway %+v", code1, code2, d.gw.Stats())
	}
	frames := cycle(speechOpus(t, "Back again, are we?"), 50)
	sent := streamFrames(t, player, frames, nil)
	got, lost := collect(bot, playerID, sent)
	t.Logf("DAVE, re-identify: new group formed; sent %d, received %d, lost %d", sent, len(got), lost)
	if len(got) != sent || lost != 0 || bot.Stats().E2EEFailed != 0 {
		t.Fatalf("sent %d, got %d, lost %d; %+v", sent, len(got), lost, bot.Stats())
	}
	sameFrames(t, "after re-identifying", got, frames)
	wire := d.tap.frames(playerID)
	checkProtected(t, wire[len(wire)-len(frames):], frames)
}
