package voicesession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/lifecycle/clock"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Defaults of Config.
const (
	DefaultLeaveWhenEmpty = 5 * time.Minute
	DefaultMaxLength      = 8 * time.Hour
	// DefaultTranscribeTimeout bounds one speech-to-text request.
	DefaultTranscribeTimeout = 30 * time.Second
	// DefaultTurnTimeout bounds one NPC turn, from the utterance to the
	// last sentence spoken.
	DefaultTurnTimeout = 2 * time.Minute
)

// Config configures a Manager. Store, Link, STT and Table are required.
type Config struct {
	Store *postgres.Store
	Link  Link
	STT   Transcriber
	// Table assembles a campaign's parts at session start (its names,
	// corrector and NPC agent), so edits since the last session count.
	Table func(ctx context.Context, camp *postgres.Campaign) (Table, error)
	// Speaker voices NPC replies; without one, replies are posted in the
	// session's text channel.
	Speaker Speaker
	// Recorder opens the session log writer of a session; the default
	// writes straight to the campaign's session log.
	Recorder func(ctx context.Context, camp *postgres.Campaign, sessionID string) (Recorder, error)
	// Audio tunes the per-speaker lanes (end of turn, maximum utterance,
	// barge-in hold). Its handlers are set by the session.
	Audio audio.Config
	// LeaveWhenEmpty ends a session whose channel has had no human in it
	// this long (default 5 min); MaxLength ends any session (default 8 h).
	LeaveWhenEmpty, MaxLength time.Duration
	// UserName is a user's display name in a guild; nil uses the id.
	UserName func(guildID, userID string) string
	// AfterSession runs in the background once a session ended (chunking,
	// embedding, fact extraction).
	AfterSession func(ctx context.Context, campaign, sessionID string) error
	Observer     Observer
	Logger       *slog.Logger
	Clock        clock.Clock
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
	sessions map[string]*session // by guild id
}

var _ bot.VoiceSessions = (*Manager)(nil)

// New returns a manager; Close stops it.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("voicesession: a memory store is required")
	case cfg.Link == nil:
		return nil, errors.New("voicesession: a voice link is required")
	case cfg.STT == nil:
		return nil, errors.New("voicesession: a speech-to-text engine is required (providers.stt)")
	case cfg.Table == nil:
		return nil, errors.New("voicesession: a campaign table is required")
	}
	if cfg.LeaveWhenEmpty <= 0 {
		cfg.LeaveWhenEmpty = DefaultLeaveWhenEmpty
	}
	if cfg.MaxLength <= 0 {
		cfg.MaxLength = DefaultMaxLength
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.UserName == nil {
		cfg.UserName = func(_, userID string) string { return userID }
	}
	if cfg.Recorder == nil {
		cfg.Recorder = func(_ context.Context, camp *postgres.Campaign, _ string) (Recorder, error) {
			return directRecorder{camp.Sessions()}, nil
		}
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if _, err := audio.NewRouter(cfg.Audio); err != nil {
		return nil, fmt.Errorf("voicesession: %w", err)
	}
	m := &Manager{cfg: cfg, log: cfg.Logger, clk: clock.OrReal(cfg.Clock), sessions: map[string]*session{}}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	return m, nil
}

// Start joins the voice channel and starts recording.
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

	s, err := m.open(ctx, req)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		delete(m.sessions, req.GuildID)
		return err
	}
	m.sessions[req.GuildID] = s
	return nil
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
	s := m.sessions[guildID]
	if s == nil {
		m.mu.Unlock()
		return errors.New("no session is running in this server")
	}
	delete(m.sessions, guildID)
	m.mu.Unlock()

	err := s.stop(ctx)
	if reason != "" && s.req.Ended != nil {
		s.req.Ended(reason)
	}
	if m.cfg.AfterSession != nil {
		m.bg.Add(1)
		go func() {
			defer m.bg.Done()
			if err := m.cfg.AfterSession(m.ctx, s.camp.ID(), s.id); err != nil {
				m.log.Error("processing the session", "campaign", s.camp.ID(), "session", s.id, "err", err)
			}
		}()
	}
	return err
}

// endLater ends a session from one of its own goroutines.
func (m *Manager) endLater(guildID, reason string) {
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(m.ctx), time.Minute)
		defer cancel()
		if err := m.end(ctx, guildID, reason); err != nil {
			m.log.Warn("ending a session", "guild", guildID, "reason", reason, "err", err)
		}
	}()
}

// Status describes a guild's running session.
func (m *Manager) Status(guildID string) (bot.SessionStatus, bool) {
	m.mu.Lock()
	s := m.sessions[guildID]
	m.mu.Unlock()
	if s == nil {
		return bot.SessionStatus{}, false
	}
	return s.status(), true
}

// Say makes an NPC speak exact words in the guild's session.
func (m *Manager) Say(ctx context.Context, guildID, npcID, text string) error {
	m.mu.Lock()
	s := m.sessions[guildID]
	m.mu.Unlock()
	if s == nil {
		return errors.New("no voice session is running; start one with /session start")
	}
	return s.say(ctx, npcID, text)
}

// Close ends every session (flushing transcripts) and waits for background
// processing, which it cancels when ctx is done.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	var guilds []string
	for g, s := range m.sessions {
		if s != nil {
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

// directRecorder writes each line straight to the session log.
type directRecorder struct{ l1 memory.SessionStore }

func (d directRecorder) Record(ctx context.Context, e memory.TranscriptEntry) error {
	_, err := d.l1.WriteEntry(ctx, e)
	return err
}

func (directRecorder) Close(context.Context) error { return nil }

type nopObserver struct{}

func (nopObserver) ObserveStage(string, time.Duration) {}
func (nopObserver) CountTurn(string)                   {}
func (nopObserver) SessionStarted()                    {}
func (nopObserver) SessionEnded()                      {}
