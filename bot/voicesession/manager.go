package voicesession

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/table"
)

// Link joins and leaves voice channels through the main gateway.
type Link interface {
	Join(ctx context.Context, guildID, channelID string) (table.Voice, error)
	Leave(guildID string) error
}

// Config configures a Manager. Door, Link and Providers.STT are required.
type Config struct {
	// Door opens each session's campaign for the DM (memory/access).
	Door *access.Door
	Link Link
	// Providers and Settings are those of every session's table.
	Providers table.Providers
	Settings  table.Settings
	// UserName is a user's display name in a guild; nil uses the id.
	UserName func(guildID, userID string) string
	Observer table.Observer
	// Owns reports whether this process still owns a guild (its claim, see
	// lifecycle/lease); nil: always. The bot user is one for every process,
	// so leaving a voice channel would disconnect the session of whichever
	// process runs it: a manager leaves only a guild it owns.
	Owns func(guildID string) bool
	// Confirm, if set, asks the database whether this process still owns
	// a guild (its claim's fencing token is current; lifecycle/lease
	// Set.Check). A session that ends by itself (its channel emptied, its
	// voice connection ended: what a process that stalled past its lease
	// sees when it wakes up) is confirmed first: a guild lost to another
	// process has its session handed over (Release) rather than ended.
	// An error (the database cannot tell) ends it as without Confirm.
	Confirm func(ctx context.Context, guildID string) (bool, error)
	// Holder, if set, returns for a guild whose session starts whether
	// this process still holds the guild's claim (lifecycle/lease
	// Set.Holder): the session asks it before every line it records and,
	// once it says no (the claim was lost, or its lease expired without a
	// renewal: a process that stalled past its lease time), records
	// nothing more (see table.Config.Held). nil: always held.
	Holder func(guildID string) func() bool
	// Continuity checks each line against canon and raises a card for
	// the DM on a contradiction (see lifecycle/continuity); Cards holds
	// them (New makes one when nil).
	Continuity bool
	Cards      *continuity.Board
	Logger     *slog.Logger
	Clock      clock.Clock
}

// Manager runs the voice sessions of every guild. It implements
// bot.VoiceSessions. Its methods are safe for concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger
	clk clock.Clock

	ctx    context.Context // background work; cancelled by Close
	cancel context.CancelFunc
	bg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*running // by guild id
}

// running is a guild's session.
type running struct {
	req bot.StartRequest
	s   *table.Session
	// stopCheck stops the session's continuity loop.
	stopCheck func()
}

var _ bot.VoiceSessions = (*Manager)(nil)

