package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

func cmdInspect(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("inspect", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	s, _, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := openCampaign(ctx, s, *campaign)
	if err != nil {
		return err
	}
	in, err := c.Inspect(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(in)
	}
	printInspection(e, in)
	return nil
}

func printInspection(e *env, in postgres.Inspection) {
	w := tabwriter.NewWriter(e.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintf(w, "Campaign %s\n\n", in.Campaign)
	fmt.Fprintf(w, "Sessions (L1)\tentries\tstarted\tended\n")
	total := 0
	for _, s := range in.Sessions {
		ended := "running"
		if !s.EndedAt.IsZero() {
			ended = s.EndedAt.Format("2006-01-02 15:04")
		}
		fmt.Fprintf(w, "  %s\t%d\t%s\t%s\n", s.ID, s.Entries, s.StartedAt.Format("2006-01-02 15:04"), ended)
		total += s.Entries
	}
	fmt.Fprintf(w, "  total\t%d\t\t\n\n", total)
	coverage := 0.0
	if in.Chunks > 0 {
		coverage = 100 * float64(in.Embedded) / float64(in.Chunks)
	}
	fmt.Fprintf(w, "Chunks (L2)\t%d\t%d embedded (%.0f%%)\n\n", in.Chunks, in.Embedded, coverage)
	fmt.Fprintf(w, "Entities (L3)\tcount\n")
	for _, t := range in.EntityTypes {
		fmt.Fprintf(w, "  %s\t%d\n", t.Type, t.Count)
	}
	var statuses []string
	for _, st := range []memory.FactStatus{memory.StatusActive, memory.StatusPending, memory.StatusRejected, memory.StatusRetired} {
		statuses = append(statuses, fmt.Sprintf("%d %s", in.Facts[st], st))
	}
	fmt.Fprintf(w, "\nFacts\t%s\n", strings.Join(statuses, ", "))
	fmt.Fprintf(w, "Conflicts\t%d open\n", in.OpenConflicts)
	w.Flush()
	if len(in.Pending) > 0 {
		fmt.Fprintf(e.stdout, "\nPending DM review (oldest first):\n")
		for _, r := range in.Pending {
			fmt.Fprintf(e.stdout, "  #%d  %s -%s-> %s  (confidence %.2f, %s, session %s)\n", r.ID, r.SourceID, r.Type, r.TargetID,
				r.Provenance.Confidence, r.Provenance.Source, orDash(r.Provenance.SessionID))
		}
	}
	if in.OpenConflicts > 0 {
		fmt.Fprintf(e.stdout, "\nOpen conflicts: new facts that conflict with canon wait for the DM; /memory conflicts in Discord settles them.\n")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
