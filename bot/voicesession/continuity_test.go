package voicesession_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// pipeVoice is a voice channel the test feeds frames into.
type pipeVoice struct {
	packets chan audio.Packet
	events  chan conn.Event
}

func (v *pipeVoice) Packets() <-chan audio.Packet { return v.packets }
func (v *pipeVoice) Events() <-chan conn.Event    { return v.events }
func (v *pipeVoice) WriteOpus([]byte) error       { return nil }
func (v *pipeVoice) SetSpeaking(bool) error       { return nil }
func (v *pipeVoice) Users() []string              { return []string{playerID} }
func (v *pipeVoice) Close() error                 { return nil }

// pipeLink joins every channel as the one pipeVoice.
type pipeLink struct{ v *pipeVoice }

func (l pipeLink) Join(context.Context, string, string) (table.Voice, error) { return l.v, nil }
func (l pipeLink) Leave(string) error                                        { return nil }

const dmUserID = "200000000000000001"

// cardRig is the table serve runs, on a voice channel the test feeds,
// with the bot sending continuity cards to the fake Discord.
type cardRig struct {
	m      *voicesession.Manager
	camp   *postgres.Campaign
	fake   *discordtest.Server
	v      *pipeVoice
	frames []audio.Packet
	seq    uint16
	ts     uint32
}

// newCardRig starts a session whose speech-to-text hears script and whose
// NPCs answer with replies (none: no LLM).
func newCardRig(t *testing.T, script []string, replies ...llmtest.Reply) *cardRig {
	t.Helper()
	audiotest.Need(t, "espeak-ng")
	ctx := ctxFor(t)
	store, _ := pgtest.NewStore(t, 16)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	if _, err := camp.Graph().RetireEntity(ctx, "brannoc", "", "killed in the fire"); err != nil {
		t.Fatal(err)
	}
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.AddGuild(&discordgo.Guild{ID: guildID, Name: "The Table"})
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	fake.Attach(sess)
	emb, err := embed.NewOffline(16)
	if err != nil {
		t.Fatal(err)
	}
	prov := table.Providers{STT: &scriptedSTT{script: script}, STTProvider: table.ProviderDeepgram, Embedder: emb}
	if len(replies) > 0 {
		lm := llmtest.New(llmtest.Script(replies...))
		t.Cleanup(lm.Close)
		if prov.LLM, err = llm.New(llm.Config{BaseURL: lm.URL(), Model: "fake", Backoff: time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	v := &pipeVoice{packets: make(chan audio.Packet, 4096), events: make(chan conn.Event)}
	door := pgtest.Door(t, store)
	m, err := voicesession.New(voicesession.Config{Door: door, Link: pipeLink{v}, Providers: prov,
		Settings: table.Settings{StateDir: t.TempDir()}, Continuity: true,
		UserName: func(_, u string) string { return "Thorin" }, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("closing the manager: %v", err)
		}
	})
	b, err := bot.New(bot.Config{Guilds: []bot.Guild{{ID: guildID, Campaign: "ironhold-saga", TextChannelID: channel,
		DMUserIDs: []string{dmUserID}}}, Logger: quiet()}, bot.Deps{Door: door, Voice: m}, bot.WithSession(sess))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		b.Close(ctx)
		sess.Close()
	})
	if err := b.Resume(ctx, guildID, bot.ClaimedSession{Campaign: "ironhold-saga", VoiceChannelID: channel,
		TextChannelID: channel}); err != nil {
		t.Fatal(err)
	}
	clip := audiotest.Speak(t, "Grimjaw is in Duskwood.", 48000)
	sig, _ := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond}, []audio.PCM{clip}, 200*time.Millisecond)
	return &cardRig{m: m, camp: camp, fake: fake, v: v, frames: audiotest.Encode(t, sig, playerID, 1, time.Now()).Packets}
}

// say sends one utterance's frames; it returns when the last was sent.
func (r *cardRig) say() time.Time {
	for _, p := range r.frames {
		r.v.packets <- audio.Packet{UserID: playerID, SSRC: 1, Sequence: r.seq, Timestamp: r.ts, Opus: p.Opus}
		r.seq++
		r.ts += 960
	}
	r.ts += 50 * 960
	return time.Now()
}

// card waits for the card whose message holds marker to reach the DM.
func (r *cardRig) card(t *testing.T, marker string) discordtest.Call {
	t.Helper()
	c, err := r.fake.WaitCall(wait, func(c discordtest.Call) bool {
		return c.Method == "POST" && c.Path == "/channels/"+discordtest.DMChannel(dmUserID)+"/messages" &&
			strings.Contains(string(c.Body), marker)
	})
	if err != nil {
		t.Fatalf("no card holding %q reached the DM: %v", marker, err)
	}
	return c
}

