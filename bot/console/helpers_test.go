package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const (
	guildID  = "100000000000000001"
	dmRole   = "200000000000000001"
	dmUser   = "300000000000000009"
	campaign = "ironhold-saga"
	sample   = "../../testdata/campaigns/ironhold-saga.yaml"
)

// Members of the test guild.
var (
	admin    = discordtest.Member{UserID: "300000000000000001", Name: "Ada", Admin: true}
	roleDM   = discordtest.Member{UserID: "300000000000000002", Name: "Rolf", Roles: []string{dmRole}}
	listedDM = discordtest.Member{UserID: dmUser, Name: "Lis"}
	player   = discordtest.Member{UserID: "300000000000000003", Name: "Pia", Roles: []string{"200000000000000077"}}
)

// secrets are texts of the sample campaign a player must never be shown.
var secrets = []string{
	"forged the key", "sold it to a hooded stranger", "lost heir", "House Ironhold", "FORGED", "secret_knowledge",
}

// fixture is a console over the sample campaign, with a fake Discord for
// sign-in. camp is the campaign through the console's door, bound to the
// DM, for seeding and checking.
type fixture struct {
	door    *access.Door
	camp    *access.Campaign
	discord *discordtest.Server
	console *console.Server
	srv     *httptest.Server
	clock   *clocktest.Fake
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store, _ := pgtest.NewStore(t, 8)
	return newFixtureOn(t, store)
}

// newFixtureOn is newFixture on store (a database of the test's own, such
// as a private cluster's), into which it imports the sample campaign.
func newFixtureOn(t *testing.T, store *postgres.Store) *fixture {
	t.Helper()
	pgtest.Import(t, store, sample)
	door := newDoor(t, access.Config{Store: store})
	camp, err := door.Open(context.Background(), campaign, memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	d := discordtest.New()
	t.Cleanup(d.Close)
	d.SetOAuthApp(discordtest.OAuthApp{ClientID: "app-1", ClientSecret: "shh"})
	clk := clocktest.NewFake(time.Date(2026, 3, 9, 12, 0, 0, 0, time.UTC))
	f := &fixture{door: door, camp: camp, discord: d, clock: clk}
	c, err := console.New(console.Config{
		Door:      door,
		Campaigns: []bot.Guild{{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}, DMUserIDs: []string{dmUser}}},
		OAuth:     console.OAuth{ClientID: "app-1", ClientSecret: "shh", DiscordURL: d.URL()},
		Asker:     fakeAsker{},
		Export:    door,
		Clock:     clk,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.console = c
	f.srv = httptest.NewServer(c)
	t.Cleanup(f.srv.Close)
	return f
}

// newDoor opens the memory door of cfg, its probe stopped when the test
// ends. Unless cfg says otherwise, its health probe retries every 20 to
// 200 ms while the database is down (production: 1 s doubling to 30 s):
// the outage tests wait for the door to see the database back, and with
// the production backoff that wait was up to 16 s after the restart.
func newDoor(tb testing.TB, cfg access.Config) *access.Door {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Probe == (reconnect.Backoff{}) {
		cfg.Probe = reconnect.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}
	}
	d, err := access.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	d.Start(context.Background())
	tb.Cleanup(func() { d.Close() })
	return d
}

// fakeAsker answers "ask as" with the question and the NPC, so the page
// shows that the NPC's scope reached retrieval.
type fakeAsker struct{}

func (fakeAsker) AskAs(_ context.Context, campaign, npcID, q string, k int) ([]console.AskResult, error) {
	return []console.AskResult{{Kind: "entry", ID: "1", Content: npcID + " was asked: " + q, SessionID: "s1"}}, nil
}

// browser is an HTTP client with cookies, like a browser tab.
type browser struct {
	t    *testing.T
	c    *http.Client
	base string
}

func (f *fixture) browser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, c: &http.Client{Jar: jar, Timeout: browserHangGuard}, base: f.srv.URL}
}

// signInDiscord signs in through the fake Discord as m and returns the
// page it lands on.
func (f *fixture) signInDiscord(t *testing.T, m discordtest.Member) (*browser, *http.Response, string) {
	t.Helper()
	f.discord.SetOAuthUser(guildID, m)
	b := f.browser(t)
	resp, body := b.get("/signin/discord?campaign=" + campaign)
	return b, resp, body
}

// signInLink signs in with a one-time link as the DM.
func (f *fixture) signInLink(t *testing.T) *browser {
	t.Helper()
	link, err := f.console.OneTimeLink(campaign)
	if err != nil {
		t.Fatal(err)
	}
	b := f.browser(t)
	if resp, body := b.get(link); resp.StatusCode != 200 || resp.Request.URL.Path != "/review" {
		t.Fatalf("one-time link: %d at %s: %.300s", resp.StatusCode, resp.Request.URL, body)
	}
	return b
}

func (b *browser) get(path string) (*http.Response, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (b *browser) post(path string, form url.Values, header map[string]string) (*http.Response, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the session's CSRF token from a page.
func (b *browser) csrf() string {
	b.t.Helper()
	_, body := b.get("/sessions")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token on the page: %.300s", body)
	}
	return m[1]
}

// pendingFact returns the sample's pending fact Vexa MEMBER_OF Ashen Circle.
func pendingFact(t *testing.T, g *access.Graph) memory.Relationship {
	t.Helper()
	ps, err := g.PendingFacts(context.Background(), memory.FactFilter{EntityID: "vexa"})
	if err != nil || len(ps) == 0 {
		t.Fatalf("pending facts of vexa: %v %v", ps, err)
	}
	return ps[0]
}

var citeRE = regexp.MustCompile(`class="cite" href="[^"]*#line-(\d+)"`)

// clusterStore opens a store on the private cluster cl itself (not through
// GLYPHOXA_TEST_DSN, which a parallel test must not set); it is closed when
// the test ends.
func clusterStore(t *testing.T, cl *pgcluster.Cluster) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, err := postgres.NewStore(ctx, cl.DSN(), 8)
	if err != nil {
		t.Fatalf("opening the store on the private cluster: %v", err)
	}
	t.Cleanup(store.Close)
	return store
}

// browserHangGuard bounds one request of a test browser: a guard against a
// hung console, not a budget (a 100,000-word search under -race took over
// 20 s on a 2-core machine at load 46).
const browserHangGuard = 5 * time.Minute
