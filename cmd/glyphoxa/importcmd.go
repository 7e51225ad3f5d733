package main

import (
	"context"
	"fmt"
	"os"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

func cmdImport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("import", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id (must match the file's campaign key, if given)")
	noProcess := fs.Bool("no-process", false, "do not chunk and embed the imported sessions (glyphoxa process does it later)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("expected one campaign file, got %d arguments", fs.NArg())
	}
	path := fs.Arg(0)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, path)
	if err != nil {
		return err
	}
	if *campaign != "" && *campaign != cf.Campaign {
		return usagef("--campaign %q does not match the file's campaign %q", *campaign, cf.Campaign)
	}
	s, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	var applied campaignfile.Applied
	err = s.InTx(ctx, cf.Campaign, func(c *postgres.Campaign) error {
		applied, err = cf.Apply(ctx, c.Sessions(), c.Graph())
		return err
	})
	if err != nil {
		return err
	}
	printf(e.stdout, "imported %s into campaign %q: %d entities, %d relationships, %d sessions, %d new transcript entries\n",
		path, cf.Campaign, applied.Entities, applied.Relationships, applied.Sessions, applied.NewEntries)
	if *noProcess || len(cf.Sessions) == 0 {
		return nil
	}
	sessions := make([]string, len(cf.Sessions))
	for i, ss := range cf.Sessions {
		sessions[i] = ss.ID
	}
	rep, err := processSessions(ctx, s, cfg, cf.Campaign, sessions...)
	if err != nil {
		return fmt.Errorf("processing the imported sessions (the import itself is done; retry with glyphoxa process --campaign %s): %w", cf.Campaign, err)
	}
	printf(e.stdout, "processed %d sessions into %d chunks for retrieval\n", rep.Sessions, rep.Chunks)
	return nil
}
