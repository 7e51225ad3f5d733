package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// Conflict review: a newly extracted fact that conflicts with a canon one
// never overwrites it; the pair waits for the DM, one conflict per page,
// with buttons to keep the new fact or the old one. Button custom ids are
// "conf:<action>:<conflict id>:<page>", action n (keep new), o (keep old)
// or p (show page).

// evidenceLen bounds a quoted line of evidence on a conflict page.
const evidenceLen = 300

// conflictPage renders the open conflict at index page (clamped) with the
// buttons that settle it.
func (b *Bot) conflictPage(ctx context.Context, camp *memaccess.Campaign, page int) (string, *discordgo.MessageEmbed, []discordgo.MessageComponent, error) {
	g := camp.Graph()
	open, err := g.Conflicts(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	if len(open) == 0 {
		return "✅ No conflicting facts are waiting for you.", nil, []discordgo.MessageComponent{}, nil
	}
	page = min(max(page, 0), len(open)-1)
	c := open[page]
	n := names(ctx, g, c.OldFact.SourceID, c.OldFact.TargetID, c.NewFact.SourceID, c.NewFact.TargetID)
	label := func(f memory.Relationship) string {
		return fmt.Sprintf("#%d  %s —%s→ %s", f.ID, n[f.SourceID], f.Type, n[f.TargetID])
	}
	embed := &discordgo.MessageEmbed{
		Title:       fmt.Sprintf("Conflicting facts (%d open)", len(open)),
		Description: conflictExplanation(c),
		Color:       0xD9534F,
		Fields: []*discordgo.MessageEmbedField{
			{Name: "Old · " + label(c.OldFact), Value: b.factDetail(ctx, g, c.OldFact)},
			{Name: "New · " + label(c.NewFact), Value: b.factDetail(ctx, g, c.NewFact)},
		},
		Footer: &discordgo.MessageEmbedFooter{Text: fmt.Sprintf("Conflict %d of %d · queued %s",
			page+1, len(open), c.CreatedAt.UTC().Format("2006-01-02 15:04 UTC"))},
	}
	clipEmbed(embed)
	suffix := fmt.Sprintf("%d:%d", c.ID, page)
	comps := []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{Label: "Keep new", Style: discordgo.SuccessButton, CustomID: "conf:n:" + suffix},
		discordgo.Button{Label: "Keep old", Style: discordgo.PrimaryButton, CustomID: "conf:o:" + suffix},
	}}}
	if len(open) > 1 {
		comps = append(comps, discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "◀ Previous", Style: discordgo.SecondaryButton, Disabled: page == 0,
				CustomID: fmt.Sprintf("conf:p:0:%d", page-1)},
			discordgo.Button{Label: "Next ▶", Style: discordgo.SecondaryButton, Disabled: page == len(open)-1,
				CustomID: fmt.Sprintf("conf:p:0:%d", page+1)},
		}})
	}
	return "", embed, comps, nil
}

// conflictExplanation says what the conflict is, where each fact stands
// now and what each button does.
func conflictExplanation(c memory.Conflict) string {
	var b strings.Builder
	if c.Kind == memory.LinkSupersedes {
		b.WriteString("🔁 **supersedes**: a later session says otherwise. ")
	} else {
		b.WriteString("⚔️ **contradicts**: both cannot hold. ")
	}
	b.WriteString(ConflictStanding(c))
	b.WriteString(" **Keep new** confirms the new fact")
	if c.OldFact.Status == memory.StatusActive {
		b.WriteString(" and retires the old one")
	}
	b.WriteString("; **Keep old** rejects the new fact")
	if c.OldFact.Status == memory.StatusRetired {
		b.WriteString(" and makes the old one canon again")
	}
	b.WriteString(". Confirming or rejecting the new fact in the review list settles this conflict the same way.")
	return b.String()
}

// ConflictStanding says where each fact of a conflict stands now, read
// from their statuses and never assumed: the one text behind the Discord
// card and the console's conflict card.
func ConflictStanding(c memory.Conflict) string {
	var b strings.Builder
	switch c.OldFact.Status {
	case memory.StatusRetired:
		until := "when the new fact was recorded"
		if s := c.OldFact.ValidUntilSession; s != "" {
			until = "session " + s
		}
		b.WriteString("The old fact was retired as of " + until + "; ")
	case memory.StatusActive:
		b.WriteString("The old fact is still canon; ")
	default:
		b.WriteString("The old fact is " + string(c.OldFact.Status) + "; ")
	}
	switch c.NewFact.Status {
	case memory.StatusActive:
		b.WriteString("the new one is canon.")
	case memory.StatusPending:
		b.WriteString("the new one waits for you.")
	default:
		b.WriteString("the new one is " + string(c.NewFact.Status) + ".")
	}
	return b.String()
}

