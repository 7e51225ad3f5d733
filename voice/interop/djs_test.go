package interop_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
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

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

const (
	guildID = "333333333333333333"
	chanID  = "444444444444444444"
	botID   = "111111111111111111" // glyphoxa
	djsID   = "555555555555555555" // discord.js
	thirdID = "222222222222222222" // a second glyphoxa client
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// raceGateway is the DAVE gateway with the commit race decided: while the
// favoured client is in the channel, a commit from anyone else waits until
// the favoured client's commit of the round has been handled (so it wins).
// It records who won each announced commit.
type raceGateway struct {
	gw     *davetest.Gateway
	favour string

	mu      sync.Mutex
	held    []heldCommit
	winners []string
	present map[string]bool
}

type heldCommit struct {
	user    string
	payload []byte
}

func (r *raceGateway) Joined(u string) []voicetest.Delivery {
	r.mu.Lock()
	r.present[u] = true
	r.mu.Unlock()
	return r.gw.Joined(u)
}

func (r *raceGateway) Left(u string) []voicetest.Delivery {
	r.mu.Lock()
	delete(r.present, u)
	var release []heldCommit
	if u == r.favour {
		release, r.held = r.held, nil
	}
	r.mu.Unlock()
	out := r.gw.Left(u)
	for _, h := range release {
		out = append(out, r.commit(h.user, h.payload)...)
	}
	return out
}

func (r *raceGateway) commit(u string, payload []byte) []voicetest.Delivery {
	before := r.gw.Stats().Commits
	out := r.gw.FromClient(u, gateway.OpDAVECommitWelcome, payload)
	if r.gw.Stats().Commits > before {
		r.mu.Lock()
		r.winners = append(r.winners, u)
		r.mu.Unlock()
	}
	return out
}

func (r *raceGateway) FromClient(u string, op gateway.Op, payload []byte) []voicetest.Delivery {
	if op != gateway.OpDAVECommitWelcome {
		return r.gw.FromClient(u, op, payload)
	}
	r.mu.Lock()
	if u != r.favour && r.present[r.favour] {
		r.held = append(r.held, heldCommit{u, bytes.Clone(payload)})
		r.mu.Unlock()
		return nil
	}
	release := r.held
	if u == r.favour {
		r.held = nil
	}
	r.mu.Unlock()
	out := r.commit(u, payload)
	if u == r.favour {
		// The others' commits of this round lost; the gateway ignores them.
		for _, h := range release {
			out = append(out, r.commit(h.user, h.payload)...)
		}
	}
	return out
}

func (r *raceGateway) firstWinner() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.winners) == 0 {
		return ""
	}
	return r.winners[0]
}

// tap keeps the DAVE frames the server relayed, by sender, and their RTP
// headers.
type tap struct {
	mu      sync.Mutex
	byUser  map[string][][]byte
	headers map[string][]rtp.Header
}

func (w *tap) observe(from string, h rtp.Header, payload []byte) {
	w.mu.Lock()
	w.byUser[from] = append(w.byUser[from], bytes.Clone(payload))
	if w.headers == nil {
		w.headers = map[string][]rtp.Header{}
	}
	w.headers[from] = append(w.headers[from], h)
	w.mu.Unlock()
}

func (w *tap) take(user string) [][]byte {
	out, _ := w.takeWithHeaders(user)
	return out
}

func (w *tap) takeWithHeaders(user string) ([][]byte, []rtp.Header) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out, hs := w.byUser[user], w.headers[user]
	w.byUser[user] = nil
	if w.headers != nil {
		w.headers[user] = nil
	}
	return out, hs
}

// describeWire says, for each relayed payload, its RTP sequence number and
// timestamp and, for a DAVE frame, its truncated nonce (the top byte is
// the ratchet generation): what a frame discord.js lost carried.
func describeWire(wire [][]byte, hs []rtp.Header) []string {
	out := make([]string, len(wire))
	for i, w := range wire {
		d := "silence"
		if !bytes.Equal(w, silence) {
			if n, ok := daveNonce(w); ok {
				d = fmt.Sprintf("DAVE nonce %d (generation %d)", n, n>>24)
			} else {
				d = "not a DAVE frame"
			}
		}
		if i < len(hs) {
			d = fmt.Sprintf("seq %d ts %d %s", hs[i].Sequence, hs[i].Timestamp, d)
		}
		out[i] = d
	}
	return out
}