// New returns a manager; Close stops it.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Door == nil:
		return nil, errors.New("voicesession: the memory door is required")
	case cfg.Link == nil:
		return nil, errors.New("voicesession: a voice link is required")
	case cfg.Providers.STT == nil:
		return nil, errors.New("voicesession: a speech-to-text engine is required (providers.stt)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.UserName == nil {
		cfg.UserName = func(_, userID string) string { return userID }
	}
	if cfg.Cards == nil {
		cfg.Cards = continuity.NewBoard()
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, clk: clock.OrReal(cfg.Clock), sessions: map[string]*running{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// sessionID names a session after its start time, with a random suffix:
// two starts in one minute (in one process or two) are two sessions.
func sessionID(t time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("2006-01-02T1504") + "-" + hex.EncodeToString(b[:])
}

// leave leaves the guild's voice channel if this process owns the guild.
func (m *Manager) leave(guildID string) error {
	if m.cfg.Owns != nil && !m.cfg.Owns(guildID) {
		m.log.Info("not leaving the voice channel: another glyphoxa process owns the guild", "guild", guildID)
		return nil
	}
	return m.cfg.Link.Leave(guildID)
}

// Start joins the voice channel and starts the table's session.
func (m *Manager) Start(ctx context.Context, req bot.StartRequest) error {
	m.mu.Lock()
	if _, ok := m.sessions[req.GuildID]; ok {
		m.mu.Unlock()
		return errors.New("a session is already running in this server")
	}
	if m.ctx.Err() != nil {
		m.mu.Unlock()
		return errors.New("glyphoxa is shutting down")
	}
	// Reserve the guild while joining.
	m.sessions[req.GuildID] = nil
	m.mu.Unlock()

	r, err := m.open(ctx, req)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		delete(m.sessions, req.GuildID)
		return err
	}
	m.sessions[req.GuildID] = r
	return nil
}

func (m *Manager) open(ctx context.Context, req bot.StartRequest) (*running, error) {
	camp, err := m.cfg.Door.Open(ctx, req.Campaign, memory.DMViewer())
	if err != nil {
		return nil, err
	}
	v, err := m.cfg.Link.Join(ctx, req.GuildID, req.VoiceChannelID)
	if err != nil {
		return nil, fmt.Errorf("joining the voice channel: %w", err)
	}
	id := req.SessionID
	if id == "" {
		id = sessionID(m.clk.Now())
	}
	tcfg := table.Config{Campaign: camp, SessionID: id, Voice: v,
		Providers: m.cfg.Providers, Settings: m.cfg.Settings, Announce: req.Announce,
		UserName: func(userID string) string { return m.cfg.UserName(req.GuildID, userID) },
		IsDM:     req.IsDM,
		OnEnd:    func(reason string) { m.endLater(req.GuildID, reason) },
		Observer: m.cfg.Observer, Clock: m.cfg.Clock,
		Logger: m.log.With("guild", req.GuildID, "channel", req.VoiceChannelID)}
	if req.Controls != nil {
		tcfg.Controls = req.Controls
	}
	if m.cfg.Holder != nil {
		tcfg.Held = m.cfg.Holder(req.GuildID)
	}
	if req.Replied != nil {
		tcfg.OnReply = func(r table.Reply) {
			req.Replied(bot.NPCReply{ID: r.ID, NPCName: r.NPCName, Text: r.Text, Voiced: r.Voiced})
		}
	}
	tcfg.OnForgotten = func(speakerID string, rep memory.ForgetReport) { m.forgotten(req, speakerID, rep) }
	stopCheck := m.watchContinuity(ctx, req, camp, &tcfg, tcfg.Logger)
	s, err := table.Open(ctx, tcfg)
	if err != nil {
		stopCheck()
		if lerr := m.leave(req.GuildID); lerr != nil {
			m.log.Warn("leaving the voice channel after a failed start", "err", lerr)
		}
		_ = v.Close()
		return nil, fmt.Errorf("starting the session of campaign %q: %w", req.Campaign, err)
	}
	return &running{req: req, s: s, stopCheck: stopCheck}, nil
}

// End flushes the session's transcript, leaves the channel and starts the
// post-session processing.
func (m *Manager) End(ctx context.Context, guildID string) error {
	return m.end(ctx, guildID, "")
}

// end stops a guild's session; reason (when not empty) is told to the
// bot, for sessions that end by themselves.
func (m *Manager) end(ctx context.Context, guildID, reason string) error {
	m.mu.Lock()
	r := m.sessions[guildID]
	if r == nil {
		m.mu.Unlock()
		return errors.New("no session is running in this server")
	}
	delete(m.sessions, guildID)
	m.mu.Unlock()

	err := r.s.End(ctx)
	r.stopCheck()
	if lerr := m.leave(guildID); lerr != nil {
		err = errors.Join(err, fmt.Errorf("leaving the voice channel: %w", lerr))
	}
	if reason != "" && r.req.Ended != nil {
		r.req.Ended(reason)
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		rep, err := r.s.Finish(m.ctx)
		if err != nil {
			m.log.Error("processing the session", "campaign", r.req.Campaign, "session", r.s.ID(), "err", err)
			return
		}
		m.log.Info("session processed into long-term memory", "campaign", r.req.Campaign, "session", r.s.ID(),
			"report", fmt.Sprintf("%+v", rep))
	}()
	return err
}

var _ bot.VoiceReleaser = (*Manager)(nil)

// dropper is an optional capability of a Link: it stops following a
// guild's voice session without leaving the channel (GatewayLink.Drop).
type dropper interface {
	Drop(guildID string)
}

// Release hands a guild's session over to the process that took the
// guild's claim (see table.Session.Release): the session stops here at once
// (no line is recorded from the moment Release is called), what was
// acknowledged is drained into the session log, and the voice connection
// closes; the session is not marked ended and no post-session processing
// runs. It does not leave the voice channel: the bot user is one for every
// process, so leaving would disconnect the new owner. The session's Ended
// callback is not called.
func (m *Manager) Release(ctx context.Context, guildID string) error {
	m.mu.Lock()
	r := m.sessions[guildID]
	if r == nil {
		m.mu.Unlock()
		return errors.New("no session is running in this server")
	}
	delete(m.sessions, guildID)
	m.mu.Unlock()

	err := r.s.Release(ctx)
	r.stopCheck()
	if d, ok := m.cfg.Link.(dropper); ok {
		d.Drop(guildID)
	}
	m.log.Info("handed the session over to another glyphoxa process", "guild", guildID, "campaign", r.req.Campaign,
		"session", r.s.ID(), "err", err)
	return err
}

// endLater ends a session from one of its own goroutines; one whose guild
// another process took over is handed over instead (see Config.Confirm).
func (m *Manager) endLater(guildID, reason string) {
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), time.Minute)
		defer cancel()
		if m.cfg.Confirm != nil {
			owned, err := m.cfg.Confirm(ctx, guildID)
			switch {
			case err != nil:
				m.log.Warn("could not confirm the guild's claim before ending its session; ending it", "guild", guildID, "err", err)
			case !owned:
				m.log.Warn("the session stopped by itself, but another glyphoxa process owns the guild now: handing it over",
					"guild", guildID, "reason", reason)
				if err := m.Release(ctx, guildID); err != nil {
					m.log.Warn("handing a session over", "guild", guildID, "err", err)
				}
				return
			}
		}
		if err := m.end(ctx, guildID, reason); err != nil {
			m.log.Warn("ending a session", "guild", guildID, "reason", reason, "err", err)
		}
	}()
}

