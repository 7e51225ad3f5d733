package bot

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/voice/conn"
)

// Joiner joins voice channels through the main gateway and follows the
// bot's voice session: a voice state update (op 4) is answered by
// VOICE_STATE_UPDATE (our session id) and VOICE_SERVER_UPDATE (token and
// endpoint); both are needed, and neither is cached across joins. Moves by a
// human and voice server changes produce new parameters on Watch.
type Joiner struct {
	sess *discordgo.Session

	mu    sync.Mutex
	links map[string]*link
}

type link struct {
	sessionID, channelID string
	token, endpoint      string
	stateGen, serverGen  int
	changed              chan struct{} // closed and replaced on every update
	watch                chan conn.Params
	wantChannel          string // the channel we asked for or were moved to
	settle               *time.Timer
	emitted              conn.Params
	// joining counts the Joins waiting for Discord's answer: the updates
	// that answer our own join (a conn's Rejoin after a lost session) are
	// not a move, and the watcher is not told of them.
	joining int
}

// settleDelay lets the two halves of a move (a state update and a server
// update, which discordgo may deliver in either order) arrive before the
// watcher is told.
const settleDelay = 250 * time.Millisecond

// NewJoiner follows voice events of sess. Call Close to stop.
func NewJoiner(sess *discordgo.Session) *Joiner {
	return &Joiner{sess: sess, links: map[string]*link{}}
}

// Handlers returns the discordgo handlers to add to the session.
func (j *Joiner) Handlers() []any {
	return []any{
		func(s *discordgo.Session, v *discordgo.VoiceStateUpdate) { j.onState(v) },
		func(s *discordgo.Session, v *discordgo.VoiceServerUpdate) { j.onServer(v) },
	}
}

func (j *Joiner) linkLocked(guildID string) *link {
	l, ok := j.links[guildID]
	if !ok {
		l = &link{changed: make(chan struct{})}
		j.links[guildID] = l
	}
	return l
}

func (j *Joiner) botID() string {
	if j.sess.State != nil && j.sess.State.User != nil {
		return j.sess.State.User.ID
	}
	return ""
}

