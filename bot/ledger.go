package bot

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
)

// maxLedgerShown bounds the entries /ledger lists (the newest).
const maxLedgerShown = 40

// ledgerCommand lists the campaign's promises, debts and handovers: for a
// player the ones the DM confirmed, for the DM those waiting for review
// too. Optionally only those naming one person.
func (b *Bot) ledgerCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	if !b.deferReply(i, true) {
		return
	}
	who := c.str("who")
	if strings.IndexFunc(who, unicode.IsControl) >= 0 {
		// Not echoed raw: a NUL or an escape in the reply is no name.
		b.finishErr(i, fmt.Errorf("who: %s holds a control character; name a character as it is written", memory.Quote(who, 60)))
		return
	}
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	items, err := ledger.List(ctx, camp.Graph())
	if err != nil {
		b.finishErr(i, err)
		return
	}
	if who != "" {
		kept := items[:0]
		for _, it := range items {
			if strings.EqualFold(it.From, who) || strings.EqualFold(it.To, who) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	b.finish(i, true, ledgerText(items, who, camp.DM()), nil, nil)
}

// ledgerText is the ledger as /ledger shows it, newest last.
func ledgerText(items []ledger.Item, who string, dm bool) string {
	if len(items) == 0 {
		switch {
		case who != "":
			return fmt.Sprintf("No promise, debt or handover names %s.", who)
		case dm:
			return "No promises, debts or handovers yet: they are found when a session is processed, after `/session end`."
		default:
			return "No promises, debts or handovers yet (the DM confirms each before players see it)."
		}
	}
	var out strings.Builder
	out.WriteString("**Ledger**")
	if who != "" {
		out.WriteString(" of " + who)
	}
	if len(items) > maxLedgerShown {
		fmt.Fprintf(&out, " (the newest %d of %d)", maxLedgerShown, len(items))
		items = items[len(items)-maxLedgerShown:]
	}
	out.WriteString("\n")
	for _, it := range items {
		out.WriteString(it.Text(true) + "\n")
	}
	return out.String()
}
