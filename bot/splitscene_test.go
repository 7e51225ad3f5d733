package bot_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// promptLine is a transcript line of a recap prompt ("[id] 15:04 Speaker:
// text").
var promptLine = regexp.MustCompile(`(?m)^\[(\d+)\] \d\d:\d\d ([^:\n]+): (.*)$`)

// echoRecap is a fake recap model that retells every line it was given,
// each citing its line: whatever reaches the model reaches the recap.
func echoRecap(_ int, req llmtest.Request) llmtest.Reply {
	var sentences []string
	for _, m := range req.Messages {
		for _, l := range promptLine.FindAllStringSubmatch(m.Content, -1) {
			sentences = append(sentences, fmt.Sprintf(`{"text": %q, "lines": [%s]}`, l[2]+" said: "+l[3], l[1]))
		}
	}
	return llmtest.Reply{Text: `{"sentences": [` + strings.Join(sentences, ",") + `]}`}
}

// TestPublicRecapLeavesOutTheSplitScene: a public /recap is posted in the
// channel, so it reads as any player whoever asks. After the DM split the
// party (Lyra alone in the scene), the recap posted by Thorin, by Lyra
// herself and by the DM holds the lines the party said together and no
// line of the scene, nor the line Thorin said at the table outside it (the
// fake model retells every line it is given, so what is left out of the
// recap was never in its prompt); Lyra's own "what you missed" holds the
// scene, Thorin's does not, and the DM's own recap (player_safe:false)
// holds everything.
func TestPublicRecapLeavesOutTheSplitScene(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(echoRecap)
	t.Cleanup(srv.Close)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, bot.Deps{RecapLLM: client})
	ctx := context.Background()
	lyra := discordtest.Member{UserID: "u2", Name: "Lyra"}
	sl := h.camp.Sessions()
	start := time.Date(2026, 4, 2, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "split", start); err != nil {
		t.Fatal(err)
	}
	// What the table records: everyone; the DM splits the party (Lyra's
	// scene); Thorin talks at the table outside it (nobody in the scene
	// hears him); the scene again; the party together.
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{
		{0, []string{player.UserID, lyra.UserID}, false},
		{time.Minute, []string{lyra.UserID}, true},
		{150 * time.Second, []string{}, true},
		{160 * time.Second, []string{lyra.UserID}, true},
		{3 * time.Minute, []string{player.UserID, lyra.UserID}, false},
	} {
		if err := sl.RecordPresence(ctx, "split", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []memory.TranscriptEntry{
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "Everyone sees the lanterns of Quillmere harbour.", At: start.Add(30 * time.Second)},
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "Lyra alone finds the sapphire key under the altar.", At: start.Add(2 * time.Minute)},
		{SpeakerID: player.UserID, SpeakerName: "Thorin", Text: "Thorin rings the copper bell at the table.", At: start.Add(155 * time.Second)},
		{SpeakerID: lyra.UserID, SpeakerName: "Lyra", Text: "Lyra hides the sapphire key in her boot.", At: start.Add(165 * time.Second)},
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "The party meets again at the harbour gate.", At: start.Add(4 * time.Minute)},
	} {
		e.SessionID = "split"
		if _, err := sl.WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	recap := func(who discordtest.Member, opts ...discordtest.Opt) string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, who, "recap", opts...)
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	public := []discordtest.Opt{discordtest.Str("scope", "session"), discordtest.Str("session", "split"), discordtest.Str("delivery", "public")}
	party := []string{"lanterns", "harbour gate"}
	scene := []string{"sapphire", "copper bell"}
	for _, tc := range []struct {
		name     string
		who      discordtest.Member
		opts     []discordtest.Opt
		has, not []string
	}{
		{"Thorin's public recap", player, public, party, scene},
		{"Lyra's public recap", lyra, public, party, scene},
		{"the DM's public recap", theDM, public, party, scene},
		{"Thorin's private recap", player, public[:2], party, scene},
		{"the DM's own recap", theDM, []discordtest.Opt{discordtest.Str("scope", "session"), discordtest.Str("session", "split"),
			discordtest.Bool("player_safe", false)}, append(append([]string{}, party...), scene...), nil},
		{"Lyra's what you missed", lyra, []discordtest.Opt{discordtest.Str("for", "me")}, []string{"sapphire", "lanterns"}, []string{"copper bell"}},
		{"Thorin's what you missed", player, []discordtest.Opt{discordtest.Str("for", "me")}, []string{"lanterns", "copper bell"}, []string{"sapphire"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := recap(tc.who, tc.opts...)
			for _, s := range tc.not {
				if strings.Contains(out, s) {
					t.Errorf("LEAK: %q in\n%s", s, out)
				}
			}
			for _, s := range tc.has {
				if !strings.Contains(out, s) {
					t.Errorf("%q missing from\n%s", s, out)
				}
			}
		})
	}
}
