package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	players, err := b.restoreSplit(ctx, g, s)
	if err != nil {
		return fmt.Errorf("resuming session %s: %w", s.SessionID, err)
	}
	if err := b.startVoice(ctx, g, s); err != nil {
		return fmt.Errorf("resuming session %s: %w", s.SessionID, err)
	}
	b.log.Info("resumed the session of a process that stopped", "guild", guildID, "session", s.SessionID, "split", players)
	msg := fmt.Sprintf("▶️ The glyphoxa process running session %s stopped; this one took it over and goes on recording.", s.SessionID)
	if len(players) > 0 {
		msg += " The party is still split as it was left, the scene holding " + scenePlayersText(players) +
			": `/npc scene players:all` when it is together again."
	}
	b.announce(s.TextChannelID, msg)
	return nil
}

// ErrSessionEnded says a claimed session cannot be resumed: its end is in
// the session log (the DM ended it, or a SIGTERM did, while the claim that
// names it could not be cleared: PostgreSQL was down, and the end reached
// the log from the outage spool).
var ErrSessionEnded = errors.New("the session has ended")

// Resumable returns an error wrapping ErrSessionEnded when the session
// log records the end of the session a guild's claim carries; a takeover
// asks it before Resume, and drops such a session from the claim. A
// session the log does not hold yet (its start still waits in the stopped
// process's outage spool) is resumable. Another error: the log could not
// tell.
func (b *Bot) Resumable(ctx context.Context, guildID string, s ClaimedSession) error {
	camp, _, err := b.campaign(ctx, guildID, memory.DMViewer())
	if err != nil {
		return fmt.Errorf("resuming session %s: %w", s.SessionID, err)
	}
	sess, err := camp.Sessions().Session(ctx, s.SessionID)
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("resuming session %s: %w", s.SessionID, err)
	case !sess.EndedAt.IsZero():
		return fmt.Errorf("resuming session %s: %w (at %s)", s.SessionID, ErrSessionEnded, sess.EndedAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// restoreSplit sets the guild's scene to the split the session was left
// in, read from its presence rows (the store writes them in order with
// the lines, so they hold the split in force when the stopped process
// recorded its last line): without it the live controls, which lived in
// the stopped process, would take the party for together and record the
// rest of a split scene as heard by everyone. It returns the scene's
// players (empty: the party was together, or the session has no presence
// yet).
//
// The scene's players are those of the session's last split row that
// lists any (the last row may be the empty one of a line said at the table
// outside the scene); a scene player who was not in the voice channel
// then is not listed, and is taken as outside the scene until the DM sets
// it again (they read less, never more). The rows do not say which DM
// split the party: the DM who started the session (s.StartedBy) is taken
// as the one whose lines the scene hears; another DM's lines count as
// said at the table until the DM sets the scene again.
//
// A split the rows cannot name players for (every row of the split is
// empty: nobody in the scene was in the voice channel) is resumed as a
// scene of the DM alone: every player's line is then said at the table
// outside it, read by its speaker and the DM, until the DM sets the scene
// again; without a DM to name it is an error. Resuming with the party
// together would make the rest of the scene public.
func (b *Bot) restoreSplit(ctx context.Context, g Guild, s ClaimedSession) ([]string, error) {
	camp, _, err := b.campaign(ctx, g.ID, memory.DMViewer())
	if err != nil {
		return nil, fmt.Errorf("reading where the party was: %w", err)
	}
	rows, err := camp.Presence(ctx, s.SessionID)
	if err != nil {
		return nil, fmt.Errorf("reading where the party was: %w", err)
	}
	var players []string
	for i := len(rows) - 1; i >= 0 && rows[i].Split; i-- {
		if len(rows[i].Players) > 0 {
			players = rows[i].Players
			break
		}
	}
	switch {
	case len(rows) == 0 || !rows[len(rows)-1].Split:
		return nil, nil
	case len(players) == 0 && s.StartedBy == "":
		return nil, fmt.Errorf("the party was split, but no presence row of session %s names the scene's players, nor does the claim name its DM", s.SessionID)
	case len(players) == 0:
		b.log.Warn("the party was split, but no presence row names the scene's players: resuming with the DM alone in it",
			"guild", g.ID, "session", s.SessionID, "dm", s.StartedBy)
		players = []string{s.StartedBy}
	}
	controls := b.state.controlsFor(g.ID)
	scene := controls.Scene()
	scene.Players, scene.By = players, s.StartedBy
	controls.SetScene(scene)
	return players, nil
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

// tableDM is who the guild's table labels as its DM (StartRequest.IsDM):
// the member who started the session (a DM: /session start is the DM's),
// a user DMUserIDs lists, or a member holding a role of DMRoleIDs (asked
// of Discord once, then cached). The Administrator permission alone, which
// lets a member use DM commands, does not make a player at the table its
// DM, and a display name never does.
func (b *Bot) tableDM(g Guild, startedBy string) func(userID string) bool {
	return func(userID string) bool {
		if userID == "" {
			return false
		}
		if userID == startedBy || slices.Contains(g.DMUserIDs, userID) {
			return true
		}
		if len(g.DMRoleIDs) == 0 || b.sess == nil {
			return false
		}
		m, err := b.sess.State.Member(g.ID, userID)
		if err != nil || m == nil {
			if m, err = b.sess.GuildMember(g.ID, userID); err != nil || m == nil {
				b.log.Debug("no member to check for a DM role: their lines are a player's", "guild", g.ID, "user", userID, "err", err)
				return false
			}
			if m.GuildID == "" {
				m.GuildID = g.ID
			}
			if err := b.sess.State.MemberAdd(m); err != nil {
				b.log.Debug("caching a member", "guild", g.ID, "user", userID, "err", err)
			}
		}
		return IsDM(Guild{DMRoleIDs: g.DMRoleIDs}, userID, 0, m.Roles)
	}
}

// startVoice starts the guild's voice session s (s.SessionID empty: a new
// one) and records it in the guild's claim.
func (b *Bot) startVoice(ctx context.Context, g Guild, s ClaimedSession) error {
	announce := func(msg string) { b.announce(s.TextChannelID, msg) }
	err := b.deps.Voice.Start(ctx, StartRequest{GuildID: g.ID, VoiceChannelID: s.VoiceChannelID, TextChannelID: s.TextChannelID,
		Campaign: g.Campaign, StartedBy: s.StartedBy, IsDM: b.tableDM(g, s.StartedBy), SessionID: s.SessionID,
		Controls: b.state.controlsFor(g.ID), Announce: announce,
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
