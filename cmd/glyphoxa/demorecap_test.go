package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestDemoCampaignRecapInWorldOrder: the demo's campaign recap tells the
// sessions in the order of their in-world dates (recap.InWorldOrder, as
// Discord's and the console's), undated in the order played.
func TestDemoCampaignRecapInWorldOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, sampleUnprocessed.Copy(t), 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	order := func() (int, int, string) {
		t.Helper()
		var out bytes.Buffer
		if err := demoCampaignRecap(ctx, &env{stdout: &out}, camp, recap.Writer{}); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		return strings.Index(s, "session s1 ("), strings.Index(s, "session s2 ("), s
	}
	if one, two, out := order(); one < 0 || two < 0 || two < one {
		t.Fatalf("undated, want s1 then s2:\n%s", out)
	}
	cal := &calendar.Calendar{Months: []calendar.Month{{Name: "Deepwinter", Days: 30}, {Name: "Frostfall", Days: 30}}}
	if err := camp.Sessions().SetCalendar(ctx, cal); err != nil {
		t.Fatal(err)
	}
	for s, d := range map[string]string{"s1": "10 Frostfall 1452", "s2": "Frostfall 2, 1452"} {
		if err := camp.Sessions().SetGameDate(ctx, s, d); err != nil {
			t.Fatal(err)
		}
	}
	if one, two, out := order(); one < 0 || two < 0 || two > one || !strings.Contains(out, "session s2 (2 Frostfall 1452, played") {
		t.Fatalf("dated, want s2 (2 Frostfall) before s1 (10 Frostfall):\n%s", out)
	}
}
