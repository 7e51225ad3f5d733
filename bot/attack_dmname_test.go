package bot_test

import (
	"context"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
)

// dmVoice is a VoiceSessions that keeps the request it was started with.
type dmVoice struct {
	bot.VoiceSessions
	mu  sync.Mutex
	req bot.StartRequest
}

func (v *dmVoice) Start(_ context.Context, req bot.StartRequest) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.req = req
	return nil
}

func (v *dmVoice) Status(string) (bot.SessionStatus, bool) {
	return bot.SessionStatus{SessionID: "s1"}, true
}

func (v *dmVoice) End(context.Context, string) error { return nil }

// TestAttackTableDMIsNotANickname: the table labels a speaker's lines as
// the DM's (StartRequest.IsDM) when they started the session, are listed
// in dm_user_ids or hold a role of dm_role_ids; a player whose nickname is
// "DM" is none of these, and neither is a server administrator who only
// plays.
func TestAttackTableDMIsNotANickname(t *testing.T) {
	t.Parallel()
	v := &dmVoice{}
	h := newHarnessFor(t, bot.Deps{Voice: v}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole},
		DMUserIDs: []string{"300000000000000001"}})
	h.fake.AddMember(guildID, &discordgo.Member{User: &discordgo.User{ID: "300000000000000002", Username: "cora"},
		Nick: "Cora", Roles: []string{dmRole}})
	h.fake.AddMember(guildID, &discordgo.Member{User: &discordgo.User{ID: player.UserID, Username: "thorin"}, Nick: "DM"})
	h.fake.AddMember(guildID, &discordgo.Member{User: &discordgo.User{ID: "300000000000000003", Username: "owner"},
		Nick: "GM", Permissions: discordgo.PermissionAdministrator})
	if err := h.bot.Resume(context.Background(), guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "s1", StartedBy: theDM.UserID}); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	isDM := v.req.IsDM
	v.mu.Unlock()
	if isDM == nil {
		t.Fatal("the session was started with no IsDM: the table cannot tell the DM's lines")
	}
	for _, c := range []struct {
		who, id string
		want    bool
	}{
		{"the DM who started the session", theDM.UserID, true},
		{"a user dm_user_ids lists", "300000000000000001", true},
		{"a member with a DM role", "300000000000000002", true},
		{"a player nicknamed DM", player.UserID, false},
		{"an administrator nicknamed GM", "300000000000000003", false},
		{"nobody", "", false},
	} {
		// Twice: the second answer comes from the member cache.
		for range 2 {
			if got := isDM(c.id); got != c.want {
				t.Errorf("%s (%s): IsDM %v, want %v", c.who, c.id, got, c.want)
			}
		}
	}
}
