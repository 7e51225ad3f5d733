package campaignfile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

const calendarFile = `campaign: frost
calendar:
  months:
    - {name: Deepwinter, days: 30}
    - {name: Frostfall, days: 30}
  era: DR
sessions:
  - id: s1
    started_at: 2026-03-01T19:00:00Z
    game_date: 3 Frostfall 1452
  - id: s2
    started_at: 2026-03-08T19:00:00Z
    game_date: %s
`

// A calendar is read by both the whole-file and the streaming reader, and
// a session's game_date it does not read is an error naming the session,
// its line and the calendar's months.
func TestCalendarKey(t *testing.T) {
	for _, tc := range []struct {
		name, date, want string
	}{
		{"valid", "Frostfall 9, 1452 DR", ""},
		{"unknown month", "3 Snowmelt 1452", `line 11: invalid campaign file: session "s2": game_date: invalid in-world date: "3 Snowmelt 1452": no month of the calendar`},
		{"day out of range", "31 Deepwinter 1452", "Deepwinter has days 1 to 30, not 31"},
	} {
		doc := strings.Replace(calendarFile, "%s", tc.date, 1)
		f, perr := campaignfile.Parse(strings.NewReader(doc), "f.yaml")
		sum, cerr := campaignfile.Check(strings.NewReader(doc), "f.yaml", campaignfile.Options{})
		for reader, err := range map[string]error{"Parse": perr, "Check": cerr} {
			if tc.want == "" {
				if err != nil {
					t.Errorf("%s: %s: %v", tc.name, reader, err)
				}
				continue
			}
			if !errors.Is(err, campaignfile.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "months: Deepwinter, Frostfall") {
				t.Errorf("%s: %s error = %v, want %q and the months", tc.name, reader, err, tc.want)
			}
		}
		if tc.want == "" {
			if f.Calendar == nil || len(f.Calendar.Months) != 2 || f.Calendar.Era != "DR" {
				t.Errorf("Parse: calendar = %+v", f.Calendar)
			}
			if sum.Calendar == nil || len(sum.Calendar.Months) != 2 || sum.Calendar.Months[1].Name != "Frostfall" {
				t.Errorf("Check: calendar = %+v", sum.Calendar)
			}
		}
	}
}

// A bad calendar is an error naming its line; without a calendar, game
// dates stay free text.
func TestCalendarProblems(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"zero days", "campaign: c\ncalendar:\n  months: [{name: Frostfall, days: 0}]\n", `line 2: invalid campaign file: invalid in-world date: calendar month "Frostfall" has 0 days`},
		{"unknown key", "campaign: c\ncalendar:\n  moons: 2\n", "line 3"},
	} {
		_, perr := campaignfile.Parse(strings.NewReader(tc.doc), "f.yaml")
		_, cerr := campaignfile.Check(strings.NewReader(tc.doc), "f.yaml", campaignfile.Options{})
		for reader, err := range map[string]error{"Parse": perr, "Check": cerr} {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %s error = %v, want %q", tc.name, reader, err, tc.want)
			}
		}
	}
	free := "campaign: c\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    game_date: 3rd of Frostfall, the year of the Wyrm\n"
	if _, err := campaignfile.Parse(strings.NewReader(free), "f.yaml"); err != nil {
		t.Errorf("free-text game date without a calendar: %v", err)
	}
	if _, err := campaignfile.Check(strings.NewReader(free), "f.yaml", campaignfile.Options{}); err != nil {
		t.Errorf("free-text game date without a calendar (stream): %v", err)
	}
}
