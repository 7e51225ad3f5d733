package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// factList lists an entity's facts in force now, or those that held in a
// session or at a date, with when each started and stopped holding.
func (b *Bot) factList(ctx context.Context, g *memaccess.Graph, ref, asOf string) (string, error) {
	e, err := resolveEntity(ctx, g, ref)
	if err != nil {
		return "", err
	}
	var rels []memory.Relationship
	head := fmt.Sprintf("**%s** now", e.Name)
	if asOf != "" {
		var label string
		rels, label, err = g.FactsAsOfRef(ctx, e.ID, asOf)
		head = fmt.Sprintf("**%s** as of %s", e.Name, label)
	} else {
		rels, err = g.Relationships(ctx, e.ID, memory.TraversalOpts{})
	}
	if err != nil {
		return "", err
	}
	if len(rels) == 0 {
		return head + ": no facts.", nil
	}
	var ids []string
	for _, r := range rels {
		ids = append(ids, r.SourceID, r.TargetID)
	}
	n := names(ctx, g, ids...)
	lines := []string{head + ":"}
	for _, r := range rels {
		line := fmt.Sprintf("#%d %s —%s→ %s", r.ID, n[r.SourceID], r.Type, n[r.TargetID])
		if s := r.Provenance.SessionID; s != "" {
			line += " (since session " + s
		} else {
			line += " (outside play"
		}
		if r.ValidUntilSession != "" {
			line += ", until session " + r.ValidUntilSession
		} else if r.Status == memory.StatusRetired {
			line += ", since retired"
		}
		lines = append(lines, line+")")
	}
	return truncate(strings.Join(lines, "\n"), 1900), nil
}

// changes says what changed in the campaign's memory since a session
// ended (default: the last ended session).
func (b *Bot) changes(ctx context.Context, camp *memaccess.Campaign, since string) (string, error) {
	ch, err := camp.ChangesSinceSession(ctx, since)
	if err != nil {
		return "", err
	}
	head := "Since the end of session " + ch.Since
	if ch.Since == "" {
		head = "Since the campaign began"
	}
	if len(ch.Entities)+len(ch.Facts)+len(ch.Retired)+ch.Proposals+ch.Pending+ch.Conflicts == 0 {
		return head + ": nothing changed.", nil
	}
	lines := []string{head + ":"}
	if len(ch.Entities) > 0 {
		lines = append(lines, "**New or changed:** "+strings.Join(ch.Entities, ", "))
	}
	for _, f := range ch.Facts {
		lines = append(lines, fmt.Sprintf("➕ #%d %s —%s→ %s", f.ID, f.SourceName, f.Type, f.TargetName))
	}
	for _, f := range ch.Retired {
		lines = append(lines, fmt.Sprintf("➖ #%d %s —%s→ %s (no longer holds)", f.ID, f.SourceName, f.Type, f.TargetName))
	}
	if ch.Pending > 0 {
		lines = append(lines, fmt.Sprintf("%d facts wait for your review (/memory pending)", ch.Pending))
	}
	if ch.Conflicts > 0 {
		lines = append(lines, fmt.Sprintf("%d conflicts with canon (/memory conflicts)", ch.Conflicts))
	}
	if ch.Proposals > 0 {
		lines = append(lines, fmt.Sprintf("%d proposals from agents (MCP resolve_proposal)", ch.Proposals))
	}
	return truncate(strings.Join(lines, "\n"), 1900), nil
}

// FactsAsOf resolves ref (an entity's id, name or alias) and returns its
// facts as they held at asOf, a session id, a date or an in-world date (see
// [memaccess.Graph]'s FactsAsOfRef), with how to say the moment: what the
// Discord as_of option and the console's "As of" page show.
func FactsAsOf(ctx context.Context, g *memaccess.Graph, ref, asOf string) (memory.Entity, string, []memory.Relationship, error) {
	e, err := resolveEntity(ctx, g, ref)
	if err != nil {
		return memory.Entity{}, "", nil, err
	}
	facts, label, err := g.FactsAsOfRef(ctx, e.ID, asOf)
	return e, label, facts, err
}
