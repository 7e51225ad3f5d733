package voicesession_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/internal/metrics"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

const (
	guildID  = "100000000000000001"
	channel  = "100000000000000002"
	playerID = "222222222222222222"
	quietID  = "333333333333333333" // opted out of recording
	wait     = 2 * time.Minute      // a hang guard, not a budget
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// heardUtterance is what the speech-to-text engine was given.
type heardUtterance struct {
	rate     int
	duration time.Duration
	rmsDB    float64
}

// scriptedSTT answers each utterance with the next line of a script and
// records the audio it was given, so the test can check it was audible 16
// kHz speech of the right length.
type scriptedSTT struct {
	mu     sync.Mutex
	script []string
	heard  []heardUtterance
}

func (s *scriptedSTT) Transcribe(_ context.Context, pcm audio.PCM, _ stt.Hints) (stt.Transcript, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var sum float64
	for _, v := range pcm.Samples {
		sum += float64(v) * float64(v)
	}
	rms := math.Sqrt(sum / float64(max(1, len(pcm.Samples))))
	s.heard = append(s.heard, heardUtterance{rate: pcm.Rate,
		duration: time.Duration(len(pcm.Samples)) * time.Second / time.Duration(max(1, pcm.Rate)),
		rmsDB:    20 * math.Log10(max(rms, 1)/32768)})
	if len(s.script) == 0 {
		return stt.Transcript{}, fmt.Errorf("no more lines in the script")
	}
	text := s.script[0]
	s.script = s.script[1:]
	var words []stt.Word
	for _, w := range strings.Fields(text) {
		words = append(words, stt.Word{Text: w, Confidence: 0.9})
	}
	return stt.Transcript{Text: text, Words: words}, nil
}

func (s *scriptedSTT) utterances() []heardUtterance {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.heard)
}

// espeakSpeaker voices sentences with espeak-ng and sends them as real
// Opus frames paced every 20 ms.
type espeakSpeaker struct {
	t      *testing.T
	frames int
	mu     sync.Mutex
}

func (e *espeakSpeaker) Speak(ctx context.Context, _ npc.Voice, sentences <-chan string, send func([]byte) error) ([]string, error) {
	var heard []string
	for s := range sentences {
		st := audiotest.Encode(e.t, audiotest.Speak(e.t, s, 48000), "bot", 1, time.Now())
		tick := time.NewTicker(20 * time.Millisecond)
		for _, p := range st.Packets {
			select {
			case <-ctx.Done():
				tick.Stop()
				return heard, ctx.Err()
			case <-tick.C:
			}
			if err := send(p.Opus); err != nil {
				tick.Stop()
				return heard, err
			}
			e.mu.Lock()
			e.frames++
			e.mu.Unlock()
		}
		tick.Stop()
		heard = append(heard, s)
	}
	return heard, nil
}

// observer records what the session reports.
type observer struct {
	mu      sync.Mutex
	stages  map[string]int
	turns   map[string]int
	health  int
	running int
}

func (o *observer) ObserveStage(stage string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if d > 0 {
		o.stages[stage]++
	}
}
func (o *observer) CountTurn(outcome string) { o.mu.Lock(); o.turns[outcome]++; o.mu.Unlock() }
func (o *observer) SessionStarted()          { o.mu.Lock(); o.running++; o.mu.Unlock() }
func (o *observer) SessionEnded()            { o.mu.Lock(); o.running--; o.mu.Unlock() }
func (o *observer) SetMemoryHealth(campaign string, degraded bool, pending int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if campaign == "ironhold-saga" && !degraded {
		o.health++
	}
}

type harness struct {
	t       *testing.T
	store   *postgres.Store
	camp    *postgres.Campaign
	fake    *discordtest.Server
	voice   *voicetest.Server
	llm     *llmtest.Server
	stt     *scriptedSTT
	speaker *espeakSpeaker
	m       *voicesession.Manager
	ended   chan string
	obs     *observer
}

func newHarness(t *testing.T, script []string, leaveWhenEmpty time.Duration) *harness {
	t.Helper()
	store, _ := pgtest.NewStore(t, 16)
	// The players speak in real time (say): on a loaded machine their
	// frames may pause for longer than the default 600 ms end of turn,
	// which would split a line in two. Only seconds of silence end one.
	// A pause is followed by the frames it held back, all at once (the
	// player's sender catches up, or the bot reads what queued while it
	// was not scheduled): the default rate limit (1 s of audio beyond 1.5
	// times real time) would cut them from the line, and after the default
	// 100 ms tick slack the pause would already have been taken as
	// silence. At load 30+ speech-to-text got part of the speech. Here
	// only a pause of over a second is silence, and no burst is cut.
	return newHarnessOn(t, store, table.Settings{StateDir: t.TempDir(), LeaveWhenEmpty: leaveWhenEmpty,
		Audio: audio.Config{Endpoint: 3 * time.Second, TickSlack: time.Second, RateBurst: time.Minute}}, script)
}