func (m *Manager) get(guildID string) *running {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[guildID]
}

// Status describes a guild's running session.
func (m *Manager) Status(guildID string) (bot.SessionStatus, bool) {
	r := m.get(guildID)
	if r == nil {
		return bot.SessionStatus{}, false
	}
	ts := r.s.Status()
	st := bot.SessionStatus{SessionID: ts.SessionID, StartedAt: ts.StartedAt, Degraded: ts.Degraded,
		SpoolPending: ts.SpoolPending, TurnLatencyP50: ts.TurnLatencyP50, TurnLatencyP95: ts.TurnLatencyP95}
	for _, n := range ts.Recorded {
		st.Recorded = append(st.Recorded, n)
	}
	sort.Strings(st.Recorded)
	for _, u := range ts.OptedOut {
		st.OptedOut = append(st.OptedOut, m.cfg.UserName(guildID, u))
	}
	if r.req.Controls != nil {
		for _, id := range r.req.Controls.PresentNPCs() {
			st.NPCsPresent = append(st.NPCsPresent, r.s.Cast().NPCName(id))
		}
	}
	return st, true
}

// Live is the DM console's view of the session running in a campaign (it
// implements console.LiveSource): who is speaking, the latest NPC turns
// with their stage latencies, and memory health.
func (m *Manager) Live(campaign string) console.LiveStatus {
	m.mu.Lock()
	var r *running
	for _, x := range m.sessions {
		if x != nil && x.req.Campaign == campaign {
			r = x
		}
	}
	m.mu.Unlock()
	if r == nil {
		return console.LiveStatus{}
	}
	st := LiveOf(r.s, func(u string) string { return m.cfg.UserName(r.req.GuildID, u) })
	st.Cards = m.cfg.Cards.List(campaign)
	return st
}

// LiveOf is the console's view of a running table session: who is
// speaking (named by userName), the latest NPC turns with their stage
// latencies, and the session's memory health.
func LiveOf(s *table.Session, userName func(userID string) string) console.LiveStatus {
	ts := s.Status()
	st := console.LiveStatus{Running: true, SessionID: ts.SessionID, StartedAt: ts.StartedAt,
		MemoryDegraded: ts.Degraded, PendingWrites: ts.SpoolPending}
	for _, u := range ts.Speaking {
		st.Speaking = append(st.Speaking, userName(u))
	}
	for _, t := range ts.Turns {
		outcome := "answered"
		switch {
		case t.Error != "":
			outcome = "failed"
		case t.Fallback:
			outcome = "fallback"
		}
		turn := console.Turn{NPC: s.Cast().NPCName(t.Addressee), At: t.At, Heard: t.Corrected, Outcome: outcome}
		for _, sg := range []struct {
			name string
			d    time.Duration
		}{{"stt", t.Timing.STT}, {"correction", t.Timing.Corrected}, {"recorded", t.Timing.Recorded},
			{"hot_context", t.Timing.ContextReady}, {"llm_first_token", t.Timing.FirstToken}, {"first_packet", t.Timing.FirstPacket}} {
			if sg.d > 0 {
				turn.Stages = append(turn.Stages, console.Stage{Name: sg.name, Latency: sg.d})
			}
		}
		st.Turns = append(st.Turns, turn)
	}
	return st
}

