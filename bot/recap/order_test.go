package recap_test

import (
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
)

// TestInWorldOrder: the one ordering of campaign recaps puts sessions in
// the order of their in-world dates (an undated one after the one played
// before it) and writes each date in the calendar's form.
func TestInWorldOrder(t *testing.T) {
	cal := calendar.Calendar{Months: []calendar.Month{{Name: "Deepwinter", Days: 30}, {Name: "Frostfall", Days: 30}}}
	played := func(dates ...string) []memory.Session {
		var out []memory.Session
		for i, d := range dates {
			out = append(out, memory.Session{ID: string(rune('a' + i)), GameDate: d,
				StartedAt: time.Date(2026, 3, 1+7*i, 19, 0, 0, 0, time.UTC)})
		}
		return out
	}
	tests := []struct {
		name      string
		sessions  []memory.Session
		wantIDs   string
		wantDates []string
	}{
		{"undated: as played", played("", "", ""), "abc", []string{"", "", ""}},
		{"a flashback", played("10 Frostfall 1452", "Frostfall 2, 1452"), "ba", []string{"2 Frostfall 1452", "10 Frostfall 1452"}},
		{"undated follows the one before", played("10 Frostfall 1452", "", "3 Deepwinter 1452"), "cab",
			[]string{"3 Deepwinter 1452", "10 Frostfall 1452", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := recap.InWorldOrder(cal, tt.sessions)
			var ids string
			var dates []string
			for _, s := range got {
				ids += s.ID
				dates = append(dates, s.GameDate)
			}
			if ids != tt.wantIDs || !slices.Equal(dates, tt.wantDates) {
				t.Errorf("order %q %q; want %q %q", ids, dates, tt.wantIDs, tt.wantDates)
			}
		})
	}
}
