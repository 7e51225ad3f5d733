package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// Three sessions: Grimjaw is in Ironhold in s1, moves to the Rusty Tankard
// in s2 (an imported fact), to Duskwood in s3 (extracted from the
// transcript), and the DM corrects s3: it was the Sunken Vault. ask --as-of
// gives each session's location, and each contradicting write left a
// conflict.
func TestAskAsOfThreeSessions(t *testing.T) {
	t.Parallel()
	dsn := sampleUnprocessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	more := filepath.Join(t.TempDir(), "s3.yaml")
	if err := os.WriteFile(more, []byte(`campaign: ironhold-saga
entities:
  - {id: grimjaw, type: npc, name: Grimjaw, aliases: [Grim]}
  - {id: rusty-tankard, type: location, name: The Rusty Tankard}
relationships:
  - {source: grimjaw, target: rusty-tankard, type: LOCATED_AT, provenance: {source: stated, confidence: 0.9, session: s2}}
sessions:
  - id: s3
    started_at: 2026-03-15T19:00:00Z
    ended_at: 2026-03-15T22:00:00Z
    entries:
      - {speaker_id: u1, speaker_name: Thorin, text: "Grimjaw packed his forge and took the Duskwood road.", at: 2026-03-15T19:05:00Z}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCLI(t, vars, "import", "--no-process", more); code != 0 {
		t.Fatalf("second import: %s", errs)
	}
	srv := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		if strings.Contains(req.Messages[1].Content, "Duskwood road") {
			return llmtest.Reply{Text: `{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Duskwood","type":"location"}],
				"relationships":[{"source":"Grimjaw","target":"Duskwood","type":"LOCATED_AT","confidence":0.9,"basis":"stated"}]}`}
		}
		return llmtest.Reply{Text: `{"entities":[],"relationships":[]}`}
	})
	defer srv.Close()
	vars["GLYPHOXA_LLM_BASE_URL"], vars["GLYPHOXA_LLM_MODEL"] = srv.URL(), "fake"
	if code, out, errs := runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--extract"); code != 0 {
		t.Fatalf("process --extract: %s %s", out, errs)
	}

	// The DM's correction, as /memory fact add writes it.
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	w, err := camp.Graph().WriteFact(ctx, memory.DM("dm-user"), memory.Relationship{SourceID: "grimjaw", TargetID: "sunken-vault",
		Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s3"}}, "he went down to the vault, not to Duskwood")
	if err != nil || len(w.Conflicts) != 1 || w.Conflicts[0].OldFact.TargetID != "duskwood" {
		t.Fatalf("the DM's correction: %+v, %v", w, err)
	}

	for session, want := range map[string]string{"s1": "Grimjaw LOCATED_AT Ironhold", "s2": "Grimjaw LOCATED_AT The Rusty Tankard",
		"s3": "Grimjaw LOCATED_AT Sunken Vault"} {
		code, out, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "--mode", "fts", "--as-of", session, "Where is Grimjaw?")
		if code != 0 || strings.Count(out, "LOCATED_AT") != 1 || !strings.Contains(out, "as of session "+session+": "+want) {
			t.Errorf("ask --as-of %s: %d\n%s%s\nwant exactly %q", session, code, out, errs, want)
		}
	}
	// By date: the end of that day (UTC), or an RFC 3339 moment.
	for date, want := range map[string]string{"2026-03-05": "Grimjaw LOCATED_AT Ironhold", "2026-03-08": "Grimjaw LOCATED_AT The Rusty Tankard",
		"2026-03-08T18:59:00Z": "Grimjaw LOCATED_AT Ironhold", "2026-03-15": "Grimjaw LOCATED_AT Sunken Vault"} {
		code, out, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "--mode", "fts", "--as-of", date, "Where is Grimjaw?")
		if code != 0 || strings.Count(out, "LOCATED_AT") != 1 || !strings.Contains(out, "as of "+date+": "+want) {
			t.Errorf("ask --as-of %s: %d\n%s%s\nwant exactly %q", date, code, out, errs, want)
		}
	}
	if code, out, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "--mode", "fts", "--as-of", "2026-02-01", "Where is Grimjaw?"); code != 0 ||
		strings.Contains(out, "LOCATED_AT") || strings.Contains(out, "Duskwood road") {
		t.Errorf("ask --as-of a date before the first session: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "--as-of", "2026-13-45", "Where is Grimjaw?"); code == 0 ||
		!strings.Contains(errs, "2026-13-45") || !strings.Contains(errs, "date") {
		t.Errorf("ask --as-of a bad date: %d %s", code, errs)
	}
	if code, _, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "--as-of", "s9", "Where is Grimjaw?"); code == 0 || !strings.Contains(errs, "s9") {
		t.Errorf("ask --as-of an unknown session: %d %s", code, errs)
	}
	var open, settled int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE resolution = ''), count(*) FILTER (WHERE resolution <> '')
		FROM fact_conflicts WHERE campaign_id = 'ironhold-saga'`).Scan(&open, &settled); err != nil {
		t.Fatal(err)
	}
	// Open: the import's move (s2) and the extracted move (s3), for the DM
	// to review; settled: the DM's own correction.
	if open != 2 || settled != 1 {
		t.Errorf("%d open and %d settled conflicts, want 2 and 1", open, settled)
	}
}
