package bot_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

func TestDMDirectsAnNPC(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	direct := func(m discordtest.Member, opts ...discordtest.Opt) response {
		return h.send(h.fake.Command(guildID, channelID, m, "npc", discordtest.Sub("direct", opts...)))
	}
	c := h.bot.Controls(guildID)
	if r := direct(player, discordtest.Str("npc", "grimjaw"), discordtest.Str("instruction", "be curt")); !strings.Contains(r.Data.Content, "is for the DM") {
		t.Fatalf("a player directed an NPC: %q", r.Data.Content)
	}
	if _, ok := c.Direction("grimjaw"); ok {
		t.Fatal("a refused direction was kept")
	}
	if r := direct(theDM, discordtest.Str("npc", "thorin"), discordtest.Str("instruction", "be curt")); !strings.Contains(r.Data.Content, "not an NPC") {
		t.Errorf("directing a player character: %q", r.Data.Content)
	}
	if r := direct(theDM, discordtest.Str("npc", "Grim"), discordtest.Str("instruction", "be curt"),
		discordtest.Opt{"name": "replies", "type": 4, "value": 0}); !strings.Contains(r.Data.Content, "1 or more") {
		t.Errorf("replies 0: %q", r.Data.Content)
	}
	if r := direct(theDM, discordtest.Str("npc", "Grim"), discordtest.Str("instruction", strings.Repeat("x", 501))); !strings.Contains(r.Data.Content, "at most 500") {
		t.Errorf("a long instruction: %q", r.Data.Content)
	}
	r := direct(theDM, discordtest.Str("npc", "Grim"), discordtest.Str("instruction", "stall, and hint at the smugglers"),
		discordtest.Opt{"name": "replies", "type": 4, "value": 2})
	if !strings.Contains(r.Data.Content, "Grimjaw's next 2 replies") || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("direction reply %+v", r.Data)
	}
	for i, want := range []string{"stall, and hint at the smugglers", "stall, and hint at the smugglers", ""} {
		if got := c.TakeDirection("grimjaw"); got != want {
			t.Errorf("reply %d: TakeDirection = %q, want %q", i+1, got, want)
		}
	}
	if r := direct(theDM, discordtest.Str("npc", "Grimjaw"), discordtest.Str("instruction", "be curt")); !strings.Contains(r.Data.Content, "until you clear it") {
		t.Errorf("direction reply %q", r.Data.Content)
	}
	if d, ok := c.Direction("grimjaw"); !ok || d.Text != "be curt" || d.Left != 0 {
		t.Errorf("Direction = %+v, %v", d, ok)
	}
	if r := direct(theDM, discordtest.Str("npc", "Grimjaw")); !strings.Contains(r.Data.Content, "cleared") {
		t.Errorf("clearing: %q", r.Data.Content)
	}
	if got := c.TakeDirection("grimjaw"); got != "" {
		t.Errorf("after clearing: %q", got)
	}
}

// undoVoice is a VoiceSessions that can undo (the rest is unused here).
type undoVoice struct {
	bot.VoiceSessions
	mu      sync.Mutex
	running bool
	guilds  []string
	undone  bot.Undone
	err     error
}

func (v *undoVoice) Undo(_ context.Context, guildID string) (bot.Undone, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.guilds = append(v.guilds, guildID)
	return v.undone, v.running, v.err
}

func (v *undoVoice) Say(context.Context, string, string, string) error { return nil }

func (v *undoVoice) Forget(context.Context, string, string, func(context.Context) error) (memory.ForgetReport, bool, error) {
	return memory.ForgetReport{}, false, nil
}

func TestDMUndoesAReply(t *testing.T) {
	t.Parallel()
	v := &undoVoice{}
	h := newHarness(t, bot.Deps{Voice: v})
	undo := func(m discordtest.Member) (discordtest.Interaction, response) {
		i := h.fake.Command(guildID, channelID, m, "npc", discordtest.Sub("undo"))
		return i, h.send(i)
	}
	if _, r := undo(player); !strings.Contains(r.Data.Content, "is for the DM") {
		t.Fatalf("a player undid a reply: %q", r.Data.Content)
	}
	if len(v.guilds) != 0 {
		t.Fatal("a refused undo reached the session")
	}
	tests := []struct {
		name    string
		running bool
		undone  bot.Undone
		want    string
	}{
		{"no session", false, bot.Undone{}, "no voice session is running"},
		{"a reply", true, bot.Undone{NPCName: "Grimjaw", Reply: "Forty gold."}, "Withdrawn: Grimjaw's reply “Forty gold.”"},
		{"while speaking", true, bot.Undone{NPCName: "Grimjaw", Interrupted: true}, "Grimjaw stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v.mu.Lock()
			v.running, v.undone = tt.running, tt.undone
			v.mu.Unlock()
			i, _ := undo(theDM)
			got, _ := h.original(i)["content"].(string)
			if !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want %q in it", got, tt.want)
			}
		})
	}
	if len(v.guilds) != 3 || v.guilds[0] != guildID {
		t.Errorf("undo reached guilds %v", v.guilds)
	}
}
