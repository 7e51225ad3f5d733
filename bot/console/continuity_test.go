package console_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
)

// cardFeed is a running table whose continuity cards are on a board, as
// the voice session manager's.
type cardFeed struct{ board *continuity.Board }

func (f cardFeed) Live(c string) console.LiveStatus {
	return console.LiveStatus{Running: true, SessionID: "s3", Cards: f.board.List(c)}
}
func (f cardFeed) ContinuityCards() *continuity.Board { return f.board }

// TestLivePageContinuityCards: the DM's Live page shows each card with
// the canon fact (marked secret when it is), the line and Keep canon /
// Retcon; Retcon makes the claim canon. A player sees no card and cannot
// settle one.
func TestLivePageContinuityCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.camp.Graph().WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "vexa", TargetID: "sunken-vault",
		Type: "LOCATED_AT", Attributes: map[string]any{memory.AttrSecret: true},
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}, ""); err != nil {
		t.Fatal(err)
	}
	chk, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(f.camp)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chk.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	board := continuity.NewBoard()
	at := time.Date(2026, 3, 15, 19, 4, 5, 0, time.UTC)
	if _, err := f.camp.Sessions().Session(ctx, "s3"); err != nil {
		if err := f.camp.Sessions().StartSession(ctx, "s3", at.Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	var cards []continuity.Card
	for i, line := range []string{"Grimjaw is in Duskwood.", "Vexa is in Duskwood."} {
		found := chk.Check("Thorin", line)
		if len(found) != 1 {
			t.Fatalf("%q: findings %+v; want one", line, found)
		}
		// The lines are in the session log (Keep canon marks them there).
		key := fmt.Sprintf("s3-cont-%d", i)
		if _, err := f.camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: "s3", SpeakerName: "Thorin",
			Text: line, At: at.Add(time.Duration(i) * time.Second), IdempotencyKey: key}}); err != nil {
			t.Fatal(err)
		}
		cards = append(cards, board.Add(continuity.Card{Campaign: campaign, Finding: found[0],
			Line: continuity.Line{SessionID: "s3", Speaker: "Thorin", Text: line, At: at.Add(time.Duration(i) * time.Second), Key: key}}))
	}
	c, err := console.New(console.Config{Door: f.door,
		Campaigns: []bot.Guild{{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}, DMUserIDs: []string{dmUser}}},
		OAuth:     console.OAuth{ClientID: "app-1", ClientSecret: "shh", DiscordURL: f.discord.URL()},
		Live:      cardFeed{board}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)

	// A player: no page, no feed, no settling.
	f.discord.SetOAuthUser(guildID, player)
	pl := f.browser(t)
	pl.base = srv.URL
	pl.get("/signin/discord?campaign=" + campaign)
	for _, p := range []string{"/live", "/api/live"} {
		if resp, body := pl.get(p); resp.StatusCode != http.StatusForbidden || strings.Contains(body, "Duskwood") ||
			strings.Contains(body, "Sunken Vault") {
			t.Errorf("a player's %s: %d %.200s", p, resp.StatusCode, body)
		}
	}
	if resp, _ := pl.post("/live/card/"+cards[0].ID, url.Values{"action": {"retcon"}, "csrf": {pl.csrf()}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a player's Retcon: %d", resp.StatusCode)
	}
	if got, _ := board.Get(cards[0].ID); got.Status != continuity.CardOpen {
		t.Fatalf("after a player's Retcon the card is %s", got.Status)
	}

	// The DM.
	dm := f.browser(t)
	dm.base = srv.URL
	link, _ := c.OneTimeLink(campaign)
	dm.get(link)
	_, page := dm.get("/live")
	for _, want := range []string{"Grimjaw is at Duskwood", "Grimjaw —LOCATED_AT→ Ironhold", "Grimjaw is in Duskwood.",
		"Vexa Thorn —LOCATED_AT→ Sunken Vault", `<span class="tag">secret</span>`, "Keep canon", "Retcon",
		`action="/live/card/` + cards[0].ID + `"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the DM's live page lacks %q", want)
		}
	}
	if _, body := dm.get("/api/live"); !strings.Contains(body, `"cards":[{`) || !strings.Contains(body, cards[1].ID) {
		t.Errorf("/api/live has no cards: %.300s", body)
	}
	resp, body := dm.post("/live/card/"+cards[0].ID, url.Values{"action": {"retcon"}, "csrf": {dm.csrf()}}, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Card settled (retconned)") {
		t.Fatalf("the DM's Retcon: %d %.500s", resp.StatusCode, body)
	}
	if got, _ := board.Get(cards[0].ID); got.Status != continuity.CardRetconned || got.SettledBy == "" {
		t.Errorf("after the DM's Retcon: %+v", got)
	}
	if resp, body := dm.post("/live/card/"+cards[0].ID, url.Values{"action": {"keep"}, "csrf": {dm.csrf()}}, nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "settled already") {
		t.Errorf("settling again: %d %.300s", resp.StatusCode, body)
	}
	if resp, _ := dm.post("/live/card/"+cards[1].ID, url.Values{"action": {"erase"}, "csrf": {dm.csrf()}}, nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown action: %d", resp.StatusCode)
	}

	// The console of another process on the database, which runs no
	// table, lists the stored cards and settles one; this console is then
	// told it was settled.
	c2, err := console.New(console.Config{Door: f.door,
		Campaigns: []bot.Guild{{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}, DMUserIDs: []string{dmUser}}},
		OAuth:     console.OAuth{ClientID: "app-1", ClientSecret: "shh", DiscordURL: f.discord.URL()},
		Logger:    slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv2 := httptest.NewServer(c2)
	t.Cleanup(srv2.Close)
	dm2 := f.browser(t)
	dm2.base = srv2.URL
	link2, _ := c2.OneTimeLink(campaign)
	dm2.get(link2)
	if _, page := dm2.get("/live"); !strings.Contains(page, `action="/live/card/`+cards[1].ID+`"`) ||
		!strings.Contains(page, "Vexa is in Duskwood.") {
		t.Fatalf("another process's live page lacks the open card %s: %.300s", cards[1].ID, page)
	}
	if resp, body := dm2.post("/live/card/"+cards[1].ID, url.Values{"action": {"keep"}, "csrf": {dm2.csrf()}}, nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "Card settled (kept)") {
		t.Fatalf("Keep canon from another process: %d %.500s", resp.StatusCode, body)
	}
	if resp, body := dm.post("/live/card/"+cards[1].ID, url.Values{"action": {"retcon"}, "csrf": {dm.csrf()}}, nil); resp.StatusCode != http.StatusOK ||
		!strings.Contains(body, "settled already") {
		t.Errorf("Retcon of a card the other process kept: %d %.300s", resp.StatusCode, body)
	}
}
