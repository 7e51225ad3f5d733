package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
)

// GuildClaims decides which of the glyphoxa processes sharing a database
// answers a guild (lifecycle/lease implements it with claims in
// PostgreSQL). Without it (Deps.Claims nil) this process answers every
// guild it is bound to.
type GuildClaims interface {
	// Claim reports whether this process owns the guild, claiming it when
	// nobody does. A process that does not own a guild stays silent there.
	Claim(ctx context.Context, guildID string) (bool, error)
	// Running records the session the guild runs (nil: none), so that
	// the process that takes the guild over, should this one die, resumes
	// it.
	Running(ctx context.Context, guildID string, s *ClaimedSession) error
}

// ClaimedSession is what another process needs to resume a guild's voice
// session: its campaign, channels and id.
type ClaimedSession struct {
	Campaign       string `json:"campaign"`
	VoiceChannelID string `json:"voice_channel_id"`
	TextChannelID  string `json:"text_channel_id"`
	SessionID      string `json:"session_id"`
	StartedBy      string `json:"started_by"`
}

// Marshal encodes s as a claim's state.
func (s ClaimedSession) Marshal() string {
	b, _ := json.Marshal(s) // strings only: cannot fail
	return string(b)
}

// ParseClaimedSession decodes a claim's state written by Marshal.
func ParseClaimedSession(state string) (ClaimedSession, error) {
	var s ClaimedSession
	if err := json.Unmarshal([]byte(state), &s); err != nil {
		return s, fmt.Errorf("reading a claimed session: %w", err)
	}
	if s.Campaign == "" || s.VoiceChannelID == "" || s.SessionID == "" {
		return s, fmt.Errorf("reading a claimed session: campaign, voice channel or session id missing in %q", state)
	}
	return s, nil
}

// owns reports whether this process answers the guild. A failed claim
// (the database is unreachable) is logged and answered by silence: another
// process may own the guild.
func (b *Bot) owns(ctx context.Context, guildID string) bool {
	if b.deps.Claims == nil {
		return true
	}
	ok, err := b.deps.Claims.Claim(ctx, guildID)
	if err != nil {
		b.log.Warn("claiming the guild; not answering", "guild", guildID, "err", err)
		return false
	}
	if !ok {
		b.log.Debug("another glyphoxa process owns the guild; not answering", "guild", guildID)
	}
	return ok
}

// running records the guild's session in its claim (nil: none).
func (b *Bot) running(guildID string, s *ClaimedSession) {
	if b.deps.Claims == nil {
		return
	}
	parent := context.Background()
	if b.ctx != nil {
		parent = context.WithoutCancel(b.ctx)
	}
	ctx, cancel := context.WithTimeout(parent, 10*time.Second)
	defer cancel()
	if err := b.deps.Claims.Running(ctx, guildID, s); err != nil {
		b.log.Warn("recording the session in the guild's claim", "guild", guildID, "err", err)
	}
}

// Resume starts again, in this process, the voice session another process
// ran in the guild before it died (this process took the guild's claim
// over): it joins the same voice channel and goes on writing the same
// session.
func (b *Bot) Resume(ctx context.Context, guildID string, s ClaimedSession) error {
	g, ok := b.guild(guildID)
	switch {
	case !ok:
		return fmt.Errorf("resuming a session: %w", errUnbound)
	case b.deps.Voice == nil:
		return errors.New("resuming a session: voice is not set up in this glyphoxa")
	case g.Campaign != s.Campaign:
		return fmt.Errorf("resuming session %s: it records campaign %q, this process binds the guild to %q", s.SessionID, s.Campaign, g.Campaign)
	case b.state.hasSession(guildID):
		return nil
	}
	if err := b.startVoice(ctx, g, s); err != nil {
		return fmt.Errorf("resuming session %s: %w", s.SessionID, err)
	}
	b.log.Info("resumed the session of a process that stopped", "guild", guildID, "session", s.SessionID)
	b.announce(s.TextChannelID, fmt.Sprintf("▶️ The glyphoxa process running session %s stopped; this one took it over and goes on recording.", s.SessionID))
	return nil
}

// Lost hands over the session of a guild whose claim another process
// took: that process runs it now, under the same session id. The session
// stops here without being ended (VoiceReleaser: no end is recorded, no
// post-session processing runs) and without leaving the voice channel.
// Voice sessions that cannot be released are ended (the fallback of
// implementations without VoiceReleaser).
func (b *Bot) Lost(ctx context.Context, guildID string) error {
	if b.deps.Voice == nil || !b.state.hasSession(guildID) {
		return nil
	}
	b.state.setSession(guildID, false)
	if r, ok := b.deps.Voice.(VoiceReleaser); ok {
		b.log.Warn("another glyphoxa process took the guild over: handing its session over", "guild", guildID)
		return r.Release(ctx, guildID)
	}
	b.log.Warn("another glyphoxa process took the guild over: stopping its session here", "guild", guildID)
	return b.deps.Voice.End(ctx, guildID)
}

// startVoice starts the guild's voice session s (s.SessionID empty: a new
// one) and records it in the guild's claim.
func (b *Bot) startVoice(ctx context.Context, g Guild, s ClaimedSession) error {
	announce := func(msg string) { b.announce(s.TextChannelID, msg) }
	err := b.deps.Voice.Start(ctx, StartRequest{GuildID: g.ID, VoiceChannelID: s.VoiceChannelID, TextChannelID: s.TextChannelID,
		Campaign: g.Campaign, StartedBy: s.StartedBy, SessionID: s.SessionID, Controls: b.state.controlsFor(g.ID), Announce: announce,
		Replied:      func(r NPCReply) { b.postReply(s.TextChannelID, r) },
		Contradicted: func(c continuity.Card) bool { return b.postCard(g, c) },
		Forgotten:    func(_ string, rep memory.ForgetReport) { b.forgottenLate(g, rep) },
		Ended: func(reason string) {
			b.state.setSession(g.ID, false)
			b.running(g.ID, nil)
			announce("⏹️ The session ended by itself: " + reason + ". Its memory is being processed in the background.")
		}})
	if err != nil {
		return err
	}
	b.state.setSession(g.ID, true)
	if st, ok := b.deps.Voice.Status(g.ID); ok {
		s.SessionID = st.SessionID
	}
	s.Campaign = g.Campaign
	b.running(g.ID, &s)
	return nil
}

// announce posts msg in a session's text channel.
func (b *Bot) announce(channelID, msg string) {
	if _, err := b.sess.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{Content: truncate(msg, maxContent),
		AllowedMentions: &discordgo.MessageAllowedMentions{}}); err != nil {
		b.log.Warn("announcing in the session channel", "channel", channelID, "err", err)
	}
}
