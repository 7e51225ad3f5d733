package bot

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/table/live"
)

// VoiceSessions runs the voice side of game sessions: joining a channel,
// recording, NPC turns, and leaving.
type VoiceSessions interface {
	// Start joins the voice channel and starts recording.
	Start(ctx context.Context, req StartRequest) error
	// End flushes, leaves and starts post-session processing.
	End(ctx context.Context, guildID string) error
	// Status describes the running session of a guild.
	Status(guildID string) (SessionStatus, bool)
	// Say makes an NPC speak exact words in the guild's voice session.
	Say(ctx context.Context, guildID, npcID, text string) error
	// Forget removes a player's words from the guild's running session:
	// lines on their way are dropped, those in the outage spool taken out
	// of it, erase deletes what long-term memory holds of them (or, while
	// the database is unreachable, is queued in the spool), then the live
	// conversation and its summaries lose them. ok is false when no
	// session is running (erase is not called).
	Forget(ctx context.Context, guildID, userID string, erase func(ctx context.Context) error) (r memory.ForgetReport, ok bool, err error)
}

// VoiceReleaser is an optional capability of VoiceSessions: it hands a
// guild's running session over to the process that took the guild's claim,
// without ending it (no end is recorded, no post-session processing runs)
// and without leaving the voice channel (the bot user's voice state is the
// new owner's). Bot.Lost uses it; without it, Lost ends the session.
type VoiceReleaser interface {
	Release(ctx context.Context, guildID string) error
}

// Undoer is an optional capability of VoiceSessions: it withdraws the last
// NPC reply in the guild's running session (/npc undo, "that wasn't for
// you"). ok is false when no session is running.
type Undoer interface {
	Undo(ctx context.Context, guildID string) (u Undone, ok bool, err error)
}

// ReplyUndoer is an optional capability of VoiceSessions: it withdraws
// one NPC reply, named by NPCReply.ID, if it is still the latest (the
// "Undo" button under a reply). ok is false when no session of the guild is
// running; the error wraps ErrReplyNotLatest when a later reply came since,
// ErrReplyGone when it was withdrawn already.
type ReplyUndoer interface {
	UndoReply(ctx context.Context, guildID, replyID string) (u Undone, ok bool, err error)
}

// Errors of ReplyUndoer.
var (
	ErrReplyNotLatest = errors.New("a later reply came since; only the latest NPC reply can be withdrawn")
	ErrReplyGone      = errors.New("the reply is withdrawn already")
)

// NPCReply is an NPC reply the voice session reports (StartRequest.Replied).
type NPCReply struct {
	// ID names the reply for ReplyUndoer.UndoReply.
	ID      string
	NPCName string
	Text    string
	// Voiced is false when the reply was posted in the text channel
	// rather than spoken.
	Voiced bool
}

// Undone is the NPC reply withdrawn.
type Undone struct {
	NPCName string
	// Reply is what was withdrawn; empty when the NPC was still
	// answering (Interrupted) and stopped.
	Reply       string
	Interrupted bool
}

// SpoolForgetter is an optional capability of VoiceSessions: it forgets a
// player in the outage spool an ended session of the campaign left on
// disk (the database was down when it ended), when no session of the
// guild is running, and runs erase (queued in the spool while the
// database is unreachable). Only Spooled and Deferred of the result are
// set.
type SpoolForgetter interface {
	ForgetSpooled(ctx context.Context, campaign, userID string, erase func(ctx context.Context) error) (memory.ForgetReport, error)
}

// StartRequest asks to start a voice session.
type StartRequest struct {
	GuildID        string
	VoiceChannelID string
	TextChannelID  string
	Campaign       string
	StartedBy      string
	// IsDM reports whether a user is the session's DM (nil: nobody is):
	// the table labels their lines "DM", the DM's narration in recaps, and
	// nobody else's, whatever their display name.
	IsDM func(userID string) bool
	// SessionID is the session to resume (another process ran it until it
	// stopped); empty starts a new one.
	SessionID string
	Controls  *live.Controls
	// Announce posts a message in the session's text channel.
	Announce func(text string)
	// Replied posts an NPC reply in the session's text channel with the
	// DM's Undo button (nil: none). It must not block for long.
	Replied func(NPCReply)
	// Contradicted posts a continuity card to the DM (nil: none) and
	// reports whether it reached them. It may block while it posts.
	Contradicted func(continuity.Card) bool
	// Forgotten is called when a player's forget-me, queued while the
	// database was down, ran from the outage spool (nil: none), with what
	// it deleted: the bot takes the deleted continuity cards out of the
	// DMs' direct messages and rebuilds the sessions named. It may block.
	Forgotten func(speakerID string, rep memory.ForgetReport)
	// Ended is called when the session ends by itself (its channel stayed
	// empty, it ran too long, or the voice connection failed), with why.
	Ended func(reason string)
}

// SessionStatus describes a running voice session.
type SessionStatus struct {
	SessionID   string
	StartedAt   time.Time
	Recorded    []string // display names of recorded speakers
	OptedOut    []string
	NPCsPresent []string
	Degraded    bool
	// SpoolPending counts lines kept locally until the database is back.
	SpoolPending int
	// TurnLatencyP50/P95 of the NPC turns so far.
	TurnLatencyP50, TurnLatencyP95 time.Duration
}

// runtimeState is the bot's per-guild live state.
type runtimeState struct {
	mu       sync.Mutex
	controls map[string]*live.Controls
	sessions map[string]bool
}

func newRuntimeState() *runtimeState {
	return &runtimeState{controls: map[string]*live.Controls{}, sessions: map[string]bool{}}
}

func (r *runtimeState) controlsFor(guildID string) *live.Controls {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.controls[guildID]
	if !ok {
		c = live.NewControls()
		r.controls[guildID] = c
	}
	return c
}

func (r *runtimeState) setSession(guildID string, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if on {
		r.sessions[guildID] = true
	} else {
		delete(r.sessions, guildID)
	}
}

func (r *runtimeState) hasSession(guildID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[guildID]
}

func (r *runtimeState) guildsWithSessions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for g := range r.sessions {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}
