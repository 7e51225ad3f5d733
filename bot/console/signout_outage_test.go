package console_test

import (
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
)

// TestSignOutInAnOutageHolds: a browser signs out while the database is
// down. Its cookie (kept by whoever copied it) must not sign anyone in
// again once the database is back: not on this console, not on another
// one on the same database after this console saw the database again.
func TestSignOutInAnOutageHolds(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	f := newFixtureOn(t, clusterStore(t, cl))
	dm := f.signInLink(t)
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cookies := dm.c.Jar.Cookies(u)
	if len(cookies) == 0 {
		t.Fatal("the sign-in set no cookie")
	}
	csrf := dm.csrf()

	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	resp, body := dm.post("/signout", url.Values{"csrf": {csrf}}, nil)
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/signin" {
		t.Fatalf("sign-out in an outage: %d at %s: %.300s", resp.StatusCode, resp.Request.URL, body)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	hang := time.After(5 * time.Minute) // a hang guard, not a budget
	for f.door.Health().Degraded {
		select {
		case <-hang:
			t.Fatal("the door never saw the database back")
		case <-time.After(20 * time.Millisecond):
		}
	}

	// The copied cookie, replayed on this console.
	replay := func(base string) int {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		b, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		jar.SetCookies(b, cookies)
		thief := &browser{t: t, c: &http.Client{Jar: jar, Timeout: browserHangGuard}, base: base}
		resp, _ := thief.get("/api/graph")
		return resp.StatusCode
	}
	if code := replay(f.srv.URL); code != http.StatusUnauthorized {
		t.Errorf("a cookie signed out during the outage is taken again once the database is back: %d", code)
	}

	// Another console on the same database, started afterwards.
	c, err := console.New(console.Config{Door: f.door,
		Campaigns: []bot.Guild{{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}, DMUserIDs: []string{dmUser}}},
		Clock:     f.clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	other := httptest.NewServer(c)
	t.Cleanup(other.Close)
	if code := replay(other.URL); code != http.StatusUnauthorized {
		t.Errorf("another console takes a cookie signed out during the outage: %d", code)
	}
}
