package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/bot/recap"
)

// liveFeed is a LiveSource with a fixed snapshot per campaign.
type liveFeed map[string]console.LiveStatus

func (l liveFeed) Live(campaign string) console.LiveStatus { return l[campaign] }

func TestLivePageShowsTheFeed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	feed := liveFeed{campaign: {Running: true, SessionID: "s3", Speaking: []string{"Thorin"}, SpoolBytes: 4096, PendingWrites: 2,
		MemoryDegraded: true, Turns: []console.Turn{{NPC: "Grimjaw", At: time.Date(2026, 3, 15, 19, 4, 5, 0, time.UTC),
			Stages: []console.Stage{{Name: "stt", Latency: 180 * time.Millisecond}, {Name: "llm_first_token", Latency: 640 * time.Millisecond}}}}}}
	c, err := console.New(console.Config{Door: f.door, Campaigns: []bot.Guild{{Campaign: campaign}}, Live: feed,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	b := f.browser(t)
	b.base = srv.URL
	link, _ := c.OneTimeLink(campaign)
	b.get(link)
	_, page := b.get("/live")
	for _, want := range []string{"Session s3 is running", "Thorin", "degraded", "4096", "Grimjaw", "stt 180 ms", "llm_first_token 640 ms"} {
		if !strings.Contains(page, want) {
			t.Errorf("the live page lacks %q", want)
		}
	}
	_, body := b.get("/api/live")
	var got struct {
		Wired  bool
		Status struct {
			Running bool
			Turns   []struct {
				NPC    string
				Stages []struct {
					Name string
					MS   int64
				}
			}
			SpoolBytes int64 `json:"spool_bytes"`
		}
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Wired || !got.Status.Running || got.Status.SpoolBytes != 4096 || len(got.Status.Turns) != 1 ||
		got.Status.Turns[0].Stages[1].MS != 640 {
		t.Fatalf("/api/live: %s", body)
	}

	// Without a feed the page says so, and claims neither that no session
	// runs nor that a table's memory is healthy.
	_, page = f.signInLink(t).get("/live")
	if !strings.Contains(page, "No live feed is connected") {
		t.Error("the live page without a feed does not say so")
	}
	for _, claim := range []string{"No session is running", "healthy", "No NPC turns yet"} {
		if strings.Contains(page, claim) {
			t.Errorf("the live page without a feed says %q", claim)
		}
	}
}

func TestRecapperSentencesLinkToVisibleLines(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	es, err := f.camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	// The DM strikes the second line from the record.
	if _, err := f.camp.Sessions().MarkNonCanon(ctx, "s1", es[1].At, es[1].At); err != nil {
		t.Fatal(err)
	}
	var asked []bool
	rc := console.RecapFunc(func(_ context.Context, campaign, session string, safe bool) (recap.Recap, error) {
		asked = append(asked, safe)
		return recap.Recap{Sentences: []recap.Sentence{
			{Text: "The party met Brannoc.", Lines: []int64{es[0].ID, es[2].ID}},
			{Text: "Thorin ordered ales.", Lines: []int64{es[1].ID}},
		}}, nil
	})
	c, err := console.New(console.Config{Door: f.door, Campaigns: []bot.Guild{{ID: guildID, Campaign: campaign}},
		OAuth: console.OAuth{ClientID: "app-1", ClientSecret: "shh", DiscordURL: f.discord.URL()}, Recaps: rc,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)

	f.discord.SetOAuthUser(guildID, player)
	b := f.browser(t)
	b.base = srv.URL
	b.get("/signin/discord?campaign=" + campaign)
	_, body := b.get("/sessions/s1")
	cites := citeRE.FindAllStringSubmatch(body, -1)
	if len(cites) != 2 || cites[0][1] != fmt.Sprint(es[0].ID) || cites[1][1] != fmt.Sprint(es[2].ID) {
		t.Errorf("player's citations: %v", cites)
	}
	if strings.Contains(body, "Thorin ordered ales") || strings.Contains(body, es[1].Text) {
		t.Error("the player sees a sentence resting only on a struck line, or the line itself")
	}
	if len(asked) != 1 || !asked[0] {
		t.Errorf("the recapper was asked for %v, want one player-safe recap", asked)
	}
}
