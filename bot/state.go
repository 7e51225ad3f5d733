package bot

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Controls are a guild's live NPC controls, shared with its voice session:
// which NPCs are muted and what the scene is.
type Controls struct {
	mu       sync.Mutex
	muted    map[string]bool
	allMuted bool
	scene    Scene
	next     string // the NPC the DM told to answer the next line
}

// NewControls returns the controls of a session with no scene, nothing
// muted.
func NewControls() *Controls { return &Controls{muted: map[string]bool{}} }

// SetNext makes an NPC answer the next line a player says.
func (c *Controls) SetNext(npcID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next = npcID
}

// TakeNext returns the NPC the DM told to answer the next line, once.
func (c *Controls) TakeNext() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next = ""
	return id
}

// Scene is where the action is and who is there.
type Scene struct {
	LocationID string
	Present    []string // NPC entity ids
}

// Muted reports whether an NPC may not answer.
func (c *Controls) Muted(npcID string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.allMuted || c.muted[npcID]
}

// SetMuted mutes or unmutes one NPC, or all when npcID is "all".
func (c *Controls) SetMuted(npcID string, muted bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if npcID == "all" {
		c.allMuted = muted
		if !muted {
			clear(c.muted)
		}
		return
	}
	if muted {
		c.muted[npcID] = true
	} else {
		delete(c.muted, npcID)
	}
}

// Scene returns the current scene.
func (c *Controls) Scene() Scene {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Scene{LocationID: c.scene.LocationID, Present: slices.Clone(c.scene.Present)}
}

// PresentNPCs are the NPCs in the scene (empty: the scene is not set).
func (c *Controls) PresentNPCs() []string { return c.Scene().Present }

// SetScene replaces the scene.
func (c *Controls) SetScene(s Scene) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scene = Scene{LocationID: s.LocationID, Present: slices.Clone(s.Present)}
}

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
	Forget(ctx context.Context, guildID, userID string, erase func(ctx context.Context) error) (r LiveForget, ok bool, err error)
}

// LiveForget says what Forget removed from a running session.
type LiveForget struct {
	// Lines taken out of the live conversation and its summaries.
	Lines int
	// Summaries rewritten without them.
	Summaries int
	// Spooled is the number of lines taken out of the outage spool before
	// they reached the database.
	Spooled int
	// Deferred is set when the database was unreachable: erase did not
	// run; the deletion is queued in the outage spool and runs when the
	// database is back.
	Deferred bool
}

// SpoolForgetter is an optional capability of VoiceSessions: it forgets a
// player in the outage spool an ended session of the campaign left on
// disk (the database was down when it ended), when no session of the
// guild is running, and runs erase (queued in the spool while the
// database is unreachable). Only Spooled and Deferred of the result are
// set.
type SpoolForgetter interface {
	ForgetSpooled(ctx context.Context, campaign, userID string, erase func(ctx context.Context) error) (LiveForget, error)
}

// StartRequest asks to start a voice session.
type StartRequest struct {
	GuildID        string
	VoiceChannelID string
	TextChannelID  string
	Campaign       string
	StartedBy      string
	Controls       *Controls
	// Announce posts a message in the session's text channel.
	Announce func(text string)
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
	controls map[string]*Controls
	sessions map[string]bool
}

func newRuntimeState() *runtimeState {
	return &runtimeState{controls: map[string]*Controls{}, sessions: map[string]bool{}}
}

func (r *runtimeState) controlsFor(guildID string) *Controls {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.controls[guildID]
	if !ok {
		c = NewControls()
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
