package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// Guild binds a Discord guild to a campaign.
type Guild struct {
	ID       string
	Campaign string
	// TextChannelID receives session announcements; empty means the channel
	// the session was started from.
	TextChannelID string
	// DMRoleIDs and DMUserIDs may use DM commands; members with the
	// Administrator permission always may.
	DMRoleIDs []string
	DMUserIDs []string
	// NarratorNPC speaks recaps delivered in voice.
	NarratorNPC string
}

// Config configures a Bot.
type Config struct {
	Token  string
	Guilds []Guild
	// ShardID and ShardCount split guilds across processes (Discord's
	// gateway sharding); zero ShardCount means one shard.
	ShardID, ShardCount int
	// ConsoleURL is the web console's address (console.public_url), for
	// links to a session's lines; empty: no links.
	ConsoleURL string
	Logger     *slog.Logger
}

// Deps are the bot's collaborators. Door is required; the others are
// optional and the commands that need them say so when they are missing.
type Deps struct {
	// Door opens the campaigns' memory, each command's handle bound to the
	// viewer of the member who runs it.
	Door *memaccess.Door
	// RecapLLM writes recaps; without it recaps are made of key lines.
	RecapLLM llm.Streamer
	Searcher SemanticSearcher
	Voice    VoiceSessions
	// Claims decides which process answers a guild when several share the
	// database (nil: this one answers every guild it is bound to).
	Claims GuildClaims
	// Reprocess rebuilds a session's chunks after lines were deleted or
	// declared non-canon.
	Reprocess func(ctx context.Context, campaign, sessionID string) error
}

// Bot is a running Discord bot.
type Bot struct {
	cfg   Config
	deps  Deps
	log   *slog.Logger
	sess  *discordgo.Session
	own   bool // whether Close closes sess
	state *runtimeState

	ctx      context.Context
	cancel   context.CancelFunc
	inflight sync.WaitGroup
	removers []func()

	regMu      sync.Mutex
	registered map[string]bool // guild id → commands registered

	handlers map[string]handler // command path → role and handler

	seen seenIDs // the interactions handled lately, to run each once
	// acks holds how the interactions in progress were acknowledged
	// (interaction id → acked), so that their answers edit the
	// acknowledged response.
	acks sync.Map
	// handled, when set (by tests), is told each interaction's id once
	// its handler returned.
	handled func(id string)
	// clock times the watch on deferred replies (see watch).
	clock clock.Clock
}

// Option adjusts a Bot.
type Option func(*Bot)

// WithSession uses an existing discordgo session (tests point one at a fake
// Discord) instead of creating one from the token. The caller closes it.
func WithSession(s *discordgo.Session) Option { return func(b *Bot) { b.sess, b.own = s, false } }

// New returns a bot; Open connects it.
func New(cfg Config, deps Deps, opts ...Option) (*Bot, error) {
	if deps.Door == nil {
		return nil, errors.New("bot: a memory door is required (Deps.Door)")
	}
	seen := map[string]bool{}
	for i, g := range cfg.Guilds {
		if g.ID == "" || g.Campaign == "" {
			return nil, fmt.Errorf("bot: guild binding %d needs a guild id and a campaign", i)
		}
		if seen[g.ID] {
			return nil, fmt.Errorf("bot: guild %s is bound twice", g.ID)
		}
		seen[g.ID] = true
	}
	b := &Bot{cfg: cfg, deps: deps, log: cfg.Logger, state: newRuntimeState(), registered: map[string]bool{},
		handlers: commandHandlers(), clock: clock.Real()}
	if b.log == nil {
		b.log = slog.Default()
	}
	for _, o := range opts {
		o(b)
	}
	if b.sess == nil {
		if strings.TrimSpace(cfg.Token) == "" {
			return nil, errors.New("bot: no Discord token: set discord.token or GLYPHOXA_DISCORD_TOKEN")
		}
		s, err := discordgo.New("Bot " + cfg.Token)
		if err != nil {
			return nil, fmt.Errorf("bot: %w", err)
		}
		b.sess, b.own = s, true
	}
	BoundRateLimits(b.sess, b.log)
	b.sess.Identify.Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildVoiceStates
	if cfg.ShardCount > 1 {
		b.sess.ShardID, b.sess.ShardCount = cfg.ShardID, cfg.ShardCount
	}
	b.sess.StateEnabled = true
	return b, nil
}

// Session is the bot's discordgo session (for the voice transport).
func (b *Bot) Session() *discordgo.Session { return b.sess }

// Open connects to Discord and starts answering.
func (b *Bot) Open(ctx context.Context) error {
	b.ctx, b.cancel = context.WithCancel(context.WithoutCancel(ctx))
	b.removers = append(b.removers,
		b.sess.AddHandler(func(s *discordgo.Session, r *discordgo.Ready) { b.onReady(r) }),
		b.sess.AddHandler(func(s *discordgo.Session, g *discordgo.GuildCreate) { b.onGuild(g.Guild) }),
		b.sess.AddHandler(func(s *discordgo.Session, i *discordgo.InteractionCreate) { b.onInteraction(i.Interaction) }),
		b.sess.AddHandler(func(s *discordgo.Session, v *discordgo.VoiceStateUpdate) { b.onVoiceState(v) }),
	)
	if err := b.sess.Open(); err != nil {
		b.cancel()
		return fmt.Errorf("connecting to Discord: %w", err)
	}
	return nil
}