// TestContinuityCardOnTheTablePath measures the time from a contradicting
// line to the DM's card on the table path that serve runs: the player's
// frames, the lanes, speech-to-text (scripted), the session log on
// PostgreSQL, the continuity check, and the bot sending the card as a
// direct message to the fake Discord. It logs min, median and p95 over 24
// lines, from the end of the player's speech (the last frame sent: it
// includes the lane's end of turn, 600 ms) and from the line's recording
// (the card raised). The figures are logged, not asserted (no wall-clock
// budget in tests); every line must raise its card.
func TestContinuityCardOnTheTablePath(t *testing.T) {
	t.Parallel()
	shapes := []string{"Grimjaw is in Duskwood", "Thorin has the Dawn Hammer", "Brannoc pours us another ale",
		"Elara is at the Rusty Tankard"}
	const n = 24
	var script []string
	for i := range n {
		script = append(script, fmt.Sprintf("%s, %s.", shapes[i%len(shapes)], markers[i]))
	}
	r := newCardRig(t, script)
	m := r.m
	var fromSpeech, fromRecorded []time.Duration
	for i := range n {
		ended := r.say()
		r.card(t, markers[i])
		posted := time.Now()
		fromSpeech = append(fromSpeech, posted.Sub(ended))
		cards := m.ContinuityCards().List("ironhold-saga")
		if len(cards) != i+1 || !strings.Contains(cards[0].Line.Text, markers[i]) {
			t.Fatalf("after line %d the board holds %d cards, the newest %+v", i+1, len(cards), cards[0])
		}
		fromRecorded = append(fromRecorded, posted.Sub(cards[0].Raised))
	}
	// The board notes each card posted once its message was sent (a hang
	// guard of its own: the lines above may have used up ctx's on a loaded
	// machine).
	if err := voicetest.Wait(ctxFor(t), func() bool {
		for _, c := range m.ContinuityCards().List("ironhold-saga") {
			if c.Posted.IsZero() || c.Status != "open" {
				return false
			}
		}
		return true
	}); err != nil {
		t.Errorf("cards not noted posted: %+v", m.ContinuityCards().List("ironhold-saga"))
	}
	for _, c := range r.fake.Calls() {
		if strings.Contains(c.Path, "/channels/"+channel) && strings.Contains(string(c.Body), "LOCATED_AT") {
			t.Errorf("a card reached the table's channel: %s", c.Body)
		}
	}
	stat := func(ds []time.Duration) string {
		s := slices.Clone(ds)
		slices.Sort(s)
		return fmt.Sprintf("min %v, median %v, p95 %v, max %v", s[0].Round(time.Millisecond), s[len(s)/2].Round(time.Millisecond),
			s[len(s)*95/100].Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond))
	}
	t.Logf("%d lines; end of speech to the DM's card: %s", n, stat(fromSpeech))
	t.Logf("%d lines; line recorded to the DM's card: %s", n, stat(fromRecorded))
}

// markers make each line's card findable on its own.
var markers = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november " +
	"oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")

// TestDraftReplyIsChecked: a sentence of an NPC's draft reply that
// contradicts what it knows of canon is not said (nor recorded), and the
// DM gets a card saying so; the rest of the reply is said.
func TestDraftReplyIsChecked(t *testing.T) {
	t.Parallel()
	r := newCardRig(t, []string{"Grimjaw, where is the steel?"},
		llmtest.Reply{Text: "The steel is gone. Elara is at the Rusty Tankard. Ask her about the runes."})
	ctx := ctxFor(t)
	r.say()
	c := r.card(t, "Rusty Tankard")
	if !strings.Contains(string(c.Body), "was not said") || !strings.Contains(string(c.Body), "Elara Moonwhisper —LOCATED_AT→ Tower of Whispers") {
		t.Errorf("the card of the unsaid sentence: %s", c.Body)
	}
	st, ok := r.m.Status(guildID)
	if !ok {
		t.Fatal("no session")
	}
	var reply string
	if err := voicetest.Wait(ctx, func() bool {
		for _, e := range entries(t, r.camp, st.SessionID) {
			if e.NPCID == "grimjaw" {
				reply = e.Text
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the reply was not recorded: %+v", entries(t, r.camp, st.SessionID))
	}
	if reply != "The steel is gone. Ask her about the runes." {
		t.Errorf("recorded reply %q; want it without the sentence that contradicts canon", reply)
	}
	for _, call := range r.fake.Calls() {
		if strings.Contains(call.Path, "/channels/"+channel) && strings.Contains(string(call.Body), "Rusty Tankard") {
			t.Errorf("the unsaid sentence reached the table's channel: %s", call.Body)
		}
	}
	cards := r.m.ContinuityCards().List("ironhold-saga")
	if len(cards) != 1 || !cards[0].Unsaid || cards[0].Line.Speaker != "Grimjaw" {
		t.Errorf("cards %+v; want one, for Grimjaw's unsaid sentence", cards)
	}
}
