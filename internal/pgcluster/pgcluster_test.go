package pgcluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// install lays out a fake installation under root: the server binaries
// (bin/pg_ctl) of each version, and pgvector for those in vector.
func install(t *testing.T, root string, versions []string, vector ...string) (servers, shares string) {
	t.Helper()
	servers, shares = filepath.Join(root, "lib"), filepath.Join(root, "share")
	touch := func(path string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range versions {
		touch(filepath.Join(servers, v, "bin", "pg_ctl"))
	}
	for _, v := range vector {
		touch(filepath.Join(shares, v, "extension", "vector.control"))
	}
	return servers, shares
}

// TestFindBinDirFindsTheInstalledVersion: the clusters use the server of
// whichever version is installed (Ubuntu 24.04 has 16, not 15), the highest
// with pgvector first, as scripts/devdb.sh picks it; CI's Debian with 15
// alone keeps 15.
func TestFindBinDirFindsTheInstalledVersion(t *testing.T) {
	noPGConfig := func() (string, error) { return "", errors.New("no pg_config") }
	for _, tc := range []struct {
		name     string
		versions []string
		vector   []string
		want     string // the version picked
	}{
		{"Debian, as CI", []string{"15"}, []string{"15"}, "15"},
		{"Ubuntu 24.04", []string{"16"}, []string{"16"}, "16"},
		{"the highest", []string{"9.6", "15", "17", "16"}, []string{"9.6", "15", "17", "16"}, "17"},
		{"the highest with pgvector", []string{"15", "17"}, []string{"15"}, "15"},
		{"none with pgvector: the highest", []string{"15", "16"}, nil, "16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers, shares := install(t, t.TempDir(), tc.versions, tc.vector...)
			got, err := findBinDir(servers, shares, noPGConfig)
			if want := filepath.Join(servers, tc.want, "bin"); err != nil || got != want {
				t.Fatalf("findBinDir = %q, %v; want %q", got, err, want)
			}
		})
	}
	t.Run("elsewhere, pg_config --bindir", func(t *testing.T) {
		root := t.TempDir()
		bin := filepath.Join(root, "usr", "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, "pg_ctl"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		got, err := findBinDir(filepath.Join(root, "none"), filepath.Join(root, "none"), func() (string, error) { return bin, nil })
		if err != nil || got != bin {
			t.Fatalf("findBinDir = %q, %v; want pg_config's %q", got, err, bin)
		}
	})
	t.Run("none installed", func(t *testing.T) {
		root := t.TempDir()
		_, err := findBinDir(filepath.Join(root, "none"), filepath.Join(root, "none"), noPGConfig)
		if err == nil || !strings.Contains(err.Error(), "GLYPHOXA_PG_BINDIR") {
			t.Fatalf("with no server installed: %v; want an error saying what to do", err)
		}
	})
	t.Run("GLYPHOXA_PG_BINDIR wins", func(t *testing.T) {
		got, err := FindBinDir(func(k string) string {
			if k == "GLYPHOXA_PG_BINDIR" {
				return "/opt/pg/bin"
			}
			return ""
		})
		if err != nil || got != "/opt/pg/bin" {
			t.Fatalf("FindBinDir = %q, %v", got, err)
		}
	})
}

// TestInCI: under CI, whatever value the service gives CI (GitHub's
// "true", others' "1" or "yes"), a test that needs a cluster fails
// instead of skipping.
func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "1": true, "yes": true, "TRUE": true, "": false, "false": false, "0": false} {
		if got := InCI(func(string) string { return v }); got != want {
			t.Errorf("CI=%q: InCI = %v, want %v", v, got, want)
		}
	}
}
