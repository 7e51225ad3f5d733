package postgres_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func importFile(ctx context.Context, s *postgres.Store, f *campaignfile.File) (campaignfile.Applied, error) {
	var a campaignfile.Applied
	err := s.InTx(ctx, f.Campaign, func(c *postgres.Campaign) error {
		var err error
		a, err = f.Apply(ctx, c.Sessions(), c.Graph())
		return err
	})
	return a, err
}

func TestImportIsIdempotentAndInspectable(t *testing.T) {
	s := newStore(t)
	ctx := ctxT(t)
	raw, err := os.ReadFile("../../testdata/campaigns/ironhold-saga.yaml")
	check(t, err)
	f, err := campaignfile.Parse(strings.NewReader(string(raw)), "ironhold-saga.yaml")
	check(t, err)

	a := must[campaignfile.Applied](t)(importFile(ctx, s, f))
	counts := f.Counts()
	if a.NewEntries != counts.Entries || a.Entities != counts.Entities {
		t.Fatalf("first import: %+v, file %+v", a, counts)
	}
	c := pgtest.Campaign(t, s, f.Campaign)
	before := must[postgres.Inspection](t)(c.Inspect(ctx))
	snapshot := func() string {
		var b strings.Builder
		rows, err := s.Pool().Query(ctx, `SELECT format('%s|%s|%s|%s', id, name, attributes, updated_at) FROM entities
			UNION ALL SELECT format('%s|%s|%s|%s|%s', id, rel_type, confidence, status, updated_at) FROM relationships
			UNION ALL SELECT format('%s|%s', id, text) FROM transcript_entries ORDER BY 1`)
		check(t, err)
		for rows.Next() {
			var line string
			check(t, rows.Scan(&line))
			b.WriteString(line + "\n")
		}
		check(t, rows.Err())
		return b.String()
	}
	first := snapshot()

	a2 := must[campaignfile.Applied](t)(importFile(ctx, s, f))
	if a2.NewEntries != 0 {
		t.Fatalf("second import wrote %d new entries", a2.NewEntries)
	}
	if second := snapshot(); second != first {
		t.Fatalf("importing twice changed the database:\n--- before\n%s\n--- after\n%s", first, second)
	}

	if len(before.Sessions) != 2 || before.Sessions[0].Entries+before.Sessions[1].Entries != counts.Entries {
		t.Errorf("inspect sessions: %+v", before.Sessions)
	}
	var npcs int
	for _, tc := range before.EntityTypes {
		if tc.Type == memory.EntityNPC {
			npcs = tc.Count
		}
	}
	if npcs != 5 {
		t.Errorf("inspect: %d NPCs, want 5 (%+v)", npcs, before.EntityTypes)
	}
	// Two relationships in the sample are below the 0.7 threshold.
	if before.Facts[memory.StatusPending] != 2 || len(before.Pending) != 2 {
		t.Errorf("inspect pending: %v, %d listed", before.Facts, len(before.Pending))
	}
}

// A file that fails half-way (here: the database refuses a relationship to a
// missing entity) changes nothing.
func TestImportIsTransactional(t *testing.T) {
	s := newStore(t)
	ctx := ctxT(t)
	good := `campaign: c
entities:
  - {id: a, type: npc, name: A}
  - {id: b, type: npc, name: B}
relationships:
  - {source: a, target: b, type: KNOWS}
sessions:
  - id: s1
    started_at: 2026-03-01T19:00:00Z
    entries:
      - {speaker_id: u1, text: hello, at: 2026-03-01T19:00:01Z}
`
	f, err := campaignfile.Parse(strings.NewReader(good), "c.yaml")
	check(t, err)
	// Break the file after validation, as a concurrent deletion would.
	f.Relationships[0].Target = "ghost"
	_, err = importFile(ctx, s, f)
	if !errors.Is(err, memory.ErrNotFound) || !strings.Contains(err.Error(), "line 6") {
		t.Fatalf("got %v, want a not-found error naming line 6", err)
	}
	var n int
	check(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM entities) + (SELECT count(*) FROM transcript_entries)
		+ (SELECT count(*) FROM sessions)`).Scan(&n))
	if n != 0 {
		t.Fatalf("a failed import left %d rows behind", n)
	}
}

// A session's game_date is imported, listed and kept across re-imports.
func TestImportGameDate(t *testing.T) {
	s := newStore(t)
	ctx := ctxT(t)
	const file = `campaign: dated
entities: []
relationships: []
sessions:
  - id: s1
    started_at: 2026-03-01T19:00:00Z
    game_date: 3rd of Frostfall
    entries: []
  - id: s2
    started_at: 2026-03-08T19:00:00Z
    entries: []
`
	f, err := campaignfile.Parse(strings.NewReader(file), "dated.yaml")
	check(t, err)
	for range 2 {
		must[campaignfile.Applied](t)(importFile(ctx, s, f))
	}
	c := pgtest.Campaign(t, s, "dated")
	got := must[[]memory.Session](t)(c.Sessions().GameDates(ctx))
	if len(got) != 1 || got[0].ID != "s1" || got[0].GameDate != "3rd of Frostfall" {
		t.Fatalf("game dates: %+v", got)
	}
	if s1 := must[memory.Session](t)(c.Sessions().Session(ctx, "s1")); s1.GameDate != "3rd of Frostfall" {
		t.Errorf("session: %+v", s1)
	}
}