// Say makes an NPC speak exact words in the guild's session.
func (m *Manager) Say(ctx context.Context, guildID, npcID, text string) error {
	r := m.get(guildID)
	if r == nil {
		return errors.New("no voice session is running; start one with /session start")
	}
	return r.s.Say(ctx, npcID, text)
}

var _ bot.Undoer = (*Manager)(nil)

// Undo withdraws the last NPC reply in the guild's running session (see
// table.Session.Undo).
func (m *Manager) Undo(ctx context.Context, guildID string) (bot.Undone, bool, error) {
	r := m.get(guildID)
	if r == nil {
		return bot.Undone{}, false, nil
	}
	u, err := r.s.Undo(ctx)
	if u.NPCID == "" {
		return bot.Undone{}, true, err
	}
	return bot.Undone{NPCName: r.s.Cast().NPCName(u.NPCID), Reply: u.Reply, Interrupted: u.Interrupted}, true, err
}

var _ bot.ReplyUndoer = (*Manager)(nil)

// UndoReply withdraws the reply named replyID in the guild's running
// session if it is still the latest (see table.Session.UndoReply).
func (m *Manager) UndoReply(ctx context.Context, guildID, replyID string) (bot.Undone, bool, error) {
	r := m.get(guildID)
	if r == nil {
		return bot.Undone{}, false, nil
	}
	u, err := r.s.UndoReply(ctx, replyID)
	switch {
	case errors.Is(err, table.ErrNotLastReply):
		err = fmt.Errorf("%w: %w", bot.ErrReplyNotLatest, err)
	case errors.Is(err, table.ErrNothingToUndo):
		err = fmt.Errorf("%w: %w", bot.ErrReplyGone, err)
	}
	if u.NPCID == "" {
		return bot.Undone{}, true, err
	}
	return bot.Undone{NPCName: r.s.Cast().NPCName(u.NPCID), Reply: u.Reply, Interrupted: u.Interrupted}, true, err
}

// Forget removes a player's words from the guild's running session.
func (m *Manager) Forget(ctx context.Context, guildID, userID string, erase func(ctx context.Context) error) (memory.ForgetReport, bool, error) {
	r := m.get(guildID)
	if r == nil {
		return memory.ForgetReport{}, false, nil
	}
	rep, err := r.s.Forget(ctx, userID, erase)
	return rep, true, err
}

var _ bot.SpoolForgetter = (*Manager)(nil)

// ForgetSpooled forgets a player in the outage spool an ended session of
// the campaign left in the state directory, and runs erase (queued in the
// spool while the database is unreachable); see guard.ForgetSpooled.
func (m *Manager) ForgetSpooled(ctx context.Context, campaign, userID string, erase func(ctx context.Context) error) (memory.ForgetReport, error) {
	if m.cfg.Settings.StateDir == "" {
		return memory.ForgetReport{}, erase(ctx)
	}
	res, err := guard.ForgetSpooled(ctx, table.SpoolDir(m.cfg.Settings.StateDir, campaign), userID, m.clk.Now(), erase)
	return memory.ForgetReport{Spooled: res.Spooled, Deferred: res.Deferred}, err
}

// Close ends every session (flushing transcripts) and waits for background
// processing, which it cancels when ctx is done.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	var guilds []string
	for g, r := range m.sessions {
		if r != nil {
			guilds = append(guilds, g)
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, g := range guilds {
		if err := m.end(ctx, g, "glyphoxa is shutting down"); err != nil {
			errs = append(errs, fmt.Errorf("guild %s: %w", g, err))
		}
	}
	done := make(chan struct{})
	go func() { m.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.cancel()
		<-done
		errs = append(errs, fmt.Errorf("background processing cut short: %w", ctx.Err()))
	}
	m.cancel()
	return errors.Join(errs...)
}
