package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
)

// cmdExport writes a campaign's bundle (memory/bundle) to --out or
// standard output.
func cmdExport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("export", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "the campaign to export")
	out := fs.String("out", "", "write the bundle to this file (gzipped when it ends in .gz); default: standard output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	if fs.NArg() != 0 {
		return usagef("unexpected arguments %q (the bundle goes to --out FILE or standard output)", fs.Args())
	}
	s, _, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := checkCampaign(ctx, s, *campaign); err != nil {
		return err
	}
	if *out == "" {
		_, err := bundle.Export(ctx, s.Pool(), *campaign, e.stdout, time.Now())
		return err
	}
	for _, stale := range removeStaleBundleTemps(*out, time.Now()) {
		printf(e.stderr, "removed %s, a partial export an earlier run left when it was killed\n", memory.Quote(stale, 160))
	}
	counts, err := writeBundleFile(ctx, *out, func(w io.Writer) (bundle.Counts, error) {
		return bundle.Export(ctx, s.Pool(), *campaign, w, time.Now())
	})
	if err != nil {
		return err
	}
	printf(e.stdout, "exported campaign %s to %s: %d entities, %d facts (all statuses), %d sessions, %d transcript lines, %d chunks, %d DM notes\n",
		memory.Quote(*campaign, 80), memory.Quote(*out, 120), counts["entities"], counts["relationships"], counts["sessions"],
		counts["transcript_entries"], counts["chunks"], counts["dm_nodes"])
	return nil
}

// staleTempAge is how long a bundle's temporary file goes unmodified before
// a later export takes it for one left by a killed run (an export in
// progress writes to it all along; a run that is killed cannot remove it).
const staleTempAge = 10 * time.Minute

// removeStaleBundleTemps removes the temporary files writeBundleFile left
// beside path in runs that were killed, and returns their names. A file
// modified within staleTempAge of now may belong to an export still
// running, and stays.
func removeStaleBundleTemps(path string, now time.Time) []string {
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+".*.tmp"))
	if err != nil {
		return nil
	}
	var removed []string
	for _, m := range matches {
		fi, err := os.Lstat(m)
		if err != nil || !fi.Mode().IsRegular() || now.Sub(fi.ModTime()) < staleTempAge {
			continue
		}
		if os.Remove(m) == nil {
			removed = append(removed, m)
		}
	}
	return removed
}

// globEscape escapes the pattern characters of a file name for filepath.Glob.
func globEscape(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeBundleFile writes a bundle to a temporary file beside path and
// renames it into place once complete, so a failed export leaves no
// partial file (and an earlier one at path intact).
func writeBundleFile(_ context.Context, path string, write func(io.Writer) (bundle.Counts, error)) (bundle.Counts, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("writing the bundle: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var w io.Writer = f
	var zw *gzip.Writer
	if strings.HasSuffix(path, ".gz") {
		zw = gzip.NewWriter(f)
		w = zw
	}
	counts, err := write(w)
	if err != nil {
		return nil, err
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	return counts, nil
}
