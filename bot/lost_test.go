package bot_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
)

// handoverVoice is a VoiceSessions that records what the bot asks of it.
type handoverVoice struct {
	bot.VoiceSessions
	release bool // implements bot.VoiceReleaser

	mu    sync.Mutex
	calls []string
}

func (v *handoverVoice) call(what string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, what)
}

func (v *handoverVoice) got() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.calls)
}

func (v *handoverVoice) Start(_ context.Context, req bot.StartRequest) error {
	v.call("start " + req.SessionID)
	return nil
}

func (v *handoverVoice) Status(string) (bot.SessionStatus, bool) {
	return bot.SessionStatus{SessionID: "s1"}, true
}

func (v *handoverVoice) End(context.Context, string) error {
	v.call("end")
	return nil
}

// releasingVoice can hand sessions over.
type releasingVoice struct{ *handoverVoice }

func (v releasingVoice) Release(context.Context, string) error {
	v.call("release")
	return nil
}

// A process that lost a guild's claim hands its session over (Release):
// it neither ends it (no end recorded, no processing) nor leaves the
// channel. Voice sessions that cannot be released are ended, as before.
func TestLostHandsTheSessionOver(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wrap func(*handoverVoice) bot.VoiceSessions
		want []string
	}{
		{"releaser", func(v *handoverVoice) bot.VoiceSessions { return releasingVoice{v} }, []string{"start s1", "release"}},
		{"no releaser", func(v *handoverVoice) bot.VoiceSessions { return v }, []string{"start s1", "end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &handoverVoice{}
			h := newHarness(t, bot.Deps{Voice: tc.wrap(v)})
			ctx := context.Background()
			if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
				TextChannelID: channelID, SessionID: "s1"}); err != nil {
				t.Fatal(err)
			}
			if err := h.bot.Lost(ctx, guildID); err != nil {
				t.Fatal(err)
			}
			// A second loss finds no session.
			if err := h.bot.Lost(ctx, guildID); err != nil {
				t.Fatal(err)
			}
			if got := v.got(); !slices.Equal(got, tc.want) {
				t.Errorf("voice calls %q, want %q", got, tc.want)
			}
		})
	}
}
