package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/calendar"
)

// TestCampaignRecapInWorldOrder: the console's campaign recap tells the
// sessions in the order of their in-world dates, each with its date in the
// calendar's form, as Discord's /recap does (one ordering,
// recap.InWorldOrder); undated, in the order played. A player's is
// player-safe.
func TestCampaignRecapInWorldOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	dm := f.signInLink(t)
	resp, page := dm.get("/recap")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the campaign recap: %d %.300s", resp.StatusCode, page)
	}
	one, two := strings.Index(page, `<a href="/sessions/s1">Session s1</a>`), strings.Index(page, `<a href="/sessions/s2">Session s2</a>`)
	if one < 0 || two < 0 || two < one {
		t.Fatalf("undated, the recap should follow the order played (s1, s2): %.3000s", page)
	}
	cal := &calendar.Calendar{Months: []calendar.Month{{Name: "Deepwinter", Days: 30}, {Name: "Frostfall", Days: 30}}}
	if err := f.camp.Sessions().SetCalendar(ctx, cal); err != nil {
		t.Fatal(err)
	}
	// s2 is a flashback: it takes place before s1 in the world.
	for s, d := range map[string]string{"s1": "10 Frostfall 1452", "s2": "Frostfall 2, 1452"} {
		if err := f.camp.Sessions().SetGameDate(ctx, s, d); err != nil {
			t.Fatal(err)
		}
	}
	_, page = dm.get("/recap")
	one, two = strings.Index(page, `<a href="/sessions/s1">Session s1</a>`), strings.Index(page, `<a href="/sessions/s2">Session s2</a>`)
	if one < 0 || two < 0 || two > one || !strings.Contains(page, "2 Frostfall 1452, played") || !strings.Contains(page, `class="cite"`) {
		t.Fatalf("dated, want s2 (2 Frostfall) before s1 (10 Frostfall), each with its recap: %.3000s", page)
	}
	pl, _, _ := f.signInDiscord(t, player)
	resp, page = pl.get("/recap")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "player-safe") {
		t.Fatalf("a player's campaign recap: %d, want player-safe: %.1000s", resp.StatusCode, page)
	}
	if one, two := strings.Index(page, "Session s1</a>"), strings.Index(page, "Session s2</a>"); one < 0 || two < 0 || two > one {
		t.Errorf("a player's campaign recap is not in in-world order: %.3000s", page)
	}
}