// newHarnessOn plays the sample campaign, imported into store, with
// settings.
func newHarnessOn(t *testing.T, store *postgres.Store, settings table.Settings, script []string) *harness {
	t.Helper()
	audiotest.Need(t, "espeak-ng")
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	ctx := context.Background()
	h := &harness{t: t, store: store, camp: camp,
		stt: &scriptedSTT{script: script}, speaker: &espeakSpeaker{t: t},
		ended: make(chan string, 1),
		obs:   &observer{stages: map[string]int{}, turns: map[string]int{}}}
	if err := h.camp.OptOut(ctx, quietID); err != nil {
		t.Fatal(err)
	}

	var err error
	h.voice, err = voicetest.New(voicetest.Config{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.voice.Close)
	h.fake = discordtest.New()
	t.Cleanup(h.fake.Close)
	h.fake.AddGuild(&discordgo.Guild{ID: guildID, Name: "The Table"})
	h.fake.SetVoiceEndpoint(h.voice.Endpoint())
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	h.fake.Attach(sess)
	joiner := bot.NewJoiner(sess)
	for _, handler := range joiner.Handlers() {
		sess.AddHandler(handler)
	}
	if err := sess.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	if err := voicetest.Wait(ctxFor(t), func() bool { return sess.State.User != nil }); err != nil {
		t.Fatal("no READY from the fake Discord")
	}

	h.llm = llmtest.New(llmtest.Script(llmtest.Reply{Text: "Stolen, not lost. Find my steel."}))
	t.Cleanup(h.llm.Close)
	client, err := llm.New(llm.Config{BaseURL: h.llm.URL(), Model: "fake", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	emb, err := embed.NewOffline(16)
	if err != nil {
		t.Fatal(err)
	}
	h.m, err = voicesession.New(voicesession.Config{
		Door: pgtest.Door(t, store),
		Link: voicesession.NewGatewayLink(joiner, conn.Config{Logger: quiet(), HandshakeTimeout: time.Minute}),
		Providers: table.Providers{STT: h.stt, STTProvider: table.ProviderDeepgram, Speaker: h.speaker, LLM: client,
			Embedder: emb},
		Settings: settings,
		UserName: func(_, u string) string { return map[string]string{playerID: "Thorin", quietID: "Quinn"}[u] },
		Observer: h.obs,
		Logger:   quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.m.Close(ctx); err != nil {
			t.Errorf("closing the manager: %v", err)
		}
	})
	return h
}

// sagaStore is a store holding the sample campaign (ironhold-saga) with
// 16-dimensional embeddings, and the offline embedder of that dimension.
func sagaStore(t *testing.T) (*postgres.Store, *postgres.Campaign, *embed.Offline) {
	t.Helper()
	store, _ := pgtest.NewStore(t, 16)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	emb, err := embed.NewOffline(16)
	if err != nil {
		t.Fatal(err)
	}
	return store, camp, emb
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

func (h *harness) start() {
	h.t.Helper()
	h.startWith(nil)
}

// startWith starts the session with isDM telling its DM (nil: nobody).
func (h *harness) startWith(isDM func(userID string) bool) {
	h.t.Helper()
	err := h.m.Start(ctxFor(h.t), bot.StartRequest{GuildID: guildID, VoiceChannelID: channel, Campaign: "ironhold-saga",
		IsDM: isDM, Controls: live.NewControls(), Announce: func(string) {}, Ended: func(reason string) { h.ended <- reason }})
	if err != nil {
		h.t.Fatalf("starting the session: %v", err)
	}
}

// player joins the fake voice server as a user.
func (h *harness) player(user string) *conn.Conn {
	h.t.Helper()
	c, err := conn.Dial(ctxFor(h.t), conn.Params{Endpoint: h.voice.Endpoint(), GuildID: guildID, ChannelID: channel,
		UserID: user, SessionID: "sess-" + user, Token: "tok-" + user}, conn.Config{Logger: quiet(), HandshakeTimeout: time.Minute})
	if err != nil {
		h.t.Fatalf("player %s joining: %v", user, err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// say sends real speech as the player's client does, paced in real time,
// and returns how long the speech is and how much time the sender's pauses
// added to the stream. A frame sent more than 40 ms after the one before
// carries a timestamp that jumps by the pause (conn.WriteOpus, as a real
// client): on a loaded machine this goroutine may not be scheduled for a
// second or more, and the listener then hears the pause. paused is an upper
// bound of what it hears, measured from the start of one write to the end
// of the next.
func say(t *testing.T, c *conn.Conn, text string) (spoken, paused time.Duration) {
	t.Helper()
	pcm := audiotest.Speak(t, text, 48000)
	start := time.Now()
	st := audiotest.Encode(t, pcm, "player", 1, start)
	var prev time.Time
	for _, p := range st.Packets {
		time.Sleep(time.Until(p.Received))
		began := time.Now()
		if err := c.WriteOpus(p.Opus); err != nil {
			t.Fatalf("sending speech: %v", err)
		}
		if gap := time.Since(prev); !prev.IsZero() && gap > 40*time.Millisecond {
			paused += gap - 20*time.Millisecond
		}
		prev = began
	}
	return time.Duration(len(audiotest.Trim(pcm).Samples)) * time.Second / 48000, paused
}

func entries(t *testing.T, c *postgres.Campaign, session string) []memory.TranscriptEntry {
	t.Helper()
	es, err := c.Sessions().Entries(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestVoiceSessionFromStartToEnd(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{"grim jaw, what news of the shipment?"}, time.Minute)
	h.start()
	st, ok := h.m.Status(guildID)
	if !ok {
		t.Fatal("no status for the running session")
	}
	thorin := h.player(playerID)
	quinn := h.player(quietID)

	// Quinn opted out: nothing of theirs is transcribed or stored.
	say(t, quinn, "This is off the record.")
	spoken, paused := say(t, thorin, "Grimjaw, what news of the shipment?")

	ctx := ctxFor(t)
	if err := voicetest.Wait(ctx, func() bool { return len(entries(t, h.camp, st.SessionID)) >= 2 }); err != nil {
		t.Fatalf("the line and the reply were not recorded: %+v", entries(t, h.camp, st.SessionID))
	}
	// The NPC's voice reached the player.
	var got int
	if err := voicetest.Wait(ctx, func() bool {
		for {
			select {
			case p := <-thorin.Packets():
				if p.UserID == h.fake.BotUser.ID {
					got++
				}
			default:
				return got > 50
			}
		}
	}); err != nil {
		t.Fatalf("the player received %d frames of the NPC's reply", got)
	}

	heard := h.stt.utterances()
	if len(heard) != 1 {
		t.Fatalf("speech-to-text got %d utterances, want only Thorin's 1: %+v", len(heard), heard)
	}
	u := heard[0]
	// All of the speech, and no more than the pauses the sender made.
	if u.rate != 16000 || u.rmsDB < -40 || u.duration < spoken-300*time.Millisecond || u.duration > spoken+paused+800*time.Millisecond {
		t.Errorf("speech-to-text got %+v for %s of speech (with %s of the sender's pauses)", u, spoken, paused)
	}

	es := entries(t, h.camp, st.SessionID)
	if es[0].SpeakerID != playerID || es[0].SpeakerName != "Thorin" || es[0].RawText != "grim jaw, what news of the shipment?" ||
		es[0].Text != "Grimjaw, what news of the shipment?" || es[0].IdempotencyKey == "" {
		t.Errorf("player line %+v", es[0])
	}
	if es[1].NPCID != "grimjaw" || es[1].Text != "Stolen, not lost. Find my steel." {
		t.Errorf("NPC line %+v", es[1])
	}
	for _, e := range es {
		if e.SpeakerID == quietID {
			t.Errorf("an opted-out player's line was stored: %+v", e)
		}
	}
	req := h.llm.Requests()
	if len(req) != 1 || !strings.Contains(req[0].Messages[len(req[0].Messages)-1].Content, "Grimjaw, what news of the shipment?") {
		t.Errorf("the NPC was not asked the corrected line: %+v", req)
	}
	// The DM console's live view has the turn, with its stages. The turn
	// is reported when it ends, which may be after its first packets
	// reached the player: wait for the report.
	if err := voicetest.Wait(ctx, func() bool {
		h.obs.mu.Lock()
		answered := h.obs.turns["answered"]
		h.obs.mu.Unlock()
		st, _ := h.m.Status(guildID)
		return len(h.m.Live("ironhold-saga").Turns) > 0 && answered > 0 && st.TurnLatencyP50 != 0
	}); err != nil {
		t.Fatalf("the turn was not reported: live %+v, turns %v", h.m.Live("ironhold-saga"), h.obs.turns)
	}
	live := h.m.Live("ironhold-saga")
	if !live.Running || len(live.Turns) != 1 || live.Turns[0].NPC != "Grimjaw" || len(live.Turns[0].Stages) < 5 {
		t.Errorf("live status %+v", live)
	}
	st, _ = h.m.Status(guildID)
	if !slices.Equal(st.Recorded, []string{"Thorin"}) || !slices.Equal(st.OptedOut, []string{"Quinn"}) || st.TurnLatencyP50 == 0 {
		t.Errorf("status %+v", st)
	}

	h.obs.mu.Lock()
	for _, stage := range []string{metrics.StageSTTFinal, metrics.StageCorrection, metrics.StageHotContext,
		metrics.StageLLMFirstToken, metrics.StageFirstPacket} {
		if h.obs.stages[stage] != 1 {
			t.Errorf("stage %s observed %d times, want 1 (%v)", stage, h.obs.stages[stage], h.obs.stages)
		}
	}
	if h.obs.turns["answered"] != 1 || h.obs.running != 1 {
		t.Errorf("turns %v, %d sessions running", h.obs.turns, h.obs.running)
	}
	h.obs.mu.Unlock()

	if err := h.m.End(ctx, guildID); err != nil {
		t.Fatal(err)
	}
	if h.obs.mu.Lock(); h.obs.running != 0 {
		t.Errorf("%d sessions running after End", h.obs.running)
	}
	h.obs.mu.Unlock()
	// Post-session processing runs in the background: the session's
	// chunks are final once it is done.
	if err := voicetest.Wait(ctx, func() bool {
		cs, err := h.camp.Index().Chunks(ctx, st.SessionID)
		return err == nil && len(cs) > 0
	}); err != nil {
		t.Fatal("the session has no chunks after it ended")
	}
	sessions, err := h.camp.Sessions().Sessions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sessions, func(s memory.Session) bool { return s.ID == st.SessionID })
	if i < 0 || sessions[i].EndedAt.IsZero() {
		t.Errorf("session %s not marked ended: %+v", st.SessionID, sessions)
	}
	if _, ok := h.m.Status(guildID); ok {
		t.Error("the session still reports a status after End")
	}
	if err := h.m.End(ctx, guildID); err == nil {
		t.Error("ending twice succeeded")
	}
}

// TestTheDMsLinesAreLabelledDM: the request's IsDM reaches the table: the
// DM's line (Thorin's user, here the DM) is recorded as "DM", the DM's
// narration in recaps, not under their display name.
func TestTheDMsLinesAreLabelledDM(t *testing.T) {
	t.Parallel()
	h := newHarness(t, []string{"grim jaw, what news of the shipment?"}, time.Minute)
	h.startWith(func(u string) bool { return u == playerID })
	st, ok := h.m.Status(guildID)
	if !ok {
		t.Fatal("no status for the running session")
	}
	say(t, h.player(playerID), "Grimjaw, what news of the shipment?")
	if err := voicetest.Wait(ctxFor(t), func() bool { return len(entries(t, h.camp, st.SessionID)) >= 1 }); err != nil {
		t.Fatal("the DM's line was not recorded")
	}
	if e := entries(t, h.camp, st.SessionID)[0]; e.SpeakerID != playerID || e.SpeakerName != memory.DMSpeaker {
		t.Errorf("the DM's line is recorded as %q (%s), want %q", e.SpeakerName, e.SpeakerID, memory.DMSpeaker)
	}
}

func TestSessionLeavesAnEmptyChannel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, 400*time.Millisecond)
	h.start()
	select {
	case reason := <-h.ended:
		if !strings.Contains(reason, "empty") {
			t.Errorf("ended because %q", reason)
		}
	case <-ctxFor(t).Done():
		t.Fatal("the session did not end in an empty channel")
	}
	if _, ok := h.m.Status(guildID); ok {
		t.Error("the session still runs")
	}
}

// failingLink cannot join any channel.
type failingLink struct{}

func (failingLink) Join(context.Context, string, string) (table.Voice, error) {
	return nil, fmt.Errorf("voice server unreachable")
}
func (failingLink) Leave(string) error { return nil }

func TestFailedJoinLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	store, camp, emb := sagaStore(t)
	m, err := voicesession.New(voicesession.Config{Door: pgtest.Door(t, store), Link: failingLink{},
		Providers: table.Providers{STT: &scriptedSTT{}, Embedder: emb}, Settings: table.Settings{StateDir: t.TempDir()},
		Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(context.Background())
	before, err := camp.Sessions().Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := bot.StartRequest{GuildID: guildID, VoiceChannelID: channel, Campaign: "ironhold-saga"}
	err = m.Start(ctxFor(t), req)
	if err == nil || !strings.Contains(err.Error(), "voice server unreachable") {
		t.Fatalf("start: %v", err)
	}
	if _, ok := m.Status(guildID); ok {
		t.Error("a failed start left a session running")
	}
	// Nothing was recorded: the channel is joined before the session
	// starts.
	after, err := camp.Sessions().Sessions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("a failed start recorded a session: %+v", after)
	}
	// The guild is free again.
	if err := m.Start(ctxFor(t), req); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("second start: %v", err)
	}
}
