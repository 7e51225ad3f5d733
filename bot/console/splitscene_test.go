package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestConsoleSplitSceneReachesOnlyItsPlayers: the DM split the party, Otto
// alone in the scene. Signed in to the console, Pia (outside the scene)
// reads the session's page, searches it and reads the campaign recap over
// HTTP: the lines the party said together and her own line said at the
// table meanwhile, never the scene's. Otto reads the scene, not Pia's line
// at the table (nobody in the scene heard it); the DM reads everything.
func TestConsoleSplitSceneReachesOnlyItsPlayers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	otto := discordtest.Member{UserID: "300000000000000004", Name: "Otto", Roles: []string{"200000000000000077"}}
	sl := f.camp.Sessions()
	start := time.Date(2026, 3, 20, 19, 0, 0, 0, time.UTC)
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{
		{0, []string{player.UserID, otto.UserID}, false},
		{time.Minute, []string{otto.UserID}, true},
		{150 * time.Second, []string{}, true},
		{3 * time.Minute, []string{player.UserID, otto.UserID}, false},
	} {
		if err := sl.RecordPresence(ctx, "split", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []memory.TranscriptEntry{
		{SpeakerID: dmUser, SpeakerName: "Lis", Text: "Everyone sees the lanterns of Quillmere harbour.", At: start.Add(30 * time.Second)},
		{SpeakerID: dmUser, SpeakerName: "Lis", Text: "Otto alone finds the sapphire key under the Quillmere altar.", At: start.Add(2 * time.Minute)},
		{SpeakerID: player.UserID, SpeakerName: "Pia", Text: "Pia rings the copper bell of Quillmere at the table.", At: start.Add(155 * time.Second)},
		{SpeakerID: dmUser, SpeakerName: "Lis", Text: "The party meets again at the Quillmere gate.", At: start.Add(4 * time.Minute)},
	} {
		e.SessionID = "split"
		if _, err := sl.WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	pages := []string{"/sessions/split", "/sessions/split?q=" + url.QueryEscape("Quillmere"), "/recap"}
	for _, tc := range []struct {
		name     string
		who      discordtest.Member
		has, not []string
	}{
		{"Pia, outside the scene", player, []string{"lanterns", "copper bell"}, []string{"sapphire"}},
		{"Otto, in the scene", otto, []string{"lanterns", "sapphire"}, []string{"copper bell"}},
		{"the DM", admin, []string{"lanterns", "sapphire", "copper bell"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, _ := f.signInDiscord(t, tc.who)
			for _, p := range pages {
				resp, body := b.get(p)
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("GET %s: %d %s", p, resp.StatusCode, body)
				}
				for _, s := range tc.not {
					if strings.Contains(body, s) {
						t.Errorf("LEAK: GET %s shows %s %q", p, tc.name, s)
					}
				}
				if p == "/recap" {
					continue // an extractive recap holds some key lines only
				}
				for _, s := range tc.has {
					if !strings.Contains(body, s) {
						t.Errorf("GET %s does not show %s %q", p, tc.name, s)
					}
				}
			}
		})
	}
}
