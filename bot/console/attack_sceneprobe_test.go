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

// sceneSession records session "split" of f's campaign: Pia and Otto
// together, then Otto alone in a split scene where the DM names the
// Veiled Abbess (written as extraction writes it: scene_only, resting on
// that line), then the party together again. Each player reads three
// lines of it: the two said together and one of their own scene (Otto)
// or table talk (Pia).
func sceneSession(t *testing.T, f *fixture, otto discordtest.Member) {
	t.Helper()
	ctx := context.Background()
	sl := f.camp.Sessions()
	start := time.Date(2026, 3, 20, 19, 0, 0, 0, time.UTC)
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{
		{0, []string{player.UserID, otto.UserID}, false},
		{time.Minute, []string{otto.UserID}, true},
		{3 * time.Minute, []string{player.UserID, otto.UserID}, false},
	} {
		if err := sl.RecordPresence(ctx, "split", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []memory.TranscriptEntry{
		{SpeakerID: dmUser, SpeakerName: "Lis", Text: "Everyone sees the lanterns of Quillmere harbour.", At: start.Add(30 * time.Second)},
		{SpeakerID: dmUser, SpeakerName: "Lis", Text: "Otto alone meets the Veiled Abbess under the sapphire altar.", At: start.Add(2 * time.Minute)},
		{SpeakerID: player.UserID, SpeakerName: "Pia", Text: "Pia rings the copper bell of Quillmere at the table.", At: start.Add(150 * time.Second)},
		{SpeakerID: dmUser, SpeakerName: "Lis", Text: "The party meets again at the Quillmere gate.", At: start.Add(4 * time.Minute)},
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
	var scene int64
	for _, e := range es {
		if strings.Contains(e.Text, "Veiled Abbess") {
			scene = e.ID
		}
	}
	if err := f.camp.Graph().AddSceneEntity(ctx, memory.Entity{ID: "veiled-abbess", Type: memory.EntityNPC, Name: "Veiled Abbess",
		Aliases: []string{"the Abbess"}}, []int64{scene}); err != nil {
		t.Fatal(err)
	}
}

// TestAttackConsoleProbesSceneEntity attacks the entity secrecy of split
// scenes through the console pages a player reaches with a guessed id or
// name (ids are slugs of names): the entity JSON, the graph focused on
// it, the "As of" page (by name and by alias). Pia, not in Otto's scene,
// must get for the Veiled Abbess exactly what she gets for an entity that
// does not exist. (Holds.)
func TestAttackConsoleProbesSceneEntity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	otto := discordtest.Member{UserID: "300000000000000004", Name: "Otto", Roles: []string{"200000000000000077"}}
	sceneSession(t, f, otto)

	// The id is right: the DM and Otto read it.
	db, _, _ := f.signInDiscord(t, admin)
	ob, _, _ := f.signInDiscord(t, otto)
	for who, b := range map[string]*browser{"the DM": db, "Otto": ob} {
		if resp, body := b.get("/api/entity/veiled-abbess"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Veiled Abbess") {
			t.Fatalf("%s does not read the Abbess: %d %s", who, resp.StatusCode, body)
		}
		if resp, body := b.get("/api/graph/find?q=veiled&type=npc"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "Veiled Abbess") {
			t.Fatalf("%s does not find the Abbess: %d %s", who, resp.StatusCode, body)
		}
	}
	pb, _, _ := f.signInDiscord(t, player)
	for _, p := range []struct{ hidden, missing string }{
		{"/api/entity/veiled-abbess", "/api/entity/gilded-abbess"},
		{"/api/graph?focus=veiled-abbess&depth=1", "/api/graph?focus=gilded-abbess&depth=1"},
		{"/api/graph/find?q=veiled", "/api/graph/find?q=gilded"},
		{"/api/graph/find?q=veiled&type=npc", "/api/graph/find?q=gilded&type=npc"},
		{"/graph/veiled-abbess", "/graph/gilded-abbess"},
		{"/asof?entity=" + url.QueryEscape("Veiled Abbess") + "&as_of=split", "/asof?entity=" + url.QueryEscape("Gilded Abbess") + "&as_of=split"},
		{"/asof?entity=" + url.QueryEscape("the Abbess") + "&as_of=split", "/asof?entity=" + url.QueryEscape("the Gilded") + "&as_of=split"},
	} {
		hr, hb := pb.get(p.hidden)
		mr, mb := pb.get(p.missing)
		norm := func(s string) string {
			for _, w := range []string{"veiled-abbess", "gilded-abbess", "Veiled Abbess", "Gilded Abbess", "Veiled+Abbess", "Gilded+Abbess",
				"Veiled%20Abbess", "Gilded%20Abbess", "the Abbess", "the Gilded", "the+Abbess", "the+Gilded", "the%20Abbess", "the%20Gilded"} {
				s = strings.ReplaceAll(s, w, "X")
			}
			return s
		}
		if hr.StatusCode != mr.StatusCode || norm(hb) != norm(mb) {
			t.Errorf("LEAK to Pia: GET %s (%d) answers otherwise than GET %s (%d) for an entity that does not exist:\n%s\n---\n%s",
				p.hidden, hr.StatusCode, p.missing, mr.StatusCode, hb, mb)
		}
	}
}
