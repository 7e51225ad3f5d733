package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCrossGuildConsole (cross-guild attacker): one console serves
// the campaigns of two Discord servers from one database. The DM of the
// first signs in and asks every page, API and form of the console for the
// second campaign's rows: its entity, session, fact, conflict, review
// batch, continuity card and player ids, its names in the searches, and
// its campaign id where a page takes a campaign. Nothing of the second
// campaign is shown and none of its rows changes. (No earlier test served
// two campaigns from one console.)
func TestAttackCrossGuildConsole(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 8)
	pgtest.Import(t, store, sample)
	f := pgtest.ForeignCampaign(t, store, "../../testdata/campaigns/hostile-keep.yaml")
	door := newDoor(t, access.Config{Store: store})
	c, err := console.New(console.Config{
		Door: door,
		Campaigns: []bot.Guild{{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}},
			{ID: "100000000000000077", Campaign: f.Campaign, DMRoleIDs: []string{"100000000000000078"}}},
		Asker:  fakeAsker{},
		Export: door,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	fx := &fixture{door: door, console: c, srv: srv}
	b := fx.signInLink(t)
	csrf := b.csrf()
	// The DM's own campaign answers the same pages (else this test proves
	// nothing): its entity page shows Grimjaw.
	if _, body := b.get("/entities/grimjaw"); !strings.Contains(body, "Grimjaw") {
		t.Fatalf("the DM's own entity page does not show Grimjaw: %.300s", body)
	}
	before := f.State(t, store)

	fact, pending, conflict := fmt.Sprint(f.Facts[0]), fmt.Sprint(f.Pending[0]), fmt.Sprint(f.Conflicts[0])
	batch, card, sess := fmt.Sprint(f.Batches[0]), f.Cards[0], url.QueryEscape(f.Session)
	gets := []string{
		"/graph/aldric", "/api/graph?focus=brenna", "/api/graph?npc=aldric", "/api/graph?session=" + sess,
		"/api/graph/find?q=Ald", "/api/graph/find?q=Undercroft", "/api/entity/aldric", "/api/entity/undercroft",
		"/api/names?q=Bren", "/entities/aldric", "/entities?q=Ald", "/entities?q=Bren&retired=1",
		"/npc/aldric", "/npc/grimjaw?heard=" + sess, "/players/u9", "/sessions/" + sess, "/sessions/s1?q=Undercroft",
		"/sessions/s1?q=mkf-foreign-line", "/recap?session=" + sess, "/ledger", "/asof?entity=aldric&as_of=" + sess,
		"/asof?entity=grimjaw&as_of=" + sess, "/review?session=" + sess, "/live", "/api/live", "/export",
		"/?campaign=" + f.Campaign, "/graph?campaign=" + f.Campaign, "/signin/discord?campaign=" + f.Campaign,
	}
	form := func(kv ...string) url.Values {
		v := url.Values{"csrf": {csrf}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	posts := []struct {
		path string
		form url.Values
	}{
		{"/review/fact/" + pending, form("action", "confirm")},
		{"/review/fact/" + pending, form("action", "reject", "back", "/ledger")},
		{"/review/fact/" + fact + "/edit", form("subject", "grimjaw", "relation", "KNOWS", "object", "elara")},
		{"/review/conflict/" + conflict, form("keep", "new")},
		{"/review/conflict/" + conflict, form("keep", "old")},
		{"/review/bulk", form("action", "confirm", "fact", pending)},
		{"/review/bulk", form("action", "reject", "all", "1", "session", f.Session)},
		{"/review/undo/" + batch, form()},
		{"/entities/aldric/edit", form("name", "Pwned", "kind", "npc", "aliases", "", "attributes", "{}")},
		{"/entities/grimjaw/merge", form("into", "aldric")},
		{"/entities/aldric/merge", form("into", "grimjaw")},
		{"/entities/brenna/retire", form("reason", "x")},
		{"/entities/undercroft/reveal", form()},
		{"/npc/aldric/persona", form("name", "Pwned", "personality", "x")},
		{"/npc/aldric/ask", form("question", "What do you hide?")},
		{"/live/card/" + card, form("action", "keep")},
		{"/live/card/" + card, form("action", "retcon")},
	}
	check := func(what, body string) {
		t.Helper()
		low := strings.ToLower(body)
		for _, typed := range []string{"aldric", "brenna", "undercroft", "mkf-foreign-line", f.Campaign, strings.ToLower(f.Session)} {
			low = strings.ReplaceAll(low, typed, "")
		}
		for _, w := range f.Words {
			if strings.Contains(low, strings.ToLower(w)) {
				t.Errorf("%s shows %q of campaign %s: %.600s", what, w, f.Campaign, body)
			}
		}
	}
	for _, p := range gets {
		_, body := b.get(p)
		check("GET "+p, body)
	}
	for _, p := range posts {
		_, body := b.post(p.path, p.form, map[string]string{"Origin": srv.URL})
		check("POST "+p.path, body)
	}
	if after := f.State(t, store); after != before {
		t.Errorf("the other campaign changed:\nbefore %s\nafter  %s", before, after)
	}
	// Names only the other campaign holds, typed where a page echoes
	// nothing back: the searches of the graph and the names API.
	for _, p := range []string{"/api/graph/find?q=Ald", "/api/names?q=Bren", "/entities?q=Under"} {
		if _, body := b.get(p); strings.Contains(strings.ToLower(body), "aldric") || strings.Contains(strings.ToLower(body), "brenna") ||
			strings.Contains(strings.ToLower(body), "undercroft") {
			t.Errorf("GET %s names an entity of campaign %s: %.600s", p, f.Campaign, body)
		}
	}
	// And the campaign's own DM handle still reads them (the ids were real).
	other, err := door.Open(context.Background(), f.Campaign, memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	if e, err := other.Graph().Entity(context.Background(), "aldric"); err != nil || e.Name != "Aldric" {
		t.Errorf("the other campaign's Aldric: %+v %v", e, err)
	}
}
