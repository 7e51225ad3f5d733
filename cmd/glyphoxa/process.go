package main

import (
	"context"
)

// cmdProcess chunks and embeds a campaign's sessions, replacing earlier
// chunks.
func cmdProcess(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("process", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	session := fs.String("session", "", "process only this session (default: all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := checkCampaign(ctx, store, *campaign); err != nil {
		return err
	}
	var sessions []string
	if *session != "" {
		camp, err := store.Campaign(ctx, *campaign)
		if err != nil {
			return err
		}
		if _, err := camp.Sessions().Session(ctx, *session); err != nil {
			return err
		}
		sessions = append(sessions, *session)
	}
	rep, err := processSessions(ctx, store, cfg, *campaign, sessions...)
	if err != nil {
		return err
	}
	printf(e.stdout, "processed campaign %q: %d sessions, %d chunks (%d old chunks removed)\n",
		*campaign, rep.Sessions, rep.Chunks, rep.Removed)
	return nil
}
