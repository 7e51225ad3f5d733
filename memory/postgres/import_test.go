package postgres_test

import (
	"context"
	"errors"
	"fmt"
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// streamBatch is the batch size the streaming import tests cut files
// with (campaignfile.Options.BatchItems): small, so that a file of a few
// hundred items crosses batch boundaries in every section, as a file of
// thousands does with the default size.
const streamBatch = 40

// streamLayouts are one campaign written in the layouts YAML allows: the
// streaming import must store exactly what the whole-document parser does.
// Each section spans more than one batch of streamBatch items.
func streamLayouts(entries int) map[string]string {
	var ents, rels, lines strings.Builder
	for i := range 3 * streamBatch / 2 {
		fmt.Fprintf(&ents, "  - {id: e%d, type: npc, name: \"Entity %d\", attributes: {n: %d}}\n", i, i, i)
	}
	for i := 1; i < 3*streamBatch/2; i++ {
		fmt.Fprintf(&rels, "  - {source: e%d, target: e%d, type: KNOWS}\n", i-1, i)
	}
	for i := range entries {
		fmt.Fprintf(&lines, "      - {speaker_id: u1, speaker_name: Thorin, text: \"line %d\", at: 2026-03-01T19:%02d:%02dZ}\n", i, i/60%60, i%60)
	}
	block := "---\n# a comment\ncampaign: streamy\n\nentities:\n" + ents.String() + "\n# between sections\nrelationships:\n" + rels.String() +
		"sessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n" + lines.String() +
		"  - entries:\n      - {speaker_id: u2, text: \"first words\", at: 2026-03-02T19:00:01Z}\n    id: s2   # keys after the entries\n    started_at: 2026-03-02T19:00:00Z\n    ended_at: 2026-03-02T23:00:00Z\n"
	indentless := strings.ReplaceAll(block, "\n  ", "\n")
	blockItems := strings.Replace(block, "  - {id: e0, type: npc, name: \"Entity 0\", attributes: {n: 0}}\n",
		"  - id: e0\n    type: npc\n    name: Entity 0\n    attributes:\n      n: 0\n", 1)
	flow := "{campaign: streamy, entities: [{id: e0, type: npc, name: \"Entity 0\"}], sessions: [{id: s1, started_at: 2026-03-01T19:00:00Z, entries: [{speaker_id: u1, text: hi, at: 2026-03-01T19:00:01Z}]}]}\n"
	return map[string]string{"block": block, "indentless": indentless, "block items": blockItems, "flow (parsed whole)": flow}
}

func TestStreamingImportStoresWhatParseDoes(t *testing.T) {
	t.Parallel()
	for name, doc := range streamLayouts(2*streamBatch + 17) {
		// Each layout has a store of its own: they run in parallel.
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			streamingImportMatchesParse(t, s, name, doc)
		})
	}
}

// streamingImportMatchesParse imports doc into s whole (Parse), then
// streaming (Check and Apply), and compares what each stored.
func streamingImportMatchesParse(t *testing.T, s *postgres.Store, name, doc string) {
	t.Helper()
	ctx := ctxT(t)
	dump := func() string {
		var b strings.Builder
		rows, err := s.Pool().Query(ctx, `SELECT format('%s|%s|%s|%s', id, type, name, attributes) FROM entities WHERE campaign_id = 'streamy'
			UNION ALL SELECT format('%s|%s|%s|%s|%s', source_id, target_id, rel_type, confidence, status) FROM relationships WHERE campaign_id = 'streamy'
			UNION ALL SELECT format('%s|%s|%s|%s', session_id, speaker_id, text, at) FROM transcript_entries WHERE campaign_id = 'streamy'
			UNION ALL SELECT format('%s|%s|%s', id, started_at, ended_at) FROM sessions WHERE campaign_id = 'streamy' ORDER BY 1`)
		check(t, err)
		for rows.Next() {
			var line string
			check(t, rows.Scan(&line))
			b.WriteString(line + "\n")
		}
		check(t, rows.Err())
		return b.String()
	}
	reset := func() {
		_, err := s.Pool().Exec(ctx, `DELETE FROM campaigns WHERE id = 'streamy'`)
		check(t, err)
	}
	reset()
	f, err := campaignfile.Parse(strings.NewReader(doc), "f.yaml")
	check(t, err)
	want := must[campaignfile.Applied](t)(importFile(ctx, s, f))
	wantDump := dump()
	reset()

	var progress []campaignfile.Progress
	sum, err := campaignfile.Check(strings.NewReader(doc), "f.yaml", campaignfile.Options{BatchItems: streamBatch})
	check(t, err)
	if sum.Counts != f.Counts() || sum.Campaign != "streamy" {
		t.Fatalf("Check counts %+v, Parse %+v", sum.Counts, f.Counts())
	}
	var got campaignfile.Applied
	check(t, s.InTx(ctx, sum.Campaign, func(c *postgres.Campaign) error {
		var err error
		// The batch timeout is the test's hang guard (ctxT), not the
		// product's 2-minute default: a loaded machine may be slow.
		got, err = sum.Apply(ctx, strings.NewReader(doc), c.Sessions(), c.Graph(), campaignfile.Options{
			Size: int64(len(doc)), Progress: func(p campaignfile.Progress) { progress = append(progress, p) },
			BatchTimeout: hangGuard, BatchItems: streamBatch})
		return err
	}))
	if got != want {
		t.Fatalf("streaming import %+v, whole %+v", got, want)
	}
	if d := dump(); d != wantDump {
		t.Fatalf("the streaming import stored something else (%d vs %d bytes)", len(d), len(wantDump))
	}
	if !strings.HasPrefix(name, "flow") && (len(progress) < 5 || progress[len(progress)-1].Bytes != int64(len(doc))) {
		t.Fatalf("progress %+v", progress)
	}
}
