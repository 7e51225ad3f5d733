package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
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
		Feed struct {
			Connected bool
			Source    string
		}
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
	if !got.Feed.Connected || got.Feed.Source != "this process" || !got.Status.Running || got.Status.SpoolBytes != 4096 || len(got.Status.Turns) != 1 ||
		got.Status.Turns[0].Stages[1].MS != 640 {
		t.Fatalf("/api/live: %s", body)
	}

	// Without a feed the page says so, and does not call memory healthy.
	_, page = f.signInLink(t).get("/live")
	for _, want := range []string{"No live feed: no glyphoxa serve or demo on this database has reported", "Unknown: no table is reporting"} {
		if !strings.Contains(page, want) {
			t.Errorf("the live page without a feed lacks %q", want)
		}
	}
	for _, claim := range []string{"No session is running", ">healthy<", "No NPC turns yet"} {
		if strings.Contains(page, claim) {
			t.Errorf("the live page without a feed says %q", claim)
		}
	}
}

// TestLiveFeedCrossesProcesses: a table in one process (its console's
// LiveSource) publishes through the database; a console in another
// process, with no source of its own, shows it, and shows no feed once the
// publisher stops.
func TestLiveFeedCrossesProcesses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	table := liveFeed{campaign: {Running: true, SessionID: "s9", Speaking: []string{"Lyra"},
		Turns: []console.Turn{{NPC: "Brannoc", At: time.Date(2026, 3, 15, 19, 4, 5, 0, time.UTC), Heard: "Brannoc, any news?"}}}}
	pub := &console.LivePublisher{Source: table, Campaigns: []*access.Campaign{f.camp}, Owner: "host-a/812/beef",
		Describe: "glyphoxa demo on host-a (pid 812)", Logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	b := f.signInLink(t)
	type live struct {
		Feed struct {
			Connected bool
			Source    string
		}
		Status struct {
			Running   bool
			SessionID string `json:"session_id"`
			Speaking  []string
			Source    string
		}
	}
	read := func() live {
		t.Helper()
		_, body := b.get("/api/live")
		var got live
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("/api/live: %v: %s", err, body)
		}
		return got
	}
	var got live
	for got = read(); !got.Status.Running; got = read() {
		select {
		case <-done:
			t.Fatal("the publisher stopped")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !got.Feed.Connected || got.Feed.Source != "glyphoxa demo on host-a (pid 812)" || got.Status.SessionID != "s9" ||
		len(got.Status.Speaking) != 1 || got.Status.Speaking[0] != "Lyra" {
		t.Fatalf("the other process's table: %+v", got)
	}
	_, page := b.get("/live")
	for _, want := range []string{"Live feed: glyphoxa demo on host-a (pid 812).", "Session s9 is running", "Lyra", "Brannoc"} {
		if !strings.Contains(page, want) {
			t.Errorf("the live page lacks %q", want)
		}
	}

	// The publisher stops (the process ends its table): the report is
	// withdrawn at once, not left to age out.
	cancel()
	<-done
	if got := read(); got.Feed.Connected || got.Status.Running {
		t.Fatalf("after the publisher stopped: %+v", got)
	}

	// A player's handle cannot read or write the feed.
	player, err := f.camp.As(memory.PlayerViewer())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := player.LiveFeeds(context.Background(), console.LiveFresh); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player read the live feed: %v", err)
	}
	if err := player.PublishLive(context.Background(), "x", []byte(`{}`)); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player wrote the live feed: %v", err)
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
