package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// undoPrefix starts the custom id of the Undo button under an NPC reply.
const undoPrefix = "undo"

// postReply posts an NPC reply in the session's text channel with the DM's
// Undo button ("that wasn't for you"). The table channel is where the DM
// already reads the session's announcements, and where a voiced reply
// otherwise leaves no trace: the message shows what the NPC said, so the
// DM can tell a reply that was not for it, and undo it in one click,
// without typing /npc undo. A reply without voice is already posted as
// it is; its control message only names the NPC. Players see the button
// too; pressing it gets them an ephemeral refusal.
func (b *Bot) postReply(channelID string, r NPCReply) {
	if channelID == "" || r.ID == "" {
		return
	}
	content := fmt.Sprintf("↩️ %s answered.", r.NPCName)
	if r.Voiced {
		content = fmt.Sprintf("🗣️ **%s:** %s", r.NPCName, r.Text)
	}
	if _, err := b.sess.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
		Content:         truncate(content, maxContent),
		AllowedMentions: &discordgo.MessageAllowedMentions{},
		Components:      undoComponents(r),
	}); err != nil {
		b.log.Warn("posting an NPC reply in the session channel", "channel", channelID, "err", err)
	}
}

// undoComponents is the Undo button of reply r.
func undoComponents(r NPCReply) []discordgo.MessageComponent {
	return []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
		discordgo.Button{Label: truncate("Undo: that wasn't for "+r.NPCName, 80), Style: discordgo.SecondaryButton,
			CustomID: undoPrefix + ":" + r.ID, Emoji: &discordgo.ComponentEmoji{Name: "↩️"}},
	}}}
}

// undoButton withdraws the reply named id, as /npc undo does, if it is
// still the latest; the message loses its button and says so.
func (b *Bot) undoButton(ctx context.Context, i *discordgo.Interaction, g Guild, id string) {
	u, ok := b.deps.Voice.(ReplyUndoer)
	if !ok || id == "" {
		b.reply(i, true, "This button has expired.")
		return
	}
	// Withdrawing changes the conversation: acknowledged first, it runs
	// only if Discord still takes the answer (see ack).
	if !b.ack(i, true) {
		return
	}
	got, running, err := u.UndoReply(ctx, g.ID, id)
	switch {
	case !running:
		b.reply(i, true, "⚠️ no voice session is running; this reply belongs to a session that ended.")
		return
	case errors.Is(err, ErrReplyNotLatest):
		b.reply(i, true, fmt.Sprintf("⚠️ %s: %s", ifEmpty(got.NPCName, "This reply"), "a later reply came since; only the latest NPC reply can be withdrawn."))
		return
	case errors.Is(err, ErrReplyGone):
		b.reply(i, true, "↩️ This reply is withdrawn already.")
		return
	case err != nil && got.NPCName == "":
		b.reply(i, true, "⚠️ "+errText(err))
		return
	}
	old := ""
	if i.Message != nil {
		old = i.Message.Content
	}
	note := fmt.Sprintf("↩️ Withdrawn by the DM: not part of %s's memory, and the next line is not taken as a follow-up to it.", got.NPCName)
	if err != nil {
		note = fmt.Sprintf("↩️ %s's reply is withdrawn from the conversation, but: %s", got.NPCName, errText(err))
	}
	content := note
	if s := strings.TrimSpace(old); s != "" {
		content = "~~" + strings.ReplaceAll(s, "~", "") + "~~\n" + note
	}
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: truncate(content, maxContent), Components: []discordgo.MessageComponent{},
			AllowedMentions: &discordgo.MessageAllowedMentions{}}})
}

func ifEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