// Close stops answering, ends running voice sessions (flushing their
// transcripts), waits for interactions in progress and disconnects.
func (b *Bot) Close(ctx context.Context) error {
	for _, r := range b.removers {
		r()
	}
	var errs []error
	if b.deps.Voice != nil {
		for _, g := range b.state.guildsWithSessions() {
			if err := b.deps.Voice.End(ctx, g); err != nil {
				errs = append(errs, fmt.Errorf("ending the session of guild %s: %w", g, err))
			}
			b.running(g, nil)
		}
	}
	done := make(chan struct{})
	go func() { b.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("waiting for interactions in progress: %w", ctx.Err()))
	}
	if b.cancel != nil {
		b.cancel()
	}
	if b.own {
		if err := b.sess.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (b *Bot) onReady(r *discordgo.Ready) {
	b.log.Info("connected to Discord", "user", r.User.Username, "guilds", len(r.Guilds))
}

// onGuild registers the commands in a bound guild (bulk overwrite: stale
// commands disappear).
func (b *Bot) onGuild(g *discordgo.Guild) {
	if _, ok := b.guild(g.ID); !ok {
		return
	}
	b.regMu.Lock()
	defer b.regMu.Unlock()
	if b.registered[g.ID] {
		return
	}
	appID := b.sess.State.User.ID
	if b.sess.State.Application != nil && b.sess.State.Application.ID != "" {
		appID = b.sess.State.Application.ID
	}
	if _, err := b.sess.ApplicationCommandBulkOverwrite(appID, g.ID, commandSpecs()); err != nil {
		b.log.Error("registering slash commands", "guild", g.ID, "err", err)
		return
	}
	b.registered[g.ID] = true
	b.log.Info("slash commands registered", "guild", g.ID)
}

// guild returns the binding of a guild.
func (b *Bot) guild(id string) (Guild, bool) {
	for _, g := range b.cfg.Guilds {
		if g.ID == id {
			return g, true
		}
	}
	return Guild{}, false
}

// campaign opens the campaign bound to a guild, as viewer v reads it:
// every read through the handle returns only what v may see, and a
// player's handle cannot be re-bound to see more. Only the DM's handle
// creates the campaign when it is new; a player's reports that it has no
// memory yet.
func (b *Bot) campaign(ctx context.Context, guildID string, v memory.Viewer) (*memaccess.Campaign, Guild, error) {
	g, ok := b.guild(guildID)
	if !ok {
		return nil, g, errUnbound
	}
	c, err := b.deps.Door.Open(ctx, g.Campaign, v)
	switch {
	case err == nil:
		return c, g, nil
	case errors.Is(err, memory.ErrNotFound) && v.Role != memory.RoleDM:
		return nil, g, errNoMemoryYet
	}
	return nil, g, err
}

// viewerOf is who a member reads the campaign as: the DM's viewer for a
// member IsDM names, the member's own player viewer for everyone else
// (what any player sees, and of the lines said at the table those their
// character witnessed).
func viewerOf(g Guild, m *discordgo.Member) memory.Viewer {
	if isDM(g, m) {
		return memory.DMViewer()
	}
	if m != nil && m.User != nil {
		return memory.PlayerViewerOf(m.User.ID)
	}
	return memory.PlayerViewer()
}

// campaignFor opens the guild's campaign as the member behind i reads it.
func (b *Bot) campaignFor(ctx context.Context, g Guild, i *discordgo.Interaction) (*memaccess.Campaign, error) {
	c, _, err := b.campaign(ctx, g.ID, viewerOf(g, i.Member))
	return c, err
}

var errNoMemoryYet = errors.New("this server's campaign has no memory yet: the DM starts it with /session start")

var errUnbound = errors.New("this server has no campaign: add it under discord.guilds in the configuration")

// isDM reports whether the member may use DM commands in the guild.
func isDM(g Guild, m *discordgo.Member) bool {
	if m == nil || m.User == nil {
		return false
	}
	return IsDM(g, m.User.ID, m.Permissions, m.Roles)
}

// IsDM is the rule that decides who may use DM commands in a guild: a member
// with the Administrator permission, one listed in DMUserIDs, or one holding
// a role of DMRoleIDs. Slash commands and the web console both apply it.
func IsDM(g Guild, userID string, permissions int64, roles []string) bool {
	if userID == "" {
		return false
	}
	if permissions&discordgo.PermissionAdministrator != 0 {
		return true
	}
	if slices.Contains(g.DMUserIDs, userID) {
		return true
	}
	for _, r := range roles {
		if slices.Contains(g.DMRoleIDs, r) {
			return true
		}
	}
	return false
}

// interactionTimeout bounds the work of one interaction (deferred replies
// may take up to 15 minutes on Discord's side; ours take far less): its
// handler's context ends then, and a deferred reply still unanswered
// watchGrace later is answered by the bot (see watch).
const interactionTimeout = 2 * time.Minute

// watchGrace is how long after interactionTimeout a handler that heeds
// its context has to answer by itself.
const watchGrace = 15 * time.Second
