package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A transcript line's duration_ms beyond what the store's integer column
// holds was imported without a word and stored as another number: the
// file's 99999999999999 ms became 978760283 (time.Duration overflows, then
// int32 wraps, in postgres.entryArgs). A value the store cannot hold must
// be refused, naming the line, and nothing imported.
func TestAttackImportDurationOutOfRange(t *testing.T) {
	t.Parallel()
	dsn := migratedDB(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	dir := t.TempDir()
	for i, ms := range []int64{99999999999999, 5000000000} {
		id := fmt.Sprintf("long-line-%d", i)
		doc := fmt.Sprintf("campaign: %s\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n"+
			"      - {speaker_id: u1, text: \"a very long speech\", at: 2026-03-01T19:00:01Z, duration_ms: %d}\n", id, ms)
		path := filepath.Join(dir, id+".yaml")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, vars, "import", "--no-process", path)
		if code != 0 && strings.Contains(errs, "line 6") && strings.Contains(errs, "duration_ms") {
			continue
		}
		stored := storedDuration(t, dsn, id)
		if code == 0 && stored == ms {
			continue
		}
		t.Errorf("duration_ms %d: import exited %d (%q %q) and stored %d", ms, code, out, errs, stored)
	}
}

func storedDuration(t *testing.T, dsn, campaign string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ms int64 = -1
	err = conn.QueryRow(ctx, `SELECT duration_ms FROM transcript_entries WHERE campaign_id = $1`, campaign).Scan(&ms)
	if err != nil && err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	return ms
}

// A fact's confidence of .nan passed the file's check (NaN < 0 and NaN > 1
// are both false) and reached PostgreSQL, whose check constraint refused
// it: the user read "violates check constraint relationships_confidence_check
// (SQLSTATE 23514)" instead of what the file's other mistakes say.
func TestAttackImportConfidenceNaN(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	path := filepath.Join(t.TempDir(), "nan.yaml")
	doc := "campaign: nan\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n" +
		"  - {source: a, target: a, type: KNOWS, provenance: {confidence: .nan}}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, vars, "import", "--no-process", path)
	if code == 0 || !strings.Contains(errs, "line 5") || !strings.Contains(errs, "confidence") ||
		!strings.Contains(errs, "invalid campaign file") || strings.Contains(errs, "SQLSTATE") {
		t.Fatalf("import: %d %q %q, want the file's error naming line 5 and the confidence", code, out, errs)
	}
}

// An entries block followed by another key of its session (ended_at after
// the lines, say) is flushed when that key arrives, and the streaming
// reader dropped the flush's error: a line with a misspelt key (txt) made
// `glyphoxa import` report success with "0 new transcript entries",
// losing every line of the block, the good ones too, and the session's
// end. The file must be refused, naming the line, and nothing imported.
func TestAttackImportDropsAnEntriesBlockSilently(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	path := filepath.Join(t.TempDir(), "drop.yaml")
	doc := "campaign: drop\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n" +
		"      - {speaker_id: u1, text: \"the first line\", at: 2026-03-01T19:00:01Z}\n" +
		"      - {speaker_id: u1, txt: \"the second line\", at: 2026-03-01T19:00:02Z}\n" +
		"    ended_at: 2026-03-01T20:00:00Z\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, vars, "import", "--no-process", path)
	if code == 0 || !strings.Contains(errs, "line 7") || !strings.Contains(errs, "txt") {
		_, inspect, _ := runCLI(t, vars, "inspect", "--campaign", "drop")
		t.Fatalf("import: %d %q %q, want an error naming line 7 and its key txt; the campaign holds:\n%s", code, out, errs, inspect)
	}
}

// --batch-timeout 0s or -1s was taken without a word for the default of
// two minutes: a limit that cannot be met must be a usage error naming
// the flag, before anything is read.
func TestAttackImportBatchTimeoutNotPositive(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	for _, d := range []string{"0s", "-1s"} {
		code, out, errs := runCLI(t, vars, "import", "--no-process", "--batch-timeout", d, "../../testdata/campaigns/ironhold-saga.yaml")
		if code != 2 || !strings.Contains(errs, "--batch-timeout") {
			t.Errorf("--batch-timeout %s: %d %q %q, want a usage error naming the flag", d, code, out, errs)
		}
	}
}
