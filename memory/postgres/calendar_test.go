package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/calendar"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// An in-world date resolves to the last session dated on or before it
// (of those on that date, the one started last; undated sessions and
// dates the calendar does not read take no part), and "as of" it gives
// the facts that held then.
func TestFactsAsOfInWorldDate(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	c := pgtest.Campaign(t, newStore(t), "calendar")
	seedWorld(t, c)
	sl, g := c.Sessions(), c.Graph()
	for i, s := range []string{"s1", "s2", "s3", "s4"} {
		check(t, sl.StartSession(ctx, s, t0.Add(time.Duration(i)*7*24*time.Hour)))
	}
	// Free text before the campaign has a calendar.
	check(t, sl.SetGameDate(ctx, "s4", "the year of the Wyrm"))
	if _, set := must2[calendar.Calendar, bool](t)(sl.Calendar(ctx)); set {
		t.Fatal("a new campaign has a calendar")
	}
	cal := &calendar.Calendar{Months: []calendar.Month{{Name: "Deepwinter", Days: 30}, {Name: "Frostfall", Days: 30}}, Era: "DR"}
	check(t, sl.SetCalendar(ctx, cal))
	if got, set := must2[calendar.Calendar, bool](t)(sl.Calendar(ctx)); !set || len(got.Months) != 2 || got.Months[1] != cal.Months[1] || got.Era != "DR" {
		t.Fatalf("stored calendar %+v, %v", got, set)
	}
	for s, d := range map[string]string{"s1": "1 Frostfall 1452", "s2": "10 Frostfall 1452", "s3": "Frostfall 10, 1452"} {
		check(t, sl.SetGameDate(ctx, s, d))
	}
	if err := sl.SetGameDate(ctx, "s3", "3 Snowmelt 1452"); !errors.Is(err, memory.ErrInvalid) || !strings.Contains(err.Error(), "Deepwinter, Frostfall") {
		t.Errorf("a date the calendar does not read: %v", err)
	}
	if s := must[memory.Session](t)(sl.Session(ctx, "s3")); s.GameDate != "Frostfall 10, 1452" {
		t.Errorf("a refused date changed the session's date to %q", s.GameDate)
	}
	_, _, err := g.RecordFact(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "tower", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.9, Source: memory.SourceStated}})
	check(t, err)

	for _, tc := range []struct {
		ref, label, at string // at: where Grimjaw is
	}{
		{"1 Frostfall 1452", "1 Frostfall 1452 DR (session s1)", "ironhold"},
		{"5 frostfall 1452 dr", "5 Frostfall 1452 DR (session s1)", "ironhold"},
		{"Frostfall 10, 1452", "10 Frostfall 1452 DR (session s3)", "tower"},
		{"1 Deepwinter 1453", "1 Deepwinter 1453 DR (session s3)", "tower"},
		{"s2", "session s2", "tower"},
		{"2026-03-02", "2026-03-02", "ironhold"},
	} {
		facts, label, err := g.FactsAsOfRef(ctx, "grimjaw", tc.ref)
		if err != nil {
			t.Errorf("as of %q: %v", tc.ref, err)
			continue
		}
		var at []string
		for _, f := range facts {
			if f.Type == "LOCATED_AT" && f.SourceID == "grimjaw" {
				at = append(at, f.TargetID)
			}
		}
		if label != tc.label || fmtSlice(at) != "["+tc.at+"]" {
			t.Errorf("as of %q: %q, Grimjaw at %v; want %q, [%s]", tc.ref, label, at, tc.label, tc.at)
		}
	}
	for ref, want := range map[string]string{
		"30 Deepwinter 1452": "no session of this campaign is dated on or before 30 Deepwinter 1452 DR",
		"3 Snowmelt 1452":    "nor an in-world date of the campaign calendar",
		"s9":                 "months: Deepwinter, Frostfall",
	} {
		if _, _, err := g.FactsAsOfRef(ctx, "grimjaw", ref); !errors.Is(err, memory.ErrNotFound) || !strings.Contains(err.Error(), want) {
			t.Errorf("as of %q: %v, want %q", ref, err, want)
		}
	}
	// Back to the numbered calendar: "day N" dates only.
	check(t, sl.SetCalendar(ctx, nil))
	if _, _, err := g.FactsAsOfRef(ctx, "grimjaw", "1 Frostfall 1452"); err == nil || !strings.Contains(err.Error(), `numbered calendar ("day 12")`) {
		t.Errorf("as of a month date under the numbered calendar: %v", err)
	}
}

func must2[A, B any](t *testing.T) func(A, B, error) (A, B) {
	return func(a A, b B, err error) (A, B) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}
