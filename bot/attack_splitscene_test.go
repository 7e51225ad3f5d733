package bot_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// recapVoice is a running voice session that keeps what the narrator says
// in the voice channel, heard by every player in it.
type recapVoice struct {
	bot.VoiceSessions
	mu   sync.Mutex
	said []string
}

func (v *recapVoice) Start(context.Context, bot.StartRequest) error { return nil }
func (v *recapVoice) End(context.Context, string) error             { return nil }
func (v *recapVoice) Status(string) (bot.SessionStatus, bool) {
	return bot.SessionStatus{SessionID: "live"}, true
}
func (v *recapVoice) Say(_ context.Context, _, _, text string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.said = append(v.said, text)
	return nil
}
func (v *recapVoice) spoken() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return strings.Join(v.said, "\n")
}

// TestVoiceRecapIsPlayerSafe (a leak an adversarial review found, fixed
// since; the test keeps it fixed): /recap
// delivery:voice has the narrator speak in the voice channel, where every
// player hears it, as a public recap is read by every player in the text
// channel. A public recap is forced player-safe (it reads as any player:
// no line of a split scene); a spoken one is not: the DM's
// `/recap delivery:voice` without player_safe (its default for the DM is
// false) speaks the lines of Lyra's split scene to Thorin, who was not in
// it. Expected: a voice recap reads as any player, as a public one does.
func TestVoiceRecapIsPlayerSafe(t *testing.T) {
	t.Parallel()
	echo := &echoRecap{}
	srv := llmtest.New(echo.handle)
	t.Cleanup(srv.Close)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	v := &recapVoice{}
	h := newHarnessFor(t, bot.Deps{RecapLLM: client, Voice: v}, bot.Guild{ID: guildID, Campaign: campaign,
		DMRoleIDs: []string{dmRole}, NarratorNPC: "grimjaw"})
	ctx := context.Background()
	if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "live"}); err != nil {
		t.Fatal(err)
	}
	lyra := discordtest.Member{UserID: "u2", Name: "Lyra"}
	sl := h.camp.Sessions()
	start := time.Date(2026, 4, 2, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "split", start); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{
		{0, []string{player.UserID, lyra.UserID}, false},
		{time.Minute, []string{lyra.UserID}, true},
		{3 * time.Minute, []string{player.UserID, lyra.UserID}, false},
	} {
		if err := sl.RecordPresence(ctx, "split", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []memory.TranscriptEntry{
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "Everyone sees the lanterns of Quillmere harbour.", At: start.Add(30 * time.Second)},
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "Lyra alone finds the sapphire key under the altar.", At: start.Add(2 * time.Minute)},
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "The party meets again at the harbour gate.", At: start.Add(4 * time.Minute)},
	} {
		e.SessionID = "split"
		if _, err := sl.WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	i := h.fake.Command(guildID, channelID, theDM, "recap", discordtest.Str("scope", "session"),
		discordtest.Str("session", "split"), discordtest.Str("delivery", "voice"))
	h.send(i)
	content, _ := h.original(i)["content"].(string)
	said := v.spoken()
	if !strings.Contains(said, "lanterns") {
		t.Fatalf("the narrator did not speak the recap (reply %q): %q", content, said)
	}
	if strings.Contains(said, "sapphire") {
		t.Errorf("LEAK: the narrator speaks Lyra's split scene to the whole voice channel:\n%s", said)
	}
}
