package bot

import (
	"errors"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/memory"
)

// reply answers an interaction at once.
func (b *Bot) reply(i *discordgo.Interaction, ephemeral bool, content string, embeds ...*discordgo.MessageEmbed) {
	data := &discordgo.InteractionResponseData{Content: truncate(content, maxContent), Embeds: embeds,
		AllowedMentions: &discordgo.MessageAllowedMentions{}}
	if ephemeral {
		data.Flags = discordgo.MessageFlagsEphemeral
	}
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource, Data: data})
}

// refuse tells a member, privately, that a command is not theirs to use.
func (b *Bot) refuse(i *discordgo.Interaction, why string) { b.reply(i, true, "⛔ "+why) }

// deferReply acknowledges an interaction whose answer takes time; finish
// with finish (which edits the original response).
func (b *Bot) deferReply(i *discordgo.Interaction, ephemeral bool) {
	data := &discordgo.InteractionResponseData{}
	if ephemeral {
		data.Flags = discordgo.MessageFlagsEphemeral
	}
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource, Data: data})
}

func (b *Bot) respond(i *discordgo.Interaction, r *discordgo.InteractionResponse) {
	if err := b.sess.InteractionRespond(i, r); err != nil {
		b.log.Error("answering an interaction", "interaction", i.ID, "err", err)
	}
}

// finish completes a deferred reply: text split across messages of at most
// 2,000 characters and embeds packed within Discord's limits; the first part
// edits the original response and the rest follow up.
func (b *Bot) finish(i *discordgo.Interaction, ephemeral bool, text string, embeds []*discordgo.MessageEmbed, components []discordgo.MessageComponent) {
	parts := splitMessage(text, maxContent)
	packs := packEmbeds(embeds)
	type msg struct {
		content string
		embeds  []*discordgo.MessageEmbed
	}
	var msgs []msg
	for _, p := range parts {
		msgs = append(msgs, msg{content: p})
	}
	for k, e := range packs {
		if k == 0 && len(msgs) > 0 && len(msgs[len(msgs)-1].embeds) == 0 {
			msgs[len(msgs)-1].embeds = e
			continue
		}
		msgs = append(msgs, msg{embeds: e})
	}
	if len(msgs) == 0 {
		msgs = []msg{{content: "Done."}}
	}
	for k, m := range msgs {
		var comps []discordgo.MessageComponent
		if k == len(msgs)-1 {
			comps = components
		}
		if k == 0 {
			content, es := m.content, m.embeds
			edit := &discordgo.WebhookEdit{Content: &content, Embeds: &es, AllowedMentions: &discordgo.MessageAllowedMentions{}}
			if comps != nil {
				edit.Components = &comps
			}
			if _, err := b.sess.InteractionResponseEdit(i, edit); err != nil {
				b.log.Error("editing an interaction response", "interaction", i.ID, "err", err)
				return
			}
			continue
		}
		params := &discordgo.WebhookParams{Content: m.content, Embeds: m.embeds, Components: comps,
			AllowedMentions: &discordgo.MessageAllowedMentions{}}
		if ephemeral {
			params.Flags = discordgo.MessageFlagsEphemeral
		}
		if _, err := b.sess.FollowupMessageCreate(i, true, params); err != nil {
			b.log.Error("sending a follow-up message", "interaction", i.ID, "err", err)
			return
		}
	}
}

// finishErr completes a deferred reply with an error the user can act on.
func (b *Bot) finishErr(i *discordgo.Interaction, err error) {
	b.log.Warn("command failed", "interaction", i.ID, "err", err)
	b.finish(i, true, "⚠️ "+errText(err), nil, nil)
}

// Replies for the errors a member cannot act on by changing the command.
const (
	msgUnavailable = "The campaign's memory is unavailable right now: its database cannot be reached. " +
		"Try again in a minute; a running session keeps every line and stores it when the database is back."
	msgForbidden = "That part of the campaign's memory is for the DM only."
)

// errText is what a member reads for err: a plain sentence for an outage
// (memory.ErrUnavailable, never the driver's message) or a refusal
// (memory.ErrForbidden), the error itself otherwise, which names the
// problem with the member's input.
func errText(err error) string {
	switch {
	case errors.Is(err, memory.ErrUnavailable):
		return msgUnavailable
	case errors.Is(err, memory.ErrForbidden):
		return msgForbidden
	}
	return err.Error()
}
