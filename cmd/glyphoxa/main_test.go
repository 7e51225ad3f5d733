package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// runCLI runs glyphoxa with args and the given environment variables.
func runCLI(t testing.TB, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] }}
	code = run(context.Background(), args, e)
	return code, out.String(), errb.String()
}

// migratedDB is a fresh database with the schema of the default
// embedding dimension in place (pgtest.NewMigratedDatabase), for tests
// that are not about migrating.
func migratedDB(t *testing.T) string {
	t.Helper()
	return pgtest.NewMigratedDatabase(t, config.Default().Memory.EmbeddingDimensions)
}

func TestImportAndInspect(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": pgtest.NewDatabase(t)}
	sample := "../../testdata/campaigns/ironhold-saga.yaml"

	code, out, errs := runCLI(t, vars, "migrate")
	if code != 0 || !strings.Contains(out, "applied migrations 0001..") {
		t.Fatalf("migrate: %d %q %q", code, out, errs)
	}
	code, out, errs = runCLI(t, vars, "import", sample)
	if code != 0 || !strings.Contains(out, "26 new transcript entries") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, vars, "import", "--campaign", "ironhold-saga", sample)
	if code != 0 || !strings.Contains(out, "0 new transcript entries") {
		t.Fatalf("second import: %d %q", code, out)
	}
	code, out, errs = runCLI(t, vars, "inspect", "--campaign", "ironhold-saga")
	if code != 0 {
		t.Fatalf("inspect: %d %q", code, errs)
	}
	for _, want := range []string{"s1", "s2", "npc", "Pending DM review", "vexa -MEMBER_OF-> ashen-circle", "2 pending"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, vars, "inspect", "--campaign", "ironhold-saga", "--json")
	if code != 0 || !strings.Contains(out, `"Campaign": "ironhold-saga"`) {
		t.Fatalf("inspect --json: %d %s", code, out)
	}
}

func TestCommandErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("campaign: c\nentities:\n  - {id: a, type: npc}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		vars     map[string]string
		args     []string
		code     int
		inStderr string
	}{
		{"no command", nil, nil, 2, ""},
		{"unknown command", nil, []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"no database", nil, []string{"inspect", "--campaign", "c"}, 1, "no database configured"},
		{"missing campaign flag", nil, []string{"inspect"}, 2, "--campaign is required"},
		{"bad flag", nil, []string{"migrate", "--nope"}, 2, "flag provided but not defined"},
		{"bad campaign file", nil, []string{"import", bad}, 1, "line 3"},
		{"campaign mismatch", nil, []string{"import", "--campaign", "other", "../../testdata/campaigns/ironhold-saga.yaml"}, 2, "does not match"},
		{"missing file", nil, []string{"import", filepath.Join(dir, "nope.yaml")}, 1, "no such file"},
		{"bad config", map[string]string{"GLYPHOXA_CONFIG": bad}, []string{"inspect", "--campaign", "c"}, 1, "invalid configuration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, tc.vars, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.inStderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want it to contain %q)", code, tc.code, errs, tc.inStderr)
			}
		})
	}
}
