package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestMigrateNamesTheVersionsApplied: a self-hoster running glyphoxa
// migrate reads which migrations it applied, and "up to date" only when it
// applied none.
func TestMigrateNamesTheVersionsApplied(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../memory/postgres/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("the migrations: %v %v", files, err)
	}
	newest, _, _ := strings.Cut(filepath.Base(files[len(files)-1]), "_")
	vars := map[string]string{"GLYPHOXA_DSN": pgtest.NewDatabase(t)}

	code, out, errs := runCLI(t, vars, "migrate")
	if want := "applied migrations 0001.." + newest + " "; code != 0 || !strings.Contains(out, want) || strings.Contains(out, "up to date") {
		t.Fatalf("migrating a new database: %d %q %q; want %q, and not \"up to date\"", code, out, errs, want)
	}
	code, out, errs = runCLI(t, vars, "migrate")
	if code != 0 || !strings.Contains(out, "database is up to date") || strings.Contains(out, "applied") {
		t.Fatalf("migrating it again: %d %q %q; want \"up to date\" and nothing applied", code, out, errs)
	}
}

// TestVersionRanges: the versions applied are named as runs of successive
// migrations.
func TestVersionRanges(t *testing.T) {
	t.Parallel()
	known := []int{1, 4, 5, 6, 25, 27, 46, 47, 48, 49, 50}
	for _, tc := range []struct {
		vs   []int
		want string
	}{
		{[]int{47, 48, 49, 50}, "0047..0050"},
		{[]int{50}, "0050"},
		{[]int{1, 4, 5, 25, 27}, "0001..0005, 0025..0027"}, // 6 is; 2, 3 and 26 are not migrations
		{[]int{1, 5, 47, 48, 50}, "0001, 0005, 0047..0048, 0050"},
	} {
		if got := versionRanges(tc.vs, known); got != tc.want {
			t.Errorf("versionRanges(%v) = %q, want %q", tc.vs, got, tc.want)
		}
	}
}
