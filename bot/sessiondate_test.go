package bot_test

import (
	"context"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
)

// TestSessionDate: /session date sets the last session's in-world date
// (no session is running) in the campaign calendar's own form, refuses a
// date the calendar does not read naming its months, and is for the DM.
func TestSessionDate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	cal := &calendar.Calendar{Months: []calendar.Month{{Name: "Deepwinter", Days: 30}, {Name: "Frostfall", Days: 30}}, Era: "DR"}
	if err := h.camp.Sessions().SetCalendar(ctx, cal); err != nil {
		t.Fatal(err)
	}
	ss, err := h.camp.Sessions().Starts(ctx)
	if err != nil || len(ss) == 0 {
		t.Fatalf("sessions: %v, %v", ss, err)
	}
	last := ss[len(ss)-1].ID
	run := func(who discordtest.Member, date string) string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, who, "session", discordtest.Sub("date", discordtest.Str("date", date)))
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	for _, tc := range []struct {
		date, reply, stored string
	}{
		{"frostfall 3, 1452 dr", "Session " + last + " takes place on **3 Frostfall 1452 DR**", "3 Frostfall 1452 DR"},
		{"3 Snowmelt 1452", "is not a date of the campaign calendar", "3 Frostfall 1452 DR"},
		{"31 Deepwinter 1452", "months: Deepwinter, Frostfall", "3 Frostfall 1452 DR"},
		{"1st of Deepwinter 1453", "**1 Deepwinter 1453 DR**", "1 Deepwinter 1453 DR"},
	} {
		if got := run(theDM, tc.date); !strings.Contains(got, tc.reply) {
			t.Errorf("/session date %q: %q, want %q", tc.date, got, tc.reply)
		}
		s, err := h.camp.Sessions().Session(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		if s.GameDate != tc.stored {
			t.Errorf("after /session date %q the session's date is %q, want %q", tc.date, s.GameDate, tc.stored)
		}
	}
	i := h.fake.Command(guildID, channelID, player, "session", discordtest.Sub("date", discordtest.Str("date", "2 Frostfall 1452")))
	if r := h.send(i); !strings.Contains(r.Data.Content, "is for the DM") {
		t.Errorf("a player's /session date: %+v", r)
	}
	if s, _ := h.camp.Sessions().Session(ctx, last); s.GameDate != "1 Deepwinter 1453 DR" {
		t.Errorf("a player changed the date to %q", s.GameDate)
	}
}

// TestRecapInWorldOrder: a campaign recap tells the sessions in the order
// of their in-world dates, each with its date, not in the order played.
func TestRecapInWorldOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	cal := &calendar.Calendar{Months: []calendar.Month{{Name: "Deepwinter", Days: 30}, {Name: "Frostfall", Days: 30}}}
	if err := h.camp.Sessions().SetCalendar(ctx, cal); err != nil {
		t.Fatal(err)
	}
	recapText := func() string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, theDM, "recap", discordtest.Str("scope", "campaign"))
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	// Undated: the order played.
	if got := recapText(); !(strings.Index(got, "**Session s1** (2026-03-01)") >= 0 &&
		strings.Index(got, "**Session s1**") < strings.Index(got, "**Session s2**")) {
		t.Fatalf("undated campaign recap: %s", got)
	}
	// s2 is a flashback: it takes place before s1 in the world.
	for s, d := range map[string]string{"s1": "10 Frostfall 1452", "s2": "Frostfall 2, 1452"} {
		if err := h.camp.Sessions().SetGameDate(ctx, s, d); err != nil {
			t.Fatal(err)
		}
	}
	got := recapText()
	one, two := strings.Index(got, "**Session s1** (10 Frostfall 1452, played 2026-03-01)"), strings.Index(got, "**Session s2** (2 Frostfall 1452, played 2026-03-08)")
	if one < 0 || two < 0 || two > one {
		t.Fatalf("dated campaign recap, want s2 (2 Frostfall) before s1 (10 Frostfall): %s", got)
	}
}