// daveNonce reads the truncated nonce of a DAVE protocol frame: its
// trailer is the 8-byte tag, the ULEB128 nonce, the unencrypted ranges,
// the supplemental size byte and the magic 0xFAFA.
func daveNonce(f []byte) (uint32, bool) {
	if len(f) < 12 || f[len(f)-1] != 0xFA || f[len(f)-2] != 0xFA {
		return 0, false
	}
	size := int(f[len(f)-3])
	if size < 12 || size > len(f) {
		return 0, false
	}
	var n uint64
	for i, shift := len(f)-size+8, 0; i < len(f)-3 && shift < 35; i, shift = i+1, shift+7 {
		n |= uint64(f[i]&0x7f) << shift
		if f[i]&0x80 == 0 {
			return uint32(n), true
		}
	}
	return 0, false
}

// opusFrames encodes n 20 ms frames of a gliding two-tone signal (48 kHz
// stereo), a different stretch for each seed, so that every frame differs.
func opusFrames(t *testing.T, n int, seed float64) [][]byte {
	t.Helper()
	enc, err := gopus.NewEncoder(48000, 2, gopus.Voip)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	pcm := make([]int16, 2*960)
	for i := 0; i < n; i++ {
		for j := 0; j < 960; j++ {
			s := float64(i*960+j) / 48000
			f := 220 + 40*seed + 30*s
			v := 6000*math.Sin(2*math.Pi*f*s) + 2500*math.Sin(2*math.Pi*(f*1.5+seed)*s)
			pcm[2*j], pcm[2*j+1] = int16(v), int16(v*0.8)
		}
		f, err := enc.Encode(pcm, 960, 1275)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(f, conn.SilenceFrame()) {
			t.Fatalf("frame %d encoded to the silence frame", i)
		}
		out = append(out, bytes.Clone(f))
	}
	return out
}

var silence = conn.SilenceFrame()

// call is one fake voice server with its DAVE gateway behind a TLS front,
// and the discord.js peer.
type call struct {
	t     *testing.T
	srv   *voicetest.Server
	gw    *davetest.Gateway
	race  *raceGateway
	tap   *tap
	front *tlsFront
	djs   *djsPeer
	joins int
}

