package bot

import (
	"context"
	"errors"
	"strings"
	"sync"

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
// refused acknowledgement, or one Discord could not be reached for (see
// respond: a failed exchange is retried first), means: act on nothing.
// The decision rests on Discord's answer, not on comparing clocks.
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

// acked is how an interaction was acknowledged, and whether an answer
// followed.
type acked struct {
	typ       discordgo.InteractionResponseType
	ephemeral bool
	// mu serialises the answers (edits and follow-ups) of the handler
	// and of the bot's own safety nets (answerIfSilent, watch), so they
	// reach Discord in the order they were decided.
	mu sync.Mutex
	// answered is set, under mu, once an answer was sent, whether or
	// not Discord took it.
	answered bool
}

// respond sends an interaction's response and reports whether Discord took
// it. The first response is the acknowledgement; a refused one is logged
// once, at Warn, with the interaction's name and id. A failed exchange
// (a dropped connection, a timeout, a 5xx) is retried (see callDiscord):
// Discord's refusal of a retry as already acknowledged means the first
// attempt got through, and the handler acts; a Discord that stayed
// unreachable is logged at Error and nothing is done. Once acknowledged,
// responses edit the acknowledged message (followOn).
func (b *Bot) respond(i *discordgo.Interaction, r *discordgo.InteractionResponse) bool {
	if a, ok := b.acks.Load(i.ID); ok {
		return b.followOn(i, a.(*acked), r)
	}
	n, err := b.callDiscord(i, "the initial response", lostExchange, func(opts ...discordgo.RequestOption) error {
		return b.sess.InteractionRespond(i, r, opts...)
	})
	switch {
	case err == nil:
	case n > 1 && alreadyAcknowledged(err):
		// An earlier attempt got through; its answer was lost.
		b.log.Info("an initial response whose answer was lost had reached Discord", "interaction", i.ID, "attempts", n)
	case lostExchange(err):
		b.log.Error("could not reach Discord to acknowledge an interaction: nothing is done",
			"command", interactionName(i), "interaction", i.ID, "attempts", n, "err", err)
		return false
	default:
		b.log.Warn("Discord refused the acknowledgement of an interaction (late or unreachable): nothing is done",
			"command", interactionName(i), "interaction", i.ID, "err", err)
		return false
	}
	if r.Type == discordgo.InteractionResponseDeferredChannelMessageWithSource || r.Type == discordgo.InteractionResponseDeferredMessageUpdate {
		b.acks.Store(i.ID, &acked{typ: r.Type, ephemeral: r.Data != nil && r.Data.Flags&discordgo.MessageFlagsEphemeral != 0})
	}
	return true
}

// followOn completes an acknowledged interaction with r: a message edits
// the deferred reply (or, after a deferred update, follows up privately);
// an update edits the message the button was on.
func (b *Bot) followOn(i *discordgo.Interaction, a *acked, r *discordgo.InteractionResponse) bool {
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
		return b.followUp(i, params)
	case discordgo.InteractionResponseUpdateMessage:
		content := data.Content
		edit := &discordgo.WebhookEdit{Content: &content, AllowedMentions: &discordgo.MessageAllowedMentions{}}
		if data.Embeds != nil {
			edit.Embeds = &data.Embeds
		}
		if data.Components != nil {
			edit.Components = &data.Components
		}
		return b.editOriginal(i, edit)
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
			if !b.editOriginal(i, edit) {
				return false
			}
			continue
		}
		params := &discordgo.WebhookParams{Content: m.content, Embeds: m.embeds, Components: comps,
			AllowedMentions: &discordgo.MessageAllowedMentions{}}
		if ephemeral {
			params.Flags = discordgo.MessageFlagsEphemeral
		}
		if !b.followUp(i, params) {
			return false
		}
	}
	return true
}

// answering waits for the answers to i being sent (see acked.mu) and
// records that another is; the returned func lets the next go.
func (b *Bot) answering(i *discordgo.Interaction) (done func()) {
	v, ok := b.acks.Load(i.ID)
	if !ok {
		return func() {}
	}
	a := v.(*acked)
	a.mu.Lock()
	a.answered = true
	return a.mu.Unlock
}

