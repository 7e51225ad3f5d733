package bot

import (
	"errors"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/memory"
)

// reply answers an interaction: at once, or, once the interaction is
// acknowledged (ack, deferReply), by editing the acknowledged response.
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
// with finish (which edits the original response). It reports whether
// Discord accepted the acknowledgement: a handler acts only if it did
// (see ack).
func (b *Bot) deferReply(i *discordgo.Interaction, ephemeral bool) bool {
	data := &discordgo.InteractionResponseData{}
	if ephemeral {
		data.Flags = discordgo.MessageFlagsEphemeral
	}
	return b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource, Data: data})
}

// ack acknowledges an interaction before its handler acts, and reports
// whether Discord accepted the acknowledgement. Discord takes an
// interaction's initial response within 3 s of the member's click; a
// process that was stopped (SIGSTOP, a VM pause, a lost lease) and woke
// with the interaction buffered, or that could not reach Discord, is
// refused (HTTP 404, code 10062 "Unknown interaction"), and the member
// has already seen "The application did not respond" and may retry. A
// refused or failed acknowledgement means: act on nothing. The decision
// rests on Discord's answer, not on comparing clocks.
//
// A command acknowledges with a deferred ephemeral reply; a button or a
// form submitted from a message (update) with a deferred update of that
// message. After ack, reply and respond edit the acknowledged response
// (see followOn).
func (b *Bot) ack(i *discordgo.Interaction, update bool) bool {
	if update {
		return b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	}
	return b.deferReply(i, true)
}

// acked is how an interaction was acknowledged.
type acked struct {
	typ       discordgo.InteractionResponseType
	ephemeral bool
}

// respond sends an interaction's response and reports whether Discord took
// it. The first response is the acknowledgement; a refused one is logged
// once, at Warn, with the interaction's name and id. Once acknowledged,
// responses edit the acknowledged message (followOn).
func (b *Bot) respond(i *discordgo.Interaction, r *discordgo.InteractionResponse) bool {
	if a, ok := b.acks.Load(i.ID); ok {
		return b.followOn(i, a.(acked), r)
	}
	if err := b.sess.InteractionRespond(i, r); err != nil {
		b.log.Warn("Discord refused the acknowledgement of an interaction (late or unreachable): nothing is done",
			"command", interactionName(i), "interaction", i.ID, "err", err)
		return false
	}
	if r.Type == discordgo.InteractionResponseDeferredChannelMessageWithSource || r.Type == discordgo.InteractionResponseDeferredMessageUpdate {
		b.acks.Store(i.ID, acked{typ: r.Type, ephemeral: r.Data != nil && r.Data.Flags&discordgo.MessageFlagsEphemeral != 0})
	}
	return true
}

// followOn completes an acknowledged interaction with r: a message edits
// the deferred reply (or, after a deferred update, follows up privately);
// an update edits the message the button was on.
func (b *Bot) followOn(i *discordgo.Interaction, a acked, r *discordgo.InteractionResponse) bool {
	var data discordgo.InteractionResponseData
	if r.Data != nil {
		data = *r.Data
	}
	switch r.Type {
	case discordgo.InteractionResponseDeferredChannelMessageWithSource, discordgo.InteractionResponseDeferredMessageUpdate:
		return true // acknowledged already
	case discordgo.InteractionResponseChannelMessageWithSource:
		if a.typ == discordgo.InteractionResponseDeferredChannelMessageWithSource {
			return b.finish(i, a.ephemeral, data.Content, data.Embeds, data.Components)
		}
		params := &discordgo.WebhookParams{Content: data.Content, Embeds: data.Embeds, Components: data.Components,
			AllowedMentions: &discordgo.MessageAllowedMentions{}, Flags: data.Flags}
		if _, err := b.sess.FollowupMessageCreate(i, true, params); err != nil {
			b.log.Error("sending a follow-up message", "interaction", i.ID, "err", err)
			return false
		}
		return true
	case discordgo.InteractionResponseUpdateMessage:
		content := data.Content
		edit := &discordgo.WebhookEdit{Content: &content, AllowedMentions: &discordgo.MessageAllowedMentions{}}
		if data.Embeds != nil {
			edit.Embeds = &data.Embeds
		}
		if data.Components != nil {
			edit.Components = &data.Components
		}
		if _, err := b.sess.InteractionResponseEdit(i, edit); err != nil {
			b.log.Error("editing an interaction response", "interaction", i.ID, "err", err)
			return false
		}
		return true
	}
	b.log.Error("a response of this type cannot follow an acknowledgement", "interaction", i.ID, "type", r.Type)
	return false
}

// interactionName names an interaction for the log: a command's path, or
// a component's or form's kind (the custom id's first field, which names
// no member and no secret).
func interactionName(i *discordgo.Interaction) string {
	switch i.Type {
	case discordgo.InteractionApplicationCommand, discordgo.InteractionApplicationCommandAutocomplete:
		return "/" + parseCommand(i.ApplicationCommandData()).path
	case discordgo.InteractionMessageComponent:
		kind, _, _ := strings.Cut(i.MessageComponentData().CustomID, ":")
		return "button " + kind
	case discordgo.InteractionModalSubmit:
		kind, _, _ := strings.Cut(i.ModalSubmitData().CustomID, ":")
		return "form " + kind
	}
	return i.Type.String()
}

// finish completes a deferred reply: text split across messages of at most
// 2,000 characters and embeds packed within Discord's limits; the first part
// edits the original response and the rest follow up.
func (b *Bot) finish(i *discordgo.Interaction, ephemeral bool, text string, embeds []*discordgo.MessageEmbed, components []discordgo.MessageComponent) bool {
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
				return false
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
			return false
		}
	}
	return true
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
