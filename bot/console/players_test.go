package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// TestPlayersPages: the DM sees every player's page; a player signed in
// sees only their own (the list sends them there) and gets 403 for
// another player's, whose grant and lines it never shows.
func TestPlayersPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	other := discordtest.Member{UserID: "300000000000000004", Name: "Otto", Roles: []string{"200000000000000077"}}
	if _, err := f.camp.SetPlayerCharacter(ctx, player.UserID, "thorin"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.camp.SetPlayerCharacter(ctx, other.UserID, "kael"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 8, 19, 0, 0, 0, time.UTC)
	if err := f.camp.Sessions().RecordPresence(ctx, "s2", at, []string{player.UserID}, false); err != nil {
		t.Fatal(err)
	}
	if err := f.camp.Sessions().RecordPresence(ctx, "s2", at.Add(7*time.Minute), []string{other.UserID}, false); err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct{ who, text string }{{player.UserID, "GRANT-PIA"}, {other.UserID, "GRANT-OTTO"}} {
		if _, err := f.camp.Grant(ctx, g.who, g.text, 0, ""); err != nil {
			t.Fatal(err)
		}
	}

	dm, _, _ := f.signInDiscord(t, admin)
	if resp, body := dm.get("/players"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "/players/"+other.UserID) ||
		!strings.Contains(body, "Thorin") {
		t.Fatalf("the DM's players list: %d %s", resp.StatusCode, body)
	}
	if resp, body := dm.get("/players/" + other.UserID); resp.StatusCode != http.StatusOK || !strings.Contains(body, "GRANT-OTTO") ||
		!strings.Contains(body, "Riddles within riddles") || strings.Contains(body, "A drowned rune") {
		t.Fatalf("the DM reading Otto's page: %d %s", resp.StatusCode, body)
	}

	b, _, _ := f.signInDiscord(t, player)
	resp, body := b.get("/players")
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "What Thorin knows") || !strings.Contains(body, "GRANT-PIA") ||
		!strings.Contains(body, "A drowned rune") {
		t.Fatalf("a player's own page: %d %s", resp.StatusCode, body)
	}
	for _, leak := range []string{"GRANT-OTTO", "Riddles within riddles", "canon lines were said where"} {
		if strings.Contains(body, leak) {
			t.Errorf("a player's own page shows %q", leak)
		}
	}
	resp, body = b.get("/players/" + other.UserID)
	if resp.StatusCode != http.StatusForbidden || strings.Contains(body, "GRANT-OTTO") || strings.Contains(body, "Riddles") {
		t.Errorf("a player reading another player's page: %d %s", resp.StatusCode, body)
	}
}
