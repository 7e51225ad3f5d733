package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const frostCampaign = `campaign: frost
calendar:
  months:
    - {name: Deepwinter, days: 30}
    - {name: Frostfall, days: 30}
  era: DR
entities:
  - {id: grimjaw, type: npc, name: Grimjaw}
  - {id: ironhold, type: location, name: Ironhold}
  - {id: tower, type: location, name: The Tower}
relationships:
  - {source: grimjaw, target: ironhold, type: LOCATED_AT, provenance: {source: stated, session: s1}}
  - {source: grimjaw, target: tower, type: LOCATED_AT, provenance: {source: stated, session: s2}}
sessions:
  - id: s1
    started_at: 2026-03-01T19:00:00Z
    game_date: 1 Frostfall 1452
    entries:
      - {speaker_id: u1, speaker_name: Thorin, text: "Grimjaw is at his forge in Ironhold.", at: 2026-03-01T19:05:00Z}
  - id: s2
    started_at: 2026-03-08T19:00:00Z
    game_date: Frostfall 9, 1452 DR
    entries:
      - {speaker_id: u1, speaker_name: Thorin, text: "Grimjaw climbs to the tower.", at: 2026-03-08T19:05:00Z}
`

// ask --as-of an in-world date answers as of the last session dated on or
// before it, and says on which in-world date each fact was established; a
// date of no kind is an error naming the calendar; import refuses a
// game_date the calendar does not read, naming the session and line.
func TestAskAsOfInWorldDate(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(strings.Replace(frostCampaign, "Frostfall 9, 1452 DR", "9 Snowmelt 1452", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, vars, "import", "--no-process", bad); code == 0 ||
		!strings.Contains(errs, `line 20`) || !strings.Contains(errs, `session "s2": game_date`) || !strings.Contains(errs, "months: Deepwinter, Frostfall") {
		t.Fatalf("import of a bad game date: %d %s", code, errs)
	}
	good := filepath.Join(dir, "frost.yaml")
	if err := os.WriteFile(good, []byte(frostCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, vars, "import", "--no-process", good); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errs)
	}
	for date, want := range map[string]string{
		"5 Frostfall 1452":  "as of 5 Frostfall 1452 DR (session s1): Grimjaw LOCATED_AT Ironhold (since 1 Frostfall 1452, session s1)",
		"frostfall 9, 1452": "as of 9 Frostfall 1452 DR (session s2): Grimjaw LOCATED_AT The Tower (since Frostfall 9, 1452 DR, session s2)",
		"1 Deepwinter 1460": "as of 1 Deepwinter 1460 DR (session s2): Grimjaw LOCATED_AT The Tower",
	} {
		code, out, errs := runCLI(t, vars, "ask", "--campaign", "frost", "--mode", "fts", "--as-of", date, "Where is Grimjaw?")
		if code != 0 || strings.Count(out, "LOCATED_AT") != 1 || !strings.Contains(out, want) {
			t.Errorf("ask --as-of %q: %d\n%s%s\nwant exactly %q", date, code, out, errs, want)
		}
	}
	// Before every dated session: nothing yet.
	if code, out, errs := runCLI(t, vars, "ask", "--campaign", "frost", "--mode", "fts", "--as-of", "30 Deepwinter 1452", "Where is Grimjaw?"); code != 0 ||
		strings.Contains(out, "LOCATED_AT") {
		t.Errorf("ask --as-of before every dated session: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, vars, "ask", "--campaign", "frost", "--as-of", "3 Snowmelt 1452", "Where is Grimjaw?"); code == 0 ||
		!strings.Contains(errs, "nor an in-world date of the campaign calendar") || !strings.Contains(errs, "months: Deepwinter, Frostfall") {
		t.Errorf("ask --as-of a date of no kind: %d %s", code, errs)
	}
}
