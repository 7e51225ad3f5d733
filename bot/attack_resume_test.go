package bot_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// resumeVoice is a running voice session that starts and reports itself
// running (session "live"), for Resume.
type resumeVoice struct{ bot.VoiceSessions }

func (resumeVoice) Start(context.Context, bot.StartRequest) error { return nil }
func (resumeVoice) End(context.Context, string) error             { return nil }
func (resumeVoice) Status(string) (bot.SessionStatus, bool) {
	return bot.SessionStatus{SessionID: "live"}, true
}

// TestResumedSessionKeepsTheSplit (a leak an adversarial review found, fixed since; the test
// keeps it fixed): the DM's split of the party lives in the process's live controls
// only (runtimeState; the claim's state, ClaimedSession, holds no scene).
// When the process running a split session stops (an operator kills it, a
// host dies) and another takes the claim (Resume), the new process's
// controls say the party is together: the table records the rest of the
// split scene with everyone present and split=false, so its lines reach a
// public recap and every player. The store knows better: the session's
// last presence span says the party was split (Lyra alone). Expected: a
// resumed session goes on with the split it was left in (or records
// nothing as "together" until the DM says so).
func TestResumedSessionKeepsTheSplit(t *testing.T) {
	t.Parallel()
	h := newHarnessFor(t, bot.Deps{Voice: resumeVoice{}}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}})
	ctx := context.Background()
	lyra := discordtest.Member{UserID: "u2", Name: "Lyra"}
	sl := h.camp.Sessions()
	start := time.Now().UTC().Add(-time.Hour)
	if err := sl.StartSession(ctx, "live", start); err != nil {
		t.Fatal(err)
	}
	// What the stopped process recorded: the party together, then split
	// by the DM into Lyra's scene, still in force when it stopped.
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{player.UserID, lyra.UserID}, false}, {30 * time.Minute, []string{lyra.UserID}, true}} {
		if err := sl.RecordPresence(ctx, "live", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "live"}); err != nil {
		t.Fatal(err)
	}
	if players, _ := h.bot.Controls(guildID).SplitAt(time.Now()); len(players) == 0 {
		t.Errorf("LEAK: the resumed session takes the party for together; the rest of Lyra's scene is recorded as heard by everyone (split=false)")
	}
}
