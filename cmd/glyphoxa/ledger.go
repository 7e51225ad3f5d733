package main

import (
	"context"
	"encoding/json"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
)

// cmdLedger prints a campaign's promises, debts and handovers.
func cmdLedger(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("ledger", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	asJSON := fs.Bool("json", false, "print a JSON array of {fact_id, kind, from, to, what, due, quote, said_at, session, status, now_with}")
	as := fs.String("as", "dm", "read as dm (entries waiting for review too) or player (canon only)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	var v memory.Viewer
	switch *as {
	case "dm":
		v = memory.DMViewer()
	case "player":
		v = memory.PlayerViewer()
	default:
		return usagef("--as must be dm or player, got %q", *as)
	}
	store, _, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	camp, err := openCampaignAs(ctx, store, *campaign, v)
	if err != nil {
		return err
	}
	items, err := ledger.List(ctx, camp.Graph())
	if err != nil {
		return err
	}
	if *asJSON {
		if items == nil {
			items = []ledger.Item{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(items)
	}
	if len(items) == 0 {
		printf(e.stdout, "no promises, debts or handovers in campaign %q yet (they are found when a session played at the table is processed, "+
			"after /session end or glyphoxa demo; in imported sessions with an LLM: glyphoxa process --campaign %s --extract)\n", *campaign, *campaign)
		return nil
	}
	for _, it := range items {
		printf(e.stdout, "%s\n", it.Text(false))
	}
	return nil
}
