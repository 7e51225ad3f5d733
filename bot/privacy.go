package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/memory"
)

func (b *Bot) privacyCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	u := user(i)
	switch c.path {
	case "privacy opt-out", "privacy opt-in":
		if !b.deferReply(i, true) {
			return
		}
		camp, err := b.campaignFor(ctx, g, i)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		if c.path == "privacy opt-out" {
			if err := camp.OptOut(ctx, u.ID); err != nil {
				b.finishErr(i, err)
				return
			}
			b.finish(i, true, "🔇 From now on glyphoxa neither transcribes nor stores anything you say in this campaign. "+
				"What was stored before stays; `/privacy forget-me` deletes it. `/privacy opt-in` undoes this.", nil, nil)
			return
		}
		if err := camp.OptIn(ctx, u.ID); err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, "🎙️ glyphoxa will transcribe you again from the next thing you say.", nil, nil)
	case "privacy forget-me":
		b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral,
				Content: "This deletes every line you said in this campaign, the memory chunks that contain your words, " +
					"and the facts that rest only on what you said. It cannot be undone. Delete?",
				Components: []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
					discordgo.Button{Label: "Delete my data", Style: discordgo.DangerButton, CustomID: "forgetme:yes:" + u.ID},
					discordgo.Button{Label: "Keep it", Style: discordgo.SecondaryButton, CustomID: "forgetme:no:" + u.ID},
				}}}}})
	}
}

// forgetMeButton deletes the presser's data after they confirmed. Only the
// user who asked can press it.
func (b *Bot) forgetMeButton(ctx context.Context, i *discordgo.Interaction, g Guild, rest string) {
	answer, owner, _ := strings.Cut(rest, ":")
	u := user(i)
	if u == nil || u.ID != owner {
		b.refuse(i, "Only the person who asked can answer this.")
		return
	}
	update := func(text string) {
		b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
			Data: &discordgo.InteractionResponseData{Content: text, Components: []discordgo.MessageComponent{}}})
	}
	if answer != "yes" {
		update("Nothing was deleted.")
		return
	}
	// Deleting is acknowledged first: a press Discord no longer takes
	// (a late process, see ack) deletes nothing; the member presses again.
	if !b.ack(i, true) {
		return
	}
	// The presser's own data, through the presser's own handle.
	camp, err := b.campaignFor(ctx, g, i)
	if err != nil {
		update("⚠️ Nothing was deleted: " + errText(err))
		return
	}
	var rep memory.ForgetReport
	erase := func(ctx context.Context) error {
		var err error
		rep, err = camp.ForgetSpeaker(ctx, u.ID)
		return err
	}
	var live memory.ForgetReport
	running := false
	if b.deps.Voice != nil {
		live, running, err = b.deps.Voice.Forget(ctx, g.ID, u.ID, erase)
	}
	if !running && err == nil {
		if sf, ok := b.deps.Voice.(SpoolForgetter); ok {
			live, err = sf.ForgetSpooled(ctx, g.Campaign, u.ID, erase)
		} else {
			err = erase(ctx)
		}
	}
	if err != nil {
		msg := "⚠️ Nothing was deleted: " + errText(err)
		if live.Spooled > 0 {
			msg = fmt.Sprintf("⚠️ %d lines you said were taken out of the outage spool, but deleting what memory holds failed: %s", live.Spooled, errText(err))
		}
		update(msg)
		return
	}
	// The store's continuity cards quoting the player went with the rest;
	// this process's board (the table's live report) drops its copies,
	// and the cards posted to the DMs' direct messages are taken down.
	cards := rep.Cards
	if cc, ok := b.deps.Voice.(ContinuityCards); ok && cc.ContinuityCards() != nil {
		cards = append(cards, cc.ContinuityCards().ForgetSpeaker(g.Campaign, u.ID)...)
	}
	// After the answer (Discord waits 3 s for it): reading and deleting
	// direct messages is a few REST calls per DM.
	defer b.unpostCards(g, cards)
	var msg string
	if live.Deferred {
		msg = "🗑️ The memory database is unreachable right now: deleting the lines you said, the memory chunks containing your words " +
			"and the facts that rested only on them is queued, and runs as soon as it is back, before anything recorded after this."
	} else {
		// rep.Facts counts only the facts the member could read: the
		// reply says nothing of the DM's secrets that went with the lines.
		msg = fmt.Sprintf("🗑️ Deleted %d lines you said, %d memory chunks containing your words, and %d facts that rested only on them.",
			rep.Entries, rep.Chunks, rep.Facts)
		if rep.HiddenFacts > 0 {
			b.log.Info("a forget-me deleted facts the member could not read", "guild", g.ID, "campaign", g.Campaign,
				"hidden_facts", rep.HiddenFacts)
		}
	}
	msg += fmt.Sprintf(" %d lines of yours waiting in the outage spool (not yet stored) were deleted from it.", live.Spooled)
	if running {
		msg += fmt.Sprintf(" The session running now no longer holds them either: %d lines left its live conversation", live.Messages)
		if live.Summaries > 0 {
			msg += fmt.Sprintf(" and %d summaries were rewritten without them", live.Summaries)
		}
		msg += "."
	}
	if failed := b.rebuildSessions(ctx, g, rep.Sessions); len(failed) > 0 {
		msg += fmt.Sprintf("\n⚠️ Rebuilding the memory of sessions %s failed; the DM can run `glyphoxa process`.", strings.Join(failed, ", "))
	}
	update(msg)
}

// forgottenLate finishes a forget-me that waited in the outage spool
// (StartRequest.Forgotten): the deleted continuity cards leave the DMs'
// direct messages, wherever they were raised, and the sessions whose
// chunks held the player's words are rebuilt.
func (b *Bot) forgottenLate(g Guild, rep memory.ForgetReport) {
	b.unpostCards(g, rep.Cards)
	b.rebuildSessions(b.ctx, g, rep.Sessions)
}

// rebuildSessions rebuilds the memory of the sessions a forget-me took
// words out of (Deps.Reprocess; nothing without it) and returns those it
// could not rebuild, each logged.
func (b *Bot) rebuildSessions(ctx context.Context, g Guild, sessions []string) (failed []string) {
	if b.deps.Reprocess == nil {
		return nil
	}
	for _, s := range sessions {
		if err := b.deps.Reprocess(ctx, g.Campaign, s); err != nil {
			b.log.Warn("rebuilding a session's memory after a forget-me failed; the DM can run glyphoxa process",
				"guild", g.ID, "campaign", g.Campaign, "session", s, "err", err)
			failed = append(failed, s)
		}
	}
	return failed
}
