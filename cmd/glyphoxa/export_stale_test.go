package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// An export killed mid-write (SIGKILL runs no deferred removal) leaves its
// temporary file beside the target; the next export to that target removes
// it, but not one an export still running may be writing, nor another
// target's, nor anything that is not such a file.
func TestExportRemovesTempsOfKilledRuns(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, target := range []string{"camp.json.gz", "odd [1]*.json"} {
		t.Run(target, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, target)
			files := map[string]time.Duration{ // name → age
				"." + target + ".123.tmp":     time.Hour,     // killed run: removed
				"." + target + ".456.tmp":     time.Minute,   // running export: kept
				".other.json.gz.789.tmp":      time.Hour,     // another target: kept
				target:                        time.Hour,     // the earlier bundle: kept
				"." + target + ".keep":        time.Hour,     // not a temp: kept
				"." + target + ".000.tmp.bak": 2 * time.Hour, // not a temp: kept
			}
			for name, age := range files {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
					t.Fatal(err)
				}
			}
			got := removeStaleBundleTemps(path, now)
			want := []string{filepath.Join(dir, "."+target+".123.tmp")}
			if !slices.Equal(got, want) {
				t.Errorf("removed %q, want %q", got, want)
			}
			for name := range files {
				_, err := os.Stat(filepath.Join(dir, name))
				if gone := os.IsNotExist(err); gone != (name == "."+target+".123.tmp") {
					t.Errorf("%s: gone = %v", name, gone)
				}
			}
		})
	}
}