func newCall(t *testing.T, mode, favour string) *call {
	t.Helper()
	ch, err := gateway.Snowflake(chanID)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := davetest.New(ch, davetest.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	race := &raceGateway{gw: gw, favour: favour, present: map[string]bool{}}
	tp := &tap{byUser: map[string][][]byte{}}
	srv, err := voicetest.New(voicetest.Config{Modes: []string{mode}, DAVEVersion: dave.ProtocolVersion, DAVE: race,
		RequireDAVE: true, Observe: tp.observe, HeartbeatInterval: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	front, caFile := newTLSFront(t, hostPort(srv.Endpoint()))
	c := &call{t: t, srv: srv, gw: gw, race: race, tap: tp, front: front}
	c.djs = startDJS(t, caFile)
	return c
}

// dial connects a glyphoxa client (plain ws, straight to the fake).
func (c *call) dial(user string) *conn.Conn {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	p := conn.Params{Endpoint: c.srv.Endpoint(), GuildID: guildID, ChannelID: chanID, UserID: user,
		SessionID: "sess-" + user, Token: "tok-" + user}
	cn, err := conn.Dial(ctx, p, conn.Config{Logger: quiet(), NewE2EE: dave.NewE2EE(quiet()),
		Backoff: conn.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Attempts: 5}})
	if err != nil {
		c.t.Fatalf("dial %s: %v", user, err)
	}
	c.t.Cleanup(func() { cn.Close() })
	return cn
}

// joinDJS has discord.js join through a voice server update naming the
// TLS front.
func (c *call) joinDJS() djsState {
	c.t.Helper()
	c.joins++
	s := c.djs.call("join", map[string]any{"guildId": guildID, "channelId": chanID, "userId": djsID,
		"sessionId": "sess-djs-" + strconv.Itoa(c.joins), "token": "tok-djs-" + strconv.Itoa(c.joins), "endpoint": c.front.Endpoint()})
	c.djs.call("subscribe", map[string]any{"userId": botID})
	c.djs.call("subscribe", map[string]any{"userId": thirdID})
	return s
}

// settle waits until the gateway is settled and every glyphoxa client and
// discord.js show one privacy code, other than notCode; it returns it.
func (c *call) settle(notCode string, cs ...*conn.Conn) string {
	c.t.Helper()
	d := c.djs.call("dave", map[string]any{"notCode": notCode})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	err := voicetest.Wait(ctx, func() bool {
		if !c.gw.Settled() {
			return false
		}
		for _, cn := range cs {
			s := cn.E2EE().(*dave.Session)
			if !s.Ready() || s.PrivacyCode() != d.PrivacyCode {
				return false
			}
		}
		return true
	})
	if err != nil {
		var got []string
		for _, cn := range cs {
			s := cn.E2EE().(*dave.Session)
			got = append(got, fmt.Sprintf("epoch %d ready %v code %s", s.Epoch(), s.Ready(), s.PrivacyCode()))
		}
		c.t.Fatalf("the group did not settle: discord.js %+v; glyphoxa %q; gateway epoch %d settled %v members %v",
			d, got, c.gw.Epoch(), c.gw.Settled(), c.gw.Members())
	}
	if fmt.Sprint(d.Epoch) != strconv.FormatUint(c.gw.Epoch(), 10) {
		c.t.Fatalf("discord.js is at epoch %s, the gateway at %d", d.Epoch, c.gw.Epoch())
	}
	return d.PrivacyCode
}

// glyphoxaToDJS streams frames from a glyphoxa client, 20 ms apart, then
// five silence frames, and checks discord.js heard exactly them, and that
// the server relayed them DAVE-protected.
func (c *call) glyphoxaToDJS(what string, from *conn.Conn, fromID string, frames [][]byte) {
	c.t.Helper()
	c.tap.take(fromID)
	// discord.js drops packets from an SSRC until a speaking op names its
	// user; Discord's own clients race the same way, so announce first.
	if err := from.SetSpeaking(true); err != nil {
		c.t.Fatal(err)
	}
	c.djs.call("knows", map[string]any{"userId": fromID})
	tick := time.NewTicker(20 * time.Millisecond)
	for _, f := range frames {
		<-tick.C
		if err := from.WriteOpus(f); err != nil {
			c.t.Fatalf("%s: write: %v", what, err)
		}
	}
	tick.Stop()
	if err := from.SetSpeaking(false); err != nil {
		c.t.Fatal(err)
	}
	want := append(append([][]byte{}, frames...), silence, silence, silence, silence, silence)
	r := c.djs.call("received", map[string]any{"userId": fromID, "count": len(want), "ms": 5000})
	got := r.Frames
	wire, hs := c.tap.takeWithHeaders(fromID)
	c.t.Logf("%s: glyphoxa sent %d frames (+5 silence), the server relayed %d, discord.js received %d", what, len(frames), len(wire), len(got))
	if len(got) != len(want) || len(r.Lost) != 0 {
		c.t.Logf("%s: discord.js's receiver got %d packets, did not hand out %s; kernel drops %d; their seqs %v; relayed: %q; glyphoxa stats %+v",
			what, r.Packets, r.Lost, r.KernelDrops, r.Seqs, describeWire(wire, hs), from.Stats())
	}
	sameHex(c.t, what, got, want)
	checkProtected(c.t, what, wire, frames)
}

// djsToGlyphoxa has discord.js play frames through its audio player and
// checks each glyphoxa client heard exactly them (then the player's
// silence frames), DAVE-protected on the wire, with no decrypt failure.
func (c *call) djsToGlyphoxa(what string, frames [][]byte, to ...*conn.Conn) {
	c.t.Helper()
	c.tap.take(djsID)
	hexes := make([]string, len(frames))
	for i, f := range frames {
		hexes[i] = hex.EncodeToString(f)
	}
	failed := make([]uint64, len(to))
	for i, cn := range to {
		failed[i] = cn.Stats().E2EEFailed
	}
	c.djs.call("play", map[string]any{"frames": hexes})
	for i, cn := range to {
		// The player pads with silence frames; it stops before sending the
		// last one it prepared, so four of its five arrive.
		got, lost := collect(cn, djsID, len(frames)+1, len(frames)+5)
		// The silence frame left prepared at the end of the previous
		// playback goes out first.
		lead := 0
		for lead < len(got) && bytes.Equal(got[lead], silence) {
			lead++
		}
		if lead > 1 {
			c.t.Fatalf("%s: %d silence frames before the speech", what, lead)
		}
		if lead == 1 && len(got) < len(frames)+5 {
			more, l := collect(cn, djsID, len(frames)+2-len(got), len(frames)+5-len(got))
			got, lost = append(got, more...), lost+l
		}
		got = got[lead:]
		c.t.Logf("%s: discord.js played %d frames, glyphoxa client %d received %d (%d of them silence), %d lost",
			what, len(frames), i, len(got), len(got)-len(frames), lost)
		if lost != 0 {
			c.t.Fatalf("%s: %d frames lost", what, lost)
		}
		if len(got) < len(frames)+1 {
			c.t.Fatalf("%s: %d frames, want %d and the silence after them", what, len(got), len(frames))
		}
		sameFrames(c.t, what, got[:len(frames)], frames)
		for j, f := range got[len(frames):] {
			if !bytes.Equal(f, silence) {
				c.t.Fatalf("%s: frame %d after the speech is %x, not silence", what, len(frames)+j, f)
			}
		}
		if f := cn.Stats().E2EEFailed - failed[i]; f != 0 {
			c.t.Fatalf("%s: %d DAVE decrypt failures", what, f)
		}
	}
	checkProtected(c.t, what, c.tap.take(djsID), frames)
}

// collect reads a client's packets from user: at least atLeast of them
// (received or reported lost), however slowly they come (only the hang
// guard ends the wait), then on until atMost arrived or none came for a
// second.
func collect(c *conn.Conn, from string, atLeast, atMost int) (frames [][]byte, lost int) {
	guard := time.NewTimer(hangGuard)
	defer guard.Stop()
	for len(frames) < atMost {
		var quiet <-chan time.Time
		if len(frames)+lost >= atLeast {
			quiet = time.After(time.Second)
		}
		select {
		case p, ok := <-c.Packets():
			if !ok {
				return
			}
			if p.UserID == from {
				frames = append(frames, p.Opus)
				lost += p.Lost
			}
		case <-quiet:
			return
		case <-guard.C:
			return
		}
	}
	return
}

func sameFrames(t *testing.T, what string, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		hexes := make([]string, len(got))
		for i, g := range got {
			hexes[i] = hex.EncodeToString(g)
		}
		t.Fatalf("%s: %d frames, want %d; missing frames %v", what, len(got), len(want), missingFrames(hexes, want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("%s: frame %d differs: %x, want %x", what, i, got[i], want[i])
		}
	}
}

func sameHex(t *testing.T, what string, got []string, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d frames, want %d; missing frames %v", what, len(got), len(want), missingFrames(got, want))
	}
	for i := range want {
		if got[i] != hex.EncodeToString(want[i]) {
			t.Fatalf("%s: frame %d differs: %s, want %x", what, i, got[i], want[i])
		}
	}
}

// checkProtected verifies that the relayed payloads of a stream of frames
// were DAVE protocol frames (magic FA FA), never the plain Opus.
func checkProtected(t *testing.T, what string, wire, plain [][]byte) {
	t.Helper()
	var protected int
	for _, w := range wire {
		if bytes.Equal(w, silence) {
			continue
		}
		for _, p := range plain {
			if bytes.Equal(w, p) {
				t.Fatalf("%s: a frame crossed the server unprotected", what)
			}
		}
		if len(w) < 12 || w[len(w)-1] != 0xFA || w[len(w)-2] != 0xFA {
			t.Fatalf("%s: a relayed payload is not a DAVE frame: %x", what, w)
		}
		protected++
	}
	if protected != len(plain) {
		t.Fatalf("%s: %d DAVE frames relayed, want %d", what, protected, len(plain))
	}
}

// missingFrames lists the indices of want (frames) that got (hex) lacks;
// repeated frames, like the silence tail, count once per occurrence.
func missingFrames(got []string, want [][]byte) []int {
	heard := make(map[string]int, len(got))
	for _, g := range got {
		heard[g]++
	}
	var missing []int
	for i, w := range want {
		h := hex.EncodeToString(w)
		if heard[h] == 0 {
			missing = append(missing, i)
			continue
		}
		heard[h]--
	}
	return missing
}
