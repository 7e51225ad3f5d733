package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var factID = regexp.MustCompile(`#[0-9]+`)

// TestExportImportBundle: glyphoxa export writes a bundle that glyphoxa
// import restores into a new campaign and into a fresh database, with the
// same inspection; a damaged bundle or a campaign that holds memory is
// refused with nothing written.
func TestExportImportBundle(t *testing.T) {
	t.Parallel()
	src := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	dst := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	dir := t.TempDir()
	if code, out, errs := runCLI(t, src, "import", "--no-process", "../../testdata/campaigns/ironhold-saga.yaml"); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errs)
	}
	file := filepath.Join(dir, "ironhold.bundle.gz")
	code, out, errs := runCLI(t, src, "export", "--campaign", "ironhold-saga", "--out", file)
	if code != 0 || !strings.Contains(out, "2 sessions, 26 transcript lines") {
		t.Fatalf("export: %d %q %q", code, out, errs)
	}
	inspect := func(vars map[string]string, id string) string {
		t.Helper()
		code, out, errs := runCLI(t, vars, "inspect", "--campaign", id)
		if code != 0 {
			t.Fatalf("inspect %s: %d %s", id, code, errs)
		}
		// Fact ids are assigned anew by the target database.
		return factID.ReplaceAllString(strings.ReplaceAll(out, id, "<campaign>"), "#N")
	}
	want := inspect(src, "ironhold-saga")
	for _, tc := range []struct {
		name string
		vars map[string]string
		args []string
		id   string
	}{
		{"a new campaign", src, []string{"--campaign", "ironhold-copy"}, "ironhold-copy"},
		{"a fresh database", dst, nil, "ironhold-saga"},
	} {
		code, out, errs := runCLI(t, tc.vars, append(append([]string{"import"}, tc.args...), file)...)
		if code != 0 || !strings.Contains(out, `into campaign "`+tc.id+`"`) || !strings.Contains(out, "26 transcript lines") {
			t.Fatalf("%s: import: %d %q %q", tc.name, code, out, errs)
		}
		if got := inspect(tc.vars, tc.id); got != want {
			t.Errorf("%s: inspect differs:\n%s\nwant:\n%s", tc.name, got, want)
		}
	}
	// Again into the same campaign: refused, it is not empty.
	code, _, errs = runCLI(t, dst, "import", file)
	if code == 0 || !strings.Contains(errs, "already holds") || !strings.Contains(errs, "--campaign NEW-ID") {
		t.Fatalf("import into a campaign with memory: %d %q", code, errs)
	}
	// Plain and cut short: refused, nothing written.
	plain := filepath.Join(dir, "plain.bundle")
	if code, _, errs := runCLI(t, src, "export", "--campaign", "ironhold-saga", "--out", plain); code != 0 {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.bundle")
	os.WriteFile(cut, b[:len(b)*2/3], 0o644)
	code, _, errs = runCLI(t, dst, "import", "--campaign", "cut", cut)
	if code == 0 || !strings.Contains(errs, "nothing imported") {
		t.Fatalf("import of a truncated bundle: %d %q", code, errs)
	}
	if code, _, errs := runCLI(t, dst, "inspect", "--campaign", "cut"); code == 0 || !strings.Contains(errs, "does not exist") {
		t.Fatalf("a refused import left campaign cut: %d %q", code, errs)
	}
	code, _, errs = runCLI(t, src, "export", "--campaign", "ironhold-sag", "--out", filepath.Join(dir, "x"))
	if code == 0 || !strings.Contains(errs, `did you mean "ironhold-saga"`) {
		t.Fatalf("export of a typo: %d %q", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); !os.IsNotExist(err) {
		t.Fatalf("a failed export left a file: %v", err)
	}
}
