package bot

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
)

// Live continuity: when a line contradicts canon, the voice session raises
// a card (lifecycle/continuity) and the bot sends it to each DM listed in
// the guild's DMUserIDs as a direct message: an ephemeral reply needs an
// interaction to answer, and a line said in voice is none, so a direct
// message is the only place on Discord that only the DM sees. Its buttons,
// Keep canon and Retcon, have custom ids "cont:<k|r>:<guild id>:<card
// id>": a direct message carries no guild, so the button names it, and
// only a user DMUserIDs lists may press it (a direct message has no
// roles or permissions to read). DMs known only by role or by the
// Administrator permission see the cards on the console's Live page.

// contPrefix starts the custom id of a continuity card's buttons.
const contPrefix = "cont"

// ContinuityCards is an optional capability of VoiceSessions: the board of
// the continuity cards its sessions raised.
type ContinuityCards interface {
	ContinuityCards() *continuity.Board
}

// postCard sends card to the guild's DMs; it reports whether one got it.
func (b *Bot) postCard(g Guild, card continuity.Card) bool {
	if len(g.DMUserIDs) == 0 {
		b.log.Warn("a continuity card has no DM to go to on Discord (discord.guilds[].dm_user_ids is empty); it shows on the console's Live page",
			"guild", g.ID, "card", card.ID)
		return false
	}
	msg := &discordgo.MessageSend{Embeds: []*discordgo.MessageEmbed{b.cardEmbed(card)}, Components: cardButtons(g.ID, card),
		AllowedMentions: &discordgo.MessageAllowedMentions{}}
	sent := false
	for _, uid := range g.DMUserIDs {
		ch, err := b.sess.UserChannelCreate(uid)
		if err == nil {
			_, err = b.sess.ChannelMessageSendComplex(ch.ID, msg)
		}
		if err != nil {
			b.log.Warn("sending a continuity card to a DM", "guild", g.ID, "user", uid, "card", card.ID, "err", err)
			continue
		}
		sent = true
	}
	return sent
}

// cardScanPages bounds the pages of 100 direct messages unpostCards reads
// per DM: cards older than that many messages stay.
const cardScanPages = 10

// unpostCards deletes the direct messages that carry the cards ids
// (quoting a player who asked to be forgotten) from each DM's direct
// messages with the bot; it reports how many it deleted. A card message is
// known by its footer ("card <id> · <kind>"), so a card posted by another
// process, or by this one before a restart, is found too.
func (b *Bot) unpostCards(g Guild, ids []string) int {
	if len(ids) == 0 || len(g.DMUserIDs) == 0 {
		return 0
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	n := 0
	for _, uid := range g.DMUserIDs {
		ch, err := b.sess.UserChannelCreate(uid)
		if err != nil {
			b.log.Warn("opening a DM's direct messages to take down the cards of a forgotten player", "guild", g.ID, "user", uid, "err", err)
			continue
		}
		before := ""
		for range cardScanPages {
			msgs, err := b.sess.ChannelMessages(ch.ID, 100, before, "", "")
			if err != nil {
				b.log.Warn("reading a DM's direct messages to take down the cards of a forgotten player", "guild", g.ID, "user", uid, "err", err)
				break
			}
			for _, m := range msgs {
				if !want[postedCard(m)] {
					continue
				}
				if err := b.sess.ChannelMessageDelete(ch.ID, m.ID); err != nil {
					b.log.Warn("deleting the card of a forgotten player from a DM's direct messages", "guild", g.ID, "user", uid,
						"message", m.ID, "err", err)
					continue
				}
				n++
			}
			if len(msgs) < 100 {
				break
			}
			before = msgs[len(msgs)-1].ID
		}
	}
	if n > 0 {
		b.log.Info("continuity cards quoting a forgotten player were deleted from the DMs' direct messages", "guild", g.ID, "messages", n)
	}
	return n
}

// postedCard is the id of the card message m carries ("" if none).
func postedCard(m *discordgo.Message) string {
	if m == nil || (m.Author != nil && !m.Author.Bot) {
		return ""
	}
	for _, e := range m.Embeds {
		if e == nil || e.Footer == nil {
			continue
		}
		if rest, ok := strings.CutPrefix(e.Footer.Text, "card "); ok {
			id, _, _ := strings.Cut(rest, " ")
			return id
		}
	}
	return ""
}

// cardEmbed shows a card: the claim, the canon fact, the quoted line.
func (b *Bot) cardEmbed(c continuity.Card) *discordgo.MessageEmbed {
	canon := c.Canon.Text
	if c.Canon.ID != 0 {
		canon = fmt.Sprintf("#%d  %s", c.Canon.ID, c.Canon.Text)
	}
	if c.Canon.Secret {
		canon += "  🔒 secret"
	}
	quote := fmt.Sprintf("> %s\n— %s, session %s, %s", truncate(oneLine(c.Line.Text), evidenceLen), c.Line.Speaker,
		c.Line.SessionID, c.Line.At.UTC().Format("15:04:05 UTC"))
	if u := b.lineURL(c); u != "" {
		quote += fmt.Sprintf(" · [in the transcript](%s)", u)
	}
	desc := "A line at the table contradicts canon. **Keep canon** marks the line non-canon; **Retcon** makes its claim canon in place of the fact."
	if c.Unsaid {
		desc = "An NPC's reply contradicted what it knows of canon: that sentence was not said. **Keep canon** settles the card; **Retcon** makes its claim canon in place of the fact."
	}
	e := &discordgo.MessageEmbed{
		Title:       truncate("⚠️ Continuity: "+c.Claim, 256),
		Description: desc,
		Color:       0xF0AD4E,
		Fields: []*discordgo.MessageEmbedField{
			{Name: "Canon", Value: canon},
			{Name: "The line", Value: quote},
		},
		Footer: &discordgo.MessageEmbedFooter{Text: "card " + c.ID + " · " + string(c.Kind)},
	}
	if c.Status != continuity.CardOpen {
		e.Fields = append(e.Fields, &discordgo.MessageEmbedField{Name: "Settled", Value: c.Status + ": " + c.Note})
	}
	clipEmbed(e)
	return e
}

// lineURL is the line on the console's session page, when the console's
// address is known.
func (b *Bot) lineURL(c continuity.Card) string {
	if b.cfg.ConsoleURL == "" || c.Line.SessionID == "" {
		return ""
	}
	return strings.TrimSuffix(b.cfg.ConsoleURL, "/") + "/sessions/" + url.PathEscape(c.Line.SessionID) + "?q=" +
		url.QueryEscape(truncate(c.Line.Text, 80))
}

// cardButtons are Keep canon and Retcon of an open card; none once settled.
func cardButtons(guildID string, c continuity.Card) []discordgo.MessageComponent {
	if c.Status != continuity.CardOpen {
		return []discordgo.MessageComponent{}
	}
	suffix := guildID + ":" + c.ID
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{Label: "Keep canon", Style: discordgo.PrimaryButton, CustomID: contPrefix + ":k:" + suffix},
		discordgo.Button{Label: "Retcon", Style: discordgo.DangerButton, CustomID: contPrefix + ":r:" + suffix},
	}}}
}

