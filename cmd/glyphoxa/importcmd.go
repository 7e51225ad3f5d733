package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

func cmdImport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("import", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id (must match the file's campaign key, if given)")
	noProcess := fs.Bool("no-process", false, "do not chunk and embed the imported sessions (glyphoxa process does it later)")
	strict := fs.Bool("strict", false, "treat warnings (an entity type glyphoxa does not know) as errors")
	batchTimeout := fs.Duration("batch-timeout", 2*time.Minute, "give up (importing nothing) when one batch of 1000 items takes longer")
	language := fs.String("language", "", "the campaign's language for full-text search (stemming, stop words): a code (en, de) or a "+
		"PostgreSQL text-search configuration (english, german); empty takes the file's language key, else leaves it as it is (english for a new campaign)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("expected one campaign file, got %d arguments", fs.NArg())
	}
	if *batchTimeout <= 0 {
		return usagef("--batch-timeout must be a positive duration (such as 2m), got %s", *batchTimeout)
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	name := memory.Quote(path, 80)
	if start, err := bufio.NewReader(f).Peek(64); (err == nil || errors.Is(err, io.EOF)) && bundle.IsBundle(start) {
		if *language != "" || *strict {
			return usagef("--language and --strict apply to campaign files; %s is a bundle, which carries its campaign's language", name)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("reading %s again: %w", name, err)
		}
		return importBundle(ctx, e, sf, f, name, *campaign, *noProcess)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading %s again: %w", name, err)
	}
	progress := newImportProgress(e.stderr, size)
	// First pass: check the whole file, holding only its ids.
	sum, err := campaignfile.Check(f, path, campaignfile.Options{Size: size, Progress: progress.report("checking")})
	if err != nil {
		return err
	}
	for _, w := range sum.Warnings {
		printf(e.stderr, "warning: %s: %s\n", name, w)
	}
	if *strict && len(sum.Warnings) > 0 {
		return fmt.Errorf("%s: %d warning(s) and --strict: nothing imported", name, len(sum.Warnings))
	}
	if *campaign != "" && *campaign != sum.Campaign {
		return usagef("--campaign %s does not match the file's campaign %s", memory.Quote(*campaign, 80), memory.Quote(sum.Campaign, 80))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading %s again: %w", name, err)
	}
	s, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	var applied campaignfile.Applied
	// Second pass: write batch by batch in one transaction.
	err = s.InTx(ctx, sum.Campaign, func(c *postgres.Campaign) error {
		lang := *language
		if lang == "" {
			lang = sum.Language // the file's language key
		}
		if lang != "" {
			if err := c.SetLanguage(ctx, lang); err != nil {
				return err
			}
		}
		applied, err = sum.Apply(ctx, f, c.Sessions(), c.Graph(), campaignfile.Options{Size: size, BatchTimeout: *batchTimeout,
			Progress: progress.report("importing")})
		if err != nil || *noProcess {
			return err
		}
		// The chunking below is owed with the import: killed before it
		// ends, serve (or glyphoxa process) does it.
		return c.Processing().OweRechunk(ctx, sum.SessionIDs())
	})
	progress.done()
	if err != nil {
		return err
	}
	printf(e.stdout, "imported %s into campaign %s: %d entities, %d relationships, %d sessions, %d new transcript entries\n",
		name, memory.Quote(sum.Campaign, 80), applied.Entities, applied.Relationships, applied.Sessions, applied.NewEntries)
	if *noProcess || sum.Counts.Sessions == 0 {
		return nil
	}
	rep, err := processSessions(ctx, s, cfg, sum.Campaign, sum.SessionIDs()...)
	if err != nil {
		return fmt.Errorf("processing the imported sessions (the import itself is done; retry with glyphoxa process --campaign %s, or let a running glyphoxa serve do it): %w", sum.Campaign, err)
	}
	printf(e.stdout, "processed %d sessions into %d chunks for retrieval\n", rep.Sessions, rep.Chunks)
	return nil
}

// importBundle restores a bundle (memory/bundle) into campaign, by
// default the campaign it was exported from; the campaign must be new.
func importBundle(ctx context.Context, e *env, sf storeFlags, f io.ReadSeeker, name, campaign string, noProcess bool) error {
	if campaign == "" {
		h, err := bundle.ReadHeader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		campaign = h.Campaign
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("reading %s again: %w", name, err)
		}
	}
	s, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := bundle.Import(ctx, s.Pool(), campaign, f)
	if errors.Is(err, bundle.ErrNotEmpty) {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err != nil {
		return fmt.Errorf("%s: nothing imported: %w", name, err)
	}
	c := res.Counts
	printf(e.stdout, "restored %s (campaign %s, exported %s) into campaign %s: %d entities, %d facts (all statuses), %d sessions, %d transcript lines, %d chunks, %d DM notes\n",
		name, memory.Quote(res.Header.Campaign, 80), res.Header.ExportedAt.Format("2006-01-02 15:04 MST"), memory.Quote(campaign, 80),
		c["entities"], c["relationships"], c["sessions"], c["transcript_entries"], c["chunks"], c["dm_nodes"])
	if res.Unembedded == 0 {
		return nil
	}
	printf(e.stdout, "%d chunks were embedded with %d dimensions and this database uses %d: their embeddings were left out\n",
		res.Unembedded, res.Header.Dimensions, s.Dimensions())
	if noProcess {
		printf(e.stdout, "run glyphoxa process --campaign %s to embed them again\n", campaign)
		return nil
	}
	rep, err := processSessions(ctx, s, cfg, campaign)
	if err != nil {
		return fmt.Errorf("embedding the restored chunks (the restore itself is done; retry with glyphoxa process --campaign %s): %w", campaign, err)
	}
	printf(e.stdout, "processed %d sessions into %d chunks for retrieval\n", rep.Sessions, rep.Chunks)
	return nil
}

// importProgress prints progress on standard error, at most once a second
// and only for files large enough to take a while.
type importProgress struct {
	w     io.Writer
	size  int64
	last  time.Time
	shown bool
}

func newImportProgress(w io.Writer, size int64) *importProgress {
	return &importProgress{w: w, size: size}
}

func (p *importProgress) report(what string) func(campaignfile.Progress) {
	return func(x campaignfile.Progress) {
		if p.size < 1<<20 || time.Since(p.last) < time.Second {
			return
		}
		p.last, p.shown = time.Now(), true
		pct := 0.0
		if x.Total > 0 {
			pct = 100 * float64(x.Bytes) / float64(x.Total)
		}
		printf(p.w, "\r%s: %3.0f%%, %d entities, %d relationships, %d transcript entries", what, pct, x.Entities, x.Relationships, x.Entries)
	}
}

func (p *importProgress) done() {
	if p.shown {
		printf(p.w, "\n")
	}
}