// answerUnanswered answers the deferred reply of i with msg, unless an
// answer was sent already (or i is not a deferred reply: a deferred
// update shows nothing while it waits), and logs why at Error. It
// reports whether it answered.
func (b *Bot) answerUnanswered(i *discordgo.Interaction, msg, why string) bool {
	v, ok := b.acks.Load(i.ID)
	if !ok {
		return false
	}
	a := v.(*acked)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.typ != discordgo.InteractionResponseDeferredChannelMessageWithSource || a.answered {
		return false
	}
	a.answered = true
	b.log.Error(why, "command", interactionName(i), "interaction", i.ID)
	content := msg
	b.edit(i, &discordgo.WebhookEdit{Content: &content, AllowedMentions: &discordgo.MessageAllowedMentions{}})
	return true
}

// msgNoAnswer answers a deferred reply whose handler ended without an
// answer (a panic, or a path that forgot to answer).
const msgNoAnswer = "⚠️ Something went wrong and glyphoxa could not answer this. It was logged for whoever runs glyphoxa; try again."

// answerIfSilent is run when the handler of i returns, or panics: a
// deferred reply that got no answer would show "thinking…" until Discord
// gives up on it 15 minutes later, so it is answered with msgNoAnswer,
// and the handler's silence is logged at Error.
func (b *Bot) answerIfSilent(i *discordgo.Interaction) {
	b.answerUnanswered(i, msgNoAnswer, "an acknowledged interaction's handler ended without answering it")
}

// watch bounds how long a member waits for a deferred reply: a handler
// that did not answer watchGrace past its bound (interactionTimeout),
// stuck on something that does not heed its context, leaves the member
// told msgTooLong, and is logged at Error. The handler's own answer, if
// it comes later, edits the response again. The returned stop ends the
// watch, waiting for an answer it is sending.
func (b *Bot) watch(i *discordgo.Interaction) (stop func()) {
	t := b.clock.NewTimer(interactionTimeout + watchGrace)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-quit:
			t.Stop()
		case <-t.C():
			b.answerUnanswered(i, "⚠️ "+msgTooLong, "an interaction's handler is still running past its bound: the member is told it took too long")
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// editOriginal edits the acknowledged response of i, trying again while
// the exchange with Discord fails (an edit sent twice sets the same
// message). It reports whether Discord took the edit; when it did not,
// the member is left without an answer, which is logged at Error.
func (b *Bot) editOriginal(i *discordgo.Interaction, edit *discordgo.WebhookEdit) bool {
	defer b.answering(i)()
	return b.edit(i, edit)
}

// edit is editOriginal without waiting for other answers.
func (b *Bot) edit(i *discordgo.Interaction, edit *discordgo.WebhookEdit) bool {
	n, err := b.callDiscord(i, "an edit of the response", lostExchange, func(opts ...discordgo.RequestOption) error {
		_, err := b.sess.InteractionResponseEdit(i, edit, opts...)
		return err
	})
	if err != nil {
		b.log.Error("editing an interaction response failed: the member has no answer", "command", interactionName(i),
			"interaction", i.ID, "attempts", n, "err", err)
		return false
	}
	return true
}

// followUp posts a follow-up message of i, trying again only when Discord
// surely did not post it (a follow-up sent twice shows twice). It reports
// whether Discord took it; when it did not, the failure is logged at
// Error.
func (b *Bot) followUp(i *discordgo.Interaction, params *discordgo.WebhookParams) bool {
	defer b.answering(i)()
	n, err := b.callDiscord(i, "a follow-up message", notPosted, func(opts ...discordgo.RequestOption) error {
		_, err := b.sess.FollowupMessageCreate(i, true, params, opts...)
		return err
	})
	if err != nil {
		b.log.Error("sending a follow-up message failed: part of the answer is missing", "command", interactionName(i),
			"interaction", i.ID, "attempts", n, "err", err)
		return false
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
	msgTooLong   = "This took too long and was stopped. Try again in a minute; " +
		"if it happens again, the campaign's database or a provider may be overloaded."
)

// errText is what a member reads for err: a plain sentence for an outage
// (memory.ErrUnavailable, never the driver's message), a refusal
// (memory.ErrForbidden) or work that ran out of time (the handler's bound,
// interactionTimeout, or a provider's), the error itself otherwise, which names the
// problem with the member's input.
func errText(err error) string {
	switch {
	case errors.Is(err, memory.ErrUnavailable):
		return msgUnavailable
	case errors.Is(err, memory.ErrForbidden):
		return msgForbidden
	case errors.Is(err, context.DeadlineExceeded):
		return msgTooLong
	}
	return err.Error()
}
