package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/table/live"
)

// Controls returns a guild's live NPC controls.
func (b *Bot) Controls(guildID string) *live.Controls { return b.state.controlsFor(guildID) }

func (b *Bot) sessionCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	switch c.path {
	case "session start":
		if b.deps.Voice == nil {
			b.reply(i, true, "⚠️ Voice is not set up in this glyphoxa: configure providers.stt and providers.tts and run `glyphoxa serve`.")
			return
		}
		if b.state.hasSession(g.ID) {
			b.reply(i, true, "A session is already running here. `/session end` stops it.")
			return
		}
		vs, err := b.sess.State.VoiceState(g.ID, user(i).ID)
		if err != nil || vs == nil || vs.ChannelID == "" {
			b.reply(i, true, "Join a voice channel first; glyphoxa joins the one you are in.")
			return
		}
		if !b.deferReply(i, true) {
			return
		}
		text := g.TextChannelID
		if text == "" {
			text = i.ChannelID
		}
		s := ClaimedSession{Campaign: g.Campaign, VoiceChannelID: vs.ChannelID, TextChannelID: text, StartedBy: user(i).ID}
		if err := b.startVoice(ctx, g, s); err != nil {
			b.finishErr(i, fmt.Errorf("starting the session: %w", err))
			return
		}
		b.announce(text, fmt.Sprintf("🎙️ **This session is being transcribed** by glyphoxa for the campaign's memory (%s). "+
			"Your NPCs will remember what is said. Don't want to be recorded? `/privacy opt-out`.", g.Campaign))
		b.finish(i, true, fmt.Sprintf("Recording in <#%s>. `/session end` when you are done.", vs.ChannelID), nil, nil)
	case "session end":
		if b.deps.Voice == nil || !b.state.hasSession(g.ID) {
			b.reply(i, true, "No session is running.")
			return
		}
		if !b.deferReply(i, true) {
			return
		}
		st, _ := b.deps.Voice.Status(g.ID)
		err := b.deps.Voice.End(ctx, g.ID)
		if _, still := b.deps.Voice.Status(g.ID); !still {
			// The session stopped, whatever End reports (lines that wait
			// in the outage spool, say): the guild's claim must not carry
			// it any more, or the process that takes the guild over would
			// resume the session the DM ended.
			b.state.setSession(g.ID, false)
			b.running(g.ID, nil)
		}
		if err != nil {
			b.finishErr(i, fmt.Errorf("ending the session: %w", err))
			return
		}
		b.finish(i, true, fmt.Sprintf("Session %s ended and saved. Its memory is being processed in the background; "+
			"`/memory pending` shows the facts waiting for your review.", st.SessionID), nil, nil)
	case "session status":
		if b.deps.Voice == nil {
			b.reply(i, true, "No session is running (voice is not set up).")
			return
		}
		st, ok := b.deps.Voice.Status(g.ID)
		if !ok {
			b.reply(i, true, "No session is running. A DM can start one with `/session start`.")
			return
		}
		b.reply(i, true, "", statusEmbed(st, b.gameDateOf(ctx, g, st.SessionID)))
	case "session date":
		b.sessionDate(ctx, i, g, c.str("date"))
	case "session player":
		b.sessionPlayer(ctx, i, g, c)
	}
}

// sessionDate sets the in-world date of the running session, or of the
// campaign's last one when none is running, after reading it in the
// campaign's calendar; the date is stored in the calendar's own form.
func (b *Bot) sessionDate(ctx context.Context, i *discordgo.Interaction, g Guild, date string) {
	if !b.deferReply(i, true) {
		return
	}
	camp, _, err := b.campaign(ctx, g.ID, memory.DMViewer())
	if err != nil {
		b.finishErr(i, err)
		return
	}
	id := ""
	if b.deps.Voice != nil {
		if st, ok := b.deps.Voice.Status(g.ID); ok {
			id = st.SessionID
		}
	}
	if id == "" {
		ss, err := camp.Sessions().Starts(ctx)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		if len(ss) == 0 {
			b.finish(i, true, "The campaign has no session yet: `/session start` starts one.", nil, nil)
			return
		}
		id = ss[len(ss)-1].ID
	}
	cal, _, err := camp.Sessions().Calendar(ctx)
	if err != nil {
		b.finishErr(i, err)
		return
	}
	d, err := cal.Parse(date)
	if err != nil {
		b.finish(i, true, fmt.Sprintf("⚠️ %s is not a date of %s.", memory.Quote(date, 60), cal.Describe()), nil, nil)
		return
	}
	canon := cal.Format(d)
	if err := camp.Sessions().SetGameDate(ctx, id, canon); err != nil {
		b.finishErr(i, fmt.Errorf("setting the date of session %s: %w", id, err))
		return
	}
	b.finish(i, true, fmt.Sprintf("📅 Session %s takes place on **%s**.", id, canon), nil, nil)
}

// gameDateOf is a session's in-world date for the status card ("" when
// none is set or it cannot be read: the card does not fail for it).
func (b *Bot) gameDateOf(ctx context.Context, g Guild, sessionID string) string {
	camp, _, err := b.campaign(ctx, g.ID, memory.DMViewer())
	if err != nil {
		b.log.Warn("reading the session's in-world date", "guild", g.ID, "err", err)
		return ""
	}
	s, err := camp.Sessions().Session(ctx, sessionID)
	if err != nil {
		b.log.Warn("reading the session's in-world date", "guild", g.ID, "session", sessionID, "err", err)
		return ""
	}
	return s.GameDate
}

func statusEmbed(st SessionStatus, gameDate string) *discordgo.MessageEmbed {
	memory := "healthy"
	if st.Degraded {
		memory = fmt.Sprintf("⚠️ database unreachable — %d lines are kept in a local spool and will be stored when it is back; nothing is lost", st.SpoolPending)
	}
	return &discordgo.MessageEmbed{
		Title: "Session " + st.SessionID,
		Color: 0x57F287,
		Fields: []*discordgo.MessageEmbedField{
			{Name: "Running for", Value: time.Since(st.StartedAt).Round(time.Minute).String(), Inline: true},
			{Name: "In-world date", Value: orNone(gameDate) + " (`/session date`)", Inline: true},
			{Name: "Recorded", Value: orNone(strings.Join(st.Recorded, ", ")), Inline: true},
			{Name: "Not recorded (opted out)", Value: orNone(strings.Join(st.OptedOut, ", ")), Inline: true},
			{Name: "NPCs present", Value: orNone(strings.Join(st.NPCsPresent, ", ")), Inline: true},
			{Name: "Memory", Value: memory},
			{Name: "NPC reply latency", Value: fmt.Sprintf("p50 %s · p95 %s", st.TurnLatencyP50.Round(time.Millisecond),
				st.TurnLatencyP95.Round(time.Millisecond)), Inline: true},
		},
	}
}