func (j *Joiner) onState(v *discordgo.VoiceStateUpdate) {
	if v.VoiceState == nil || v.UserID != j.botID() {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	l := j.linkLocked(v.GuildID)
	l.sessionID, l.channelID = v.SessionID, v.ChannelID
	l.stateGen++
	if l.watch != nil && v.ChannelID != "" {
		l.wantChannel = v.ChannelID
		j.scheduleLocked(v.GuildID, l)
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// scheduleLocked tells the watcher about the link's new parameters once
// they have settled.
func (j *Joiner) scheduleLocked(guildID string, l *link) {
	if l.settle != nil {
		l.settle.Reset(settleDelay)
		return
	}
	l.settle = time.AfterFunc(settleDelay, func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		l.settle = nil
		p := j.paramsLocked(guildID, l)
		if l.watch == nil || l.joining > 0 || p == l.emitted || p.ChannelID == "" || p.Endpoint == "" {
			return
		}
		l.emitted = p
		tell(l.watch, p)
	})
}

// tell puts p on watch, in place of a report the watcher has not read: a
// newer move supersedes it. The caller holds j.mu, so nothing else writes
// watch meanwhile.
func tell(watch chan conn.Params, p conn.Params) {
	drain(watch)
	watch <- p
}

// drain takes a report the watcher has not read off watch, if there is one.
func drain(watch chan conn.Params) {
	select {
	case <-watch:
	default:
	}
}

func (j *Joiner) onServer(v *discordgo.VoiceServerUpdate) {
	j.mu.Lock()
	defer j.mu.Unlock()
	l := j.linkLocked(v.GuildID)
	if v.Endpoint == "" {
		return // the voice server is being allocated; another update follows
	}
	l.token, l.endpoint = v.Token, v.Endpoint
	l.serverGen++
	close(l.changed)
	l.changed = make(chan struct{})
	// A new server, or the second half of a move, while a session runs.
	if l.watch != nil {
		j.scheduleLocked(v.GuildID, l)
	}
}

func (j *Joiner) paramsLocked(guildID string, l *link) conn.Params {
	return conn.Params{Endpoint: l.endpoint, GuildID: guildID, ChannelID: l.channelID, UserID: j.botID(),
		SessionID: l.sessionID, Token: l.token}
}

// Join asks to join a voice channel (not self-deafened: the bot listens)
// and returns the connection parameters once both updates arrived. While a
// session is watched (a conn rejoining after a lost session), the answer
// to this join is the session's own, not a move: the watcher is not told,
// and a report it has not read yet is dropped (the join's answer is newer).
// A member who moves the bot while the join waits decides where it ends:
// the join returns the channel they moved it to.
func (j *Joiner) Join(ctx context.Context, guildID, channelID string) (conn.Params, error) {
	j.mu.Lock()
	l := j.linkLocked(guildID)
	stateGen, serverGen := l.stateGen, l.serverGen
	l.wantChannel = channelID
	l.joining++
	j.mu.Unlock()
	var p conn.Params
	var err error
	defer func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		l.joining--
		if l.watch == nil {
			return
		}
		if err == nil {
			drain(l.watch)
			l.emitted = p
		}
		// A move that came while the join waited was held back for it.
		if j.paramsLocked(guildID, l) != l.emitted {
			j.scheduleLocked(guildID, l)
		}
	}()
	p, err = j.join(ctx, l, guildID, channelID, stateGen, serverGen)
	return p, err
}

// join sends the voice state update and waits for both answers newer than
// the generations given, in the channel wanted: channelID, or the one a
// member moved the bot to meanwhile (onState follows it while watched).
func (j *Joiner) join(ctx context.Context, l *link, guildID, channelID string, stateGen, serverGen int) (conn.Params, error) {
	if err := j.voiceState(ctx, guildID, channelID); err != nil {
		return conn.Params{}, fmt.Errorf("asking Discord to join the voice channel: %w", err)
	}
	for {
		j.mu.Lock()
		ready := l.stateGen > stateGen && l.serverGen > serverGen && l.channelID != "" && l.channelID == l.wantChannel &&
			l.endpoint != ""
		p := j.paramsLocked(guildID, l)
		ch := l.changed
		j.mu.Unlock()
		if ready {
			return p, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return conn.Params{}, fmt.Errorf("Discord did not answer the voice join: %w", ctx.Err())
		}
	}
}

// voiceState sends a voice state update (op 4) for the guild: channelID,
// or "" to leave. discordgo writes it to the gateway's websocket without
// looking whether one is open; between a lost gateway and its reconnect
// (a backoff of up to ten minutes) there is none, and the write panicked
// with the session's write lock held, on a voice connection's reconnector
// goroutine: the process died. So the update waits, until ctx ends, for
// the gateway to be connected (DataReady: Close clears it, each heartbeat
// after a connect sets it), and the session's lock, which Open and Close
// hold while they replace the websocket, is held for reading around the
// write.
func (j *Joiner) voiceState(ctx context.Context, guildID, channelID string) error {
	for {
		j.sess.RLock()
		if j.sess.DataReady {
			defer j.sess.RUnlock()
			return j.sess.ChannelVoiceJoinManual(guildID, channelID, false, false)
		}
		j.sess.RUnlock()
		t := time.NewTimer(gatewayPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("the main Discord gateway is not connected: %w", ctx.Err())
		}
	}
}

// gatewayPoll is how often a voice state update waiting for the main
// gateway looks again.
const gatewayPoll = 50 * time.Millisecond

// Rejoin returns a function that joins the guild's current channel again
// (for conn.Config.Rejoin).
func (j *Joiner) Rejoin(guildID string) func(ctx context.Context) (conn.Params, error) {
	return func(ctx context.Context) (conn.Params, error) {
		j.mu.Lock()
		ch := j.linkLocked(guildID).wantChannel
		j.mu.Unlock()
		if ch == "" {
			return conn.Params{}, fmt.Errorf("no voice channel to rejoin in guild %s", guildID)
		}
		return j.Join(ctx, guildID, ch)
	}
}

// Watch returns parameters whenever the guild's voice session moves to a
// new channel or server while a session runs; Unwatch stops it.
func (j *Joiner) Watch(guildID string) <-chan conn.Params {
	j.mu.Lock()
	defer j.mu.Unlock()
	l := j.linkLocked(guildID)
	if l.watch == nil {
		l.watch = make(chan conn.Params, 1)
		l.emitted = j.paramsLocked(guildID, l)
	}
	return l.watch
}

// Unwatch stops reporting moves of the guild.
func (j *Joiner) Unwatch(guildID string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if l, ok := j.links[guildID]; ok {
		l.watch = nil
		if l.settle != nil {
			l.settle.Stop()
			l.settle = nil
		}
	}
}

// Channel returns the voice channel the bot is in, in a guild.
func (j *Joiner) Channel(guildID string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	if l, ok := j.links[guildID]; ok {
		return l.channelID
	}
	return ""
}

// Leave leaves the guild's voice channel.
func (j *Joiner) Leave(guildID string) error {
	j.Unwatch(guildID)
	j.mu.Lock()
	if l, ok := j.links[guildID]; ok {
		l.wantChannel = ""
	}
	j.mu.Unlock()
	// Not waiting for a gateway that is down: Discord takes the bot out of
	// the channel itself when its gateway session ends.
	now, cancel := context.WithCancel(context.Background())
	cancel()
	if err := j.voiceState(now, guildID, ""); err != nil {
		return fmt.Errorf("leaving the voice channel: %w", err)
	}
	return nil
}
