package bot_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
)

// TestResumeRestoresTheSplit: a session resumed by another process goes
// on with the split its presence rows were left in: the scene's players
// are those of the last split row naming any (the last row may be the
// empty one of a line said outside the scene), and the DM who started the
// session is taken as the one who split it (their lines are narration the
// scene hears). A split naming nobody is resumed as a scene of the DM
// alone, or refused without a DM to name; a party together, or a session
// without presence, resumes together.
func TestResumeRestoresTheSplit(t *testing.T) {
	t.Parallel()
	type row struct {
		players []string
		split   bool
	}
	tests := []struct {
		name      string
		rows      []row
		startedBy string
		want      []string // the scene's players after Resume
		wantBy    string
		wantErr   bool
	}{
		{name: "no presence", startedBy: "dm"},
		{name: "together", rows: []row{{[]string{"u1", "u2"}, false}}, startedBy: "dm"},
		{name: "split then rejoined", rows: []row{{[]string{"u2"}, true}, {[]string{"u1", "u2"}, false}}, startedBy: "dm"},
		{name: "split", rows: []row{{[]string{"u1", "u2"}, false}, {[]string{"u2"}, true}}, startedBy: "dm",
			want: []string{"u2"}, wantBy: "dm"},
		{name: "split, last line said outside the scene",
			rows:      []row{{[]string{"u1", "u2"}, false}, {[]string{"u2", "u3"}, true}, {[]string{}, true}},
			startedBy: "dm", want: []string{"u2", "u3"}, wantBy: "dm"},
		{name: "split naming nobody", rows: []row{{[]string{"u1"}, false}, {[]string{}, true}}, startedBy: "dm",
			want: []string{"dm"}, wantBy: "dm"},
		{name: "split naming nobody, no DM", rows: []row{{[]string{}, true}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarnessFor(t, bot.Deps{Voice: resumeVoice{}}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}})
			ctx := context.Background()
			sl := h.camp.Sessions()
			start := time.Now().UTC().Add(-time.Hour)
			if err := sl.StartSession(ctx, "live", start); err != nil {
				t.Fatal(err)
			}
			for i, r := range tt.rows {
				if err := sl.RecordPresence(ctx, "live", start.Add(time.Duration(i)*time.Minute), r.players, r.split); err != nil {
					t.Fatal(err)
				}
			}
			err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
				TextChannelID: channelID, SessionID: "live", StartedBy: tt.startedBy})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Resume: %v, want an error: %v", err, tt.wantErr)
			}
			players, by := h.bot.Controls(guildID).SplitAt(time.Now())
			if !slices.Equal(players, tt.want) || by != tt.wantBy {
				t.Errorf("the scene after Resume: players %q by %q, want %q by %q", players, by, tt.want, tt.wantBy)
			}
		})
	}
}
