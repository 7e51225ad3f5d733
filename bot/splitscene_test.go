package bot_test

import (
	"context"
	"fmt"
	"regexp"
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

// promptLine is a transcript line of a recap prompt ("[id] 15:04 Speaker:
// text").
var promptLine = regexp.MustCompile(`(?m)^\[(\d+)\] \d\d:\d\d ([^:\n]+): (.*)$`)

// echoRecap is a fake recap model that retells every line it was given,
// each citing its line: whatever line reaches the model reaches the recap.
// It keeps the prompts (the facts it was given are checked there).
type echoRecap struct {
	mu      sync.Mutex
	prompts []string
}

func (p *echoRecap) handle(_ int, req llmtest.Request) llmtest.Reply {
	var sentences []string
	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Content + "\n")
		for _, l := range promptLine.FindAllStringSubmatch(m.Content, -1) {
			sentences = append(sentences, fmt.Sprintf(`{"text": %q, "lines": [%s]}`, l[2]+" said: "+l[3], l[1]))
		}
	}
	p.mu.Lock()
	p.prompts = append(p.prompts, all.String())
	p.mu.Unlock()
	return llmtest.Reply{Text: `{"sentences": [` + strings.Join(sentences, ",") + `]}`}
}

// take returns the prompts since the last take.
func (p *echoRecap) take() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := strings.Join(p.prompts, "\n")
	p.prompts = nil
	return out
}

// TestPublicRecapLeavesOutTheSplitScene: a public /recap is posted in the
// channel, so it reads as any player whoever asks. After the DM split the
// party (Lyra alone in the scene), the recap posted by Thorin, by Lyra
// herself and by the DM holds the lines the party said together and no
// line of the scene, nor the line Thorin said at the table outside it (the
// fake model retells every line it is given, so what is left out of the
// recap was never in its prompt); Lyra's own "what you missed" holds the
// scene, Thorin's does not, and the DM's own recap (player_safe:false)
// holds everything. A fact extracted from the scene's line reaches the
// model's prompt of the DM's own recap only, and Lyra's "what you missed"
// (facts revealed in her presence), not Thorin's.
func TestPublicRecapLeavesOutTheSplitScene(t *testing.T) {
	t.Parallel()
	echo := &echoRecap{}
	srv := llmtest.New(echo.handle)
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
	es, err := sl.Entries(ctx, "split")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	// A fact extracted from the scene's first line (what the DM told Lyra).
	f, err := h.camp.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "lyra", TargetID: "rusty-tankard", Type: "HID_KEY_AT",
		Provenance: memory.Provenance{SessionID: "split", Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.camp.Graph().AddEvidence(ctx, f.ID, ids[1:2]); err != nil {
		t.Fatal(err)
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
	const fact = "hid key at" // the scene's fact, as a recap's prompt gives it
	for _, tc := range []struct {
		name     string
		who      discordtest.Member
		opts     []discordtest.Opt
		has, not []string
		fact     bool // the scene's fact is in the model's prompt
	}{
		{"Thorin's public recap", player, public, party, scene, false},
		{"Lyra's public recap", lyra, public, party, scene, false},
		{"the DM's public recap", theDM, public, party, scene, false},
		{"Thorin's private recap", player, public[:2], party, scene, false},
		{"the DM's own recap", theDM, []discordtest.Opt{discordtest.Str("scope", "session"), discordtest.Str("session", "split"),
			discordtest.Bool("player_safe", false)}, append(append([]string{}, party...), scene...), nil, true},
		{"Lyra's what you missed", lyra, []discordtest.Opt{discordtest.Str("for", "me")}, []string{"sapphire", "lanterns", "hid key at"}, []string{"copper bell"}, false},
		{"Thorin's what you missed", player, []discordtest.Opt{discordtest.Str("for", "me")}, []string{"lanterns", "copper bell"}, []string{"sapphire", "hid key at"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			echo.take()
			out := recap(tc.who, tc.opts...)
			if prompt := strings.ToLower(echo.take()); strings.Contains(prompt, fact) != tc.fact {
				if tc.fact {
					t.Errorf("the recap's prompt lacks the scene's fact %q:\n%s", fact, prompt)
				} else {
					t.Errorf("LEAK: the recap's prompt holds the scene's fact %q:\n%s", fact, prompt)
				}
			}
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
