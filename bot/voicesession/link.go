package voicesession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/conn"
)

// GatewayLink joins voice channels through the main gateway (a
// bot.Joiner) and connects with glyphoxa's voice transport. It follows the
// bot when a human moves it or the guild's voice server changes.
type GatewayLink struct {
	joiner *bot.Joiner
	cfg    conn.Config
	log    *slog.Logger

	// holder, if set, says for a guild whether this process still holds
	// its claim (FollowWhileHeld).
	holder func(guildID string) func() bool

	mu      sync.Mutex
	follows map[string]*follow
}

type follow struct {
	stop context.CancelFunc
	done chan struct{}
}

// NewGatewayLink returns a link; cfg configures every connection (its
// Rejoin is set per guild).
func NewGatewayLink(j *bot.Joiner, cfg conn.Config) *GatewayLink {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &GatewayLink{joiner: j, cfg: cfg, log: log, follows: map[string]*follow{}}
}

// FollowWhileHeld makes the link follow the bot to a new voice session of
// a guild only while holder(guildID) says this process holds the guild's
// claim (lifecycle/lease Set.Holder). The bot user is one for every
// glyphoxa process, so when another process takes a guild over and joins
// its channel, every process sees the bot's voice session change: one that
// stalled past its lease and woke up followed it, and Discord, which keeps
// one voice connection per user and guild, cut the new owner's. Call it
// before the first Join.
func (l *GatewayLink) FollowWhileHeld(holder func(guildID string) func() bool) { l.holder = holder }

// Join joins channelID and returns the connection once audio can flow.
func (l *GatewayLink) Join(ctx context.Context, guildID, channelID string) (table.Voice, error) {
	l.mu.Lock()
	if _, ok := l.follows[guildID]; ok {
		l.mu.Unlock()
		return nil, fmt.Errorf("already connected to a voice channel in guild %s", guildID)
	}
	l.mu.Unlock()
	// Watched from before the join: a member who moves the bot while it
	// joins or connects is followed once it is connected.
	moves := l.joiner.Watch(guildID)
	p, err := l.joiner.Join(ctx, guildID, channelID)
	if err != nil {
		l.joiner.Unwatch(guildID)
		return nil, err
	}
	cfg := l.cfg
	cfg.Rejoin = l.joiner.Rejoin(guildID)
	c, err := conn.Dial(ctx, p, cfg)
	if err != nil {
		if lerr := l.joiner.Leave(guildID); lerr != nil {
			err = errors.Join(err, lerr)
		}
		return nil, err
	}
	held := func() bool { return true }
	if l.holder != nil {
		held = l.holder(guildID)
	}
	fctx, stop := context.WithCancel(context.Background())
	f := &follow{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for {
			select {
			case <-fctx.Done():
				return
			case p, ok := <-moves:
				if !ok {
					return
				}
				if !held() {
					l.log.Warn("not following the bot to a new voice session: another glyphoxa process holds the guild now",
						"guild", guildID, "channel", p.ChannelID)
					continue
				}
				l.log.Info("following the bot to a new voice session", "guild", guildID, "channel", p.ChannelID)
				if err := c.Switch(fctx, p); err != nil && fctx.Err() == nil {
					l.log.Error("switching voice sessions", "guild", guildID, "err", err)
				}
			}
		}
	}()
	l.mu.Lock()
	l.follows[guildID] = f
	l.mu.Unlock()
	return c, nil
}

// Drop stops following the guild's voice session without leaving the
// channel: another glyphoxa process, with the same bot user, owns it now.
func (l *GatewayLink) Drop(guildID string) {
	l.mu.Lock()
	f := l.follows[guildID]
	delete(l.follows, guildID)
	l.mu.Unlock()
	if f != nil {
		f.stop()
		<-f.done
	}
	l.joiner.Unwatch(guildID)
}

// Leave stops following the guild's voice session and leaves the channel.
func (l *GatewayLink) Leave(guildID string) error {
	l.mu.Lock()
	f := l.follows[guildID]
	delete(l.follows, guildID)
	l.mu.Unlock()
	if f != nil {
		f.stop()
		<-f.done
	}
	l.joiner.Unwatch(guildID)
	return l.joiner.Leave(guildID)
}