// continuityButton settles a card from its direct message (i has no
// guild) or from a guild channel.
func (b *Bot) continuityButton(ctx context.Context, i *discordgo.Interaction, rest string) {
	parts := strings.Split(rest, ":")
	if len(parts) != 3 || (parts[0] != "k" && parts[0] != "r") {
		b.reply(i, true, "This button has expired.")
		return
	}
	g, ok := b.guild(parts[1])
	if !ok || (i.GuildID != "" && i.GuildID != g.ID) {
		b.reply(i, true, "This button has expired.")
		return
	}
	u := user(i)
	dm := u != nil && slices.Contains(g.DMUserIDs, u.ID)
	if i.GuildID != "" {
		dm = isDM(g, i.Member)
	}
	if !dm {
		b.refuse(i, "Only the DM can settle a continuity card.")
		return
	}
	// Settling writes to the store: acknowledged first, it runs only if
	// Discord still takes the answer (see ack).
	if !b.ack(i, true) {
		return
	}
	camp, _, err := b.campaign(ctx, g.ID, memory.DMViewer())
	if err != nil {
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	// The card is settled in the store: a process that did not raise it
	// (another replica, or this one after a restart) settles it too.
	var card continuity.Card
	if cards, ok := b.deps.Voice.(ContinuityCards); ok {
		card, err = cards.ContinuityCards().Settle(ctx, camp, parts[2], parts[0] == "r", u.ID)
	} else {
		card, err = continuity.SettleStored(ctx, camp, parts[2], parts[0] == "r", u.ID)
	}
	if err != nil {
		b.log.Warn("settling a continuity card", "card", parts[2], "err", err)
		if card.ID == "" {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		// Already settled: show where it stands; an error of the write
		// leaves it open with its buttons, to be pressed again.
		b.updateCard(i, g, card, "⚠️ "+errText(err))
		return
	}
	b.updateCard(i, g, card, fmt.Sprintf("✅ Settled at %s: %s.", card.SettledAt.Format(time.TimeOnly+" UTC"), card.Note))
	// Keep canon took the line out of the chunks that quoted it (the
	// store deletes them): the session's other lines are chunked again,
	// after the answer (Discord waits 3 s for it).
	if card.Status == continuity.CardKept && !card.Unsaid {
		b.rebuildSessions(ctx, g, []string{card.Line.SessionID}) // failures are logged
	}
}

// updateCard replaces the card's message with where it stands.
func (b *Bot) updateCard(i *discordgo.Interaction, g Guild, c continuity.Card, note string) {
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: truncate(note, maxContent), Embeds: []*discordgo.MessageEmbed{b.cardEmbed(c)},
			Components: cardButtons(g.ID, c), AllowedMentions: &discordgo.MessageAllowedMentions{}}})
}