// factDetail is a fact's provenance, its standing, and its evidence: the
// extractor's quoted evidence and the first transcript line it rests on.
func (b *Bot) factDetail(ctx context.Context, g *memaccess.Graph, f memory.Relationship) string {
	lines := []string{provenanceLine(f)}
	if f.Provenance.Timestamp.IsZero() && !f.CreatedAt.IsZero() {
		lines[0] += " · recorded " + f.CreatedAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	state := "status: " + string(f.Status)
	if f.ValidUntilSession != "" {
		state += " (held until session " + f.ValidUntilSession + ")"
	}
	if f.Provenance.DMConfirmed {
		state += " · DM-confirmed"
	}
	lines = append(lines, state)
	if ev, ok := f.Attributes["evidence"].(string); ok && strings.TrimSpace(ev) != "" {
		lines = append(lines, "evidence: “"+truncate(oneLine(ev), evidenceLen)+"”")
	}
	if es, err := g.Evidence(ctx, f.ID); err == nil && len(es) > 0 {
		e := es[0]
		lines = append(lines, fmt.Sprintf("> %s — %s, %s %s", truncate(oneLine(e.Text), evidenceLen), e.SpeakerName,
			e.SessionID, e.At.UTC().Format("15:04")))
	}
	return strings.Join(lines, "\n")
}

// oneLine folds line breaks so a quote stays one line of an embed field.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// conflictButton handles Keep new / Keep old / page buttons.
func (b *Bot) conflictButton(ctx context.Context, i *discordgo.Interaction, g Guild, rest string) {
	parts := strings.SplitN(rest, ":", 3)
	if len(parts) != 3 {
		b.reply(i, true, "This button has expired.")
		return
	}
	id, err1 := strconv.ParseInt(parts[1], 10, 64)
	page, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil {
		b.reply(i, true, "This button has expired.")
		return
	}
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	var note string
	switch parts[0] {
	case "n", "o":
		// Settling changes the campaign's memory: acknowledged first, it
		// runs only if Discord still takes the answer (see ack).
		if !b.ack(i, true) {
			return
		}
		keepNew := parts[0] == "n"
		c, err := camp.Graph().ResolveConflict(ctx, id, keepNew)
		if err != nil {
			// Already settled (another DM, an old message) or gone: show
			// the fresh page with the reason.
			b.log.Warn("settling a conflict", "conflict", id, "err", err)
			note = "⚠️ " + errText(err)
			break
		}
		graph := camp.Graph()
		if keepNew {
			note = fmt.Sprintf("✅ Kept the new fact %s; the old one, %s, is %s.", b.describeFact(ctx, graph, c.NewFact),
				b.describeFact(ctx, graph, c.OldFact), standing(c.OldFact))
		} else {
			note = fmt.Sprintf("↩️ Kept the old fact %s; the new one, %s, is %s.", b.describeFact(ctx, graph, c.OldFact),
				b.describeFact(ctx, graph, c.NewFact), standing(c.NewFact))
		}
	case "p":
	default:
		b.reply(i, true, "This button has expired.")
		return
	}
	b.updateConflicts(ctx, i, camp, page, note)
}

// standing says where a settled fact now stands.
func standing(f memory.Relationship) string {
	switch {
	case f.Status == memory.StatusRetired && f.ValidUntilSession != "":
		return "retired as of session " + f.ValidUntilSession
	case f.Status == memory.StatusActive:
		return "canon"
	}
	return string(f.Status)
}

// updateConflicts replaces the message the button was on with a fresh page.
func (b *Bot) updateConflicts(ctx context.Context, i *discordgo.Interaction, camp *memaccess.Campaign, page int, note string) {
	content, embed, comps, err := b.conflictPage(ctx, camp, page)
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	if note != "" {
		content = strings.TrimSpace(note + "\n" + content)
	}
	es := embeds(embed)
	if es == nil {
		es = []*discordgo.MessageEmbed{}
	}
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: truncate(content, maxContent), Embeds: es, Components: comps,
			AllowedMentions: &discordgo.MessageAllowedMentions{}}})
}
