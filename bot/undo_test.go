package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// replyVoice is a VoiceSessions that reports NPC replies and withdraws
// them by id, as the table does: only the latest, once.
type replyVoice struct {
	bot.VoiceSessions
	mu      sync.Mutex
	replied func(bot.NPCReply)
	latest  string
	gone    map[string]bool
	undone  []string
}

func (v *replyVoice) Start(_ context.Context, req bot.StartRequest) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.replied = req.Replied
	return nil
}

func (v *replyVoice) Status(string) (bot.SessionStatus, bool) {
	return bot.SessionStatus{SessionID: "s1"}, true
}

func (v *replyVoice) End(context.Context, string) error { return nil }

func (v *replyVoice) reply(r bot.NPCReply) {
	v.mu.Lock()
	v.latest = r.ID
	replied := v.replied
	v.mu.Unlock()
	replied(r)
}

func (v *replyVoice) UndoReply(_ context.Context, guildID, id string) (bot.Undone, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.replied == nil:
		return bot.Undone{}, false, nil
	case v.gone[id]:
		return bot.Undone{NPCName: "Grimjaw"}, true, bot.ErrReplyGone
	case id != v.latest:
		return bot.Undone{}, true, fmt.Errorf("%w: later", bot.ErrReplyNotLatest)
	}
	v.gone[id] = true
	v.undone = append(v.undone, id)
	return bot.Undone{NPCName: "Grimjaw", Reply: "Forty gold."}, true, nil
}

// TestUndoButton: each NPC reply is posted in the session channel with an
// Undo button; the DM's press withdraws it (the message loses its button
// and says so), a player's press is refused ephemerally and withdraws
// nothing, and an older reply or one withdrawn already is refused.
func TestUndoButton(t *testing.T) {
	t.Parallel()
	v := &replyVoice{gone: map[string]bool{}}
	h := newHarness(t, bot.Deps{Voice: v})
	if err := h.bot.Resume(context.Background(), guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	posted := func(id string) (string, string) {
		t.Helper()
		c := h.waitCall(func(c discordtest.Call) bool {
			return c.Method == "POST" && strings.HasSuffix(c.Path, "/channels/"+channelID+"/messages") && strings.Contains(string(c.Body), "undo:"+id)
		})
		var m struct {
			Content    string `json:"content"`
			Components []struct {
				Components []struct {
					Label    string `json:"label"`
					CustomID string `json:"custom_id"`
				} `json:"components"`
			} `json:"components"`
		}
		if err := json.Unmarshal(c.Body, &m); err != nil {
			t.Fatal(err)
		}
		if len(m.Components) != 1 || len(m.Components[0].Components) != 1 {
			t.Fatalf("reply message components: %s", c.Body)
		}
		b := m.Components[0].Components[0]
		return m.Content, b.Label + "|" + b.CustomID
	}
	v.reply(bot.NPCReply{ID: "r1", NPCName: "Grimjaw", Text: "Forty gold, not a copper less.", Voiced: true})
	content, button := posted("r1")
	if content != "🗣️ **Grimjaw:** Forty gold, not a copper less." || button != "Undo: that wasn't for Grimjaw|undo:r1" {
		t.Fatalf("voiced reply posted as %q with %q", content, button)
	}
	v.reply(bot.NPCReply{ID: "r2", NPCName: "Grimjaw", Text: "Aye.", Voiced: false})
	if content, _ := posted("r2"); content != "↩️ Grimjaw answered." {
		t.Errorf("a reply already in the channel: control message %q", content)
	}
	press := func(m discordtest.Member, id, content string) response {
		i := h.fake.Button(guildID, channelID, m, "undo:"+id)
		i.Payload["message"].(map[string]any)["content"] = content
		return h.send(i)
	}
	if r := press(player, "r2", "↩️ Grimjaw answered."); !strings.Contains(r.Data.Content, "Only the DM") ||
		r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("a player's press: %+v", r.Data)
	}
	if r := press(theDM, "r1", content); !strings.Contains(r.Data.Content, "only the latest") || r.Data.Flags&discordgo.MessageFlagsEphemeral == 0 {
		t.Errorf("an older reply: %+v", r.Data)
	}
	r := press(theDM, "r2", "↩️ Grimjaw answered.")
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "~~↩️ Grimjaw answered.~~") ||
		!strings.Contains(r.Data.Content, "Withdrawn by the DM") || len(r.Data.Components) != 0 {
		t.Errorf("the DM's press: type %d, %q, %d components", r.Type, r.Data.Content, len(r.Data.Components))
	}
	if r := press(theDM, "r2", "↩️ Grimjaw answered."); !strings.Contains(r.Data.Content, "withdrawn already") {
		t.Errorf("a second press: %q", r.Data.Content)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.undone) != 1 || v.undone[0] != "r2" {
		t.Errorf("withdrawn %v, want [r2]", v.undone)
	}
}
