package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
)

// Names of serve's claims (lifecycle/lease).
const (
	guildClaimPrefix      = "guild/"      // a guild: its commands and its voice session
	backgroundClaimPrefix = "background/" // a campaign's compaction
	extractionClaimPrefix = "extraction/" // a campaign's unfinished extraction
)

func guildClaim(guildID string) string { return guildClaimPrefix + guildID }

func shardClaim(id, count int) string { return fmt.Sprintf("shard/%dof%d", id, count) }

// guildShard is the Discord shard that receives a guild's events.
func guildShard(guildID string, count int) (int, bool) {
	id, err := strconv.ParseUint(guildID, 10, 64)
	if err != nil || count <= 1 {
		return 0, err == nil
	}
	return int((id >> 22) % uint64(count)), true
}

// guildClaims are serve's claims on its guilds among the processes
// sharing the database. It implements bot.GuildClaims; its takeover loop
// resumes the sessions of guilds whose owner stopped renewing its claim.
type guildClaims struct {
	set   *lease.Set
	clk   clock.Clock
	log   *slog.Logger
	mine  map[string]bool // guilds bound here (and on this process's shard)
	every time.Duration

	mu  sync.Mutex
	bot *bot.Bot
	// failed counts the failed resumptions of each session (by id).
	failed map[string]int
	// taking serialises, per guild, taking its claim and resuming the
	// session the claim carries (guildLock).
	taking map[string]*sync.Mutex
}

// guildLock is the guild's lock on taking its claim and resuming its
// session. The takeover loop and an interaction's Claim both hold it from
// the take to the end of the resumption: an interaction that arrives while
// the guild's session is being resumed here waits for it. Without it the
// interaction found the claim held and no session yet, and answered "no
// voice session is running" to a session that was only moving, while the
// process the session was leaving could answer it too once it woke (a
// stressed TestServeProcessesShareGuilds saw a command answered twice).
func (c *guildClaims) guildLock(guildID string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.taking[guildID]
	if m == nil {
		m = &sync.Mutex{}
		c.taking[guildID] = m
	}
	return m
}

// resumeAttempts is how many times a process tries to resume a session it
// took over before it drops it from the claim: a first failure may be the
// old owner waking up at that moment (its voice connection, its spool).
const resumeAttempts = 3

var _ bot.GuildClaims = (*guildClaims)(nil)

// newGuildClaims claims the guilds of guilds that land on shard shardID of
// shardCount; lost is told of a guild another process took over.
func newGuildClaims(l *lease.Leases, clk clock.Clock, guilds []bot.Guild, shardID, shardCount int, log *slog.Logger) *guildClaims {
	c := &guildClaims{clk: clock.OrReal(clk), log: log, mine: map[string]bool{}, every: l.TTL() / 3, failed: map[string]int{},
		taking: map[string]*sync.Mutex{}}
	for _, g := range guilds {
		if s, ok := guildShard(g.ID, shardCount); ok && (shardCount <= 1 || s == shardID) {
			c.mine[g.ID] = true
		}
	}
	c.set = l.NewSet(c.lost)
	return c
}

// attach gives the claims the bot they resume sessions in.
func (c *guildClaims) attach(b *bot.Bot) {
	c.mu.Lock()
	c.bot = b
	c.mu.Unlock()
}

func (c *guildClaims) theBot() *bot.Bot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bot
}

// Claim implements bot.GuildClaims. A guild it takes from a process that
// stopped while a session ran there (before the takeover loop came to it)
// has that session resumed first.
func (c *guildClaims) Claim(ctx context.Context, guildID string) (bool, error) {
	l := c.guildLock(guildID)
	l.Lock()
	defer l.Unlock()
	ok, state, err := c.set.Take(ctx, guildClaim(guildID))
	if ok && state != "" && c.resume(ctx, guildID, "", state) != nil && !c.owns(guildID) {
		// Given back: its session is taken over at a later round (by
		// whichever process), and this one does not answer meanwhile.
		return false, err
	}
	return ok, err
}

// resume resumes the session a taken claim carries; one it cannot resume
// is dropped from the claim (so that nobody retries it forever) and
// reported, after resumeAttempts failures (before, the claim is given up
// with its session, and the next round takes it again). One whose outage
// spool the process that ran it still holds open (it is alive: it stalled
// past its lease, and hands the session over, closing its spool, once it
// notices the loss) is never dropped: it waits for that process.
func (c *guildClaims) resume(ctx context.Context, guildID, previous, state string) error {
	b := c.theBot()
	if b == nil {
		return errors.New("the bot is not running yet")
	}
	s, err := bot.ParseClaimedSession(state)
	if err == nil {
		err = b.Resumable(ctx, guildID, s)
	}
	if err == nil {
		c.log.Info("taking over the session of a stopped process", "guild", guildID, "session", s.SessionID, "previous_owner", previous)
		err = b.Resume(ctx, guildID, s)
	}
	if errors.Is(err, bot.ErrSessionEnded) {
		// Its end reached the log after the claim that names it was last
		// written (an end during an outage): nothing to resume.
		c.log.Info("the session of a stopped process has ended; not resuming it", "guild", guildID, "session", s.SessionID, "err", err)
		return c.Running(ctx, guildID, nil)
	}
	retry := false
	if s.SessionID != "" {
		c.mu.Lock()
		if err == nil {
			delete(c.failed, s.SessionID)
		} else {
			c.failed[s.SessionID]++
			retry = c.failed[s.SessionID] < resumeAttempts
		}
		c.mu.Unlock()
	}
	if errors.Is(err, spool.ErrLocked) || retry {
		c.log.Info("could not resume the session of a stopped process yet; taking it over at the next round",
			"guild", guildID, "session", s.SessionID, "previous_owner", previous, "err", err)
		if rerr := c.set.Release(ctx, guildClaim(guildID), true); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("guild %s: %w", guildID, err)
	}
	if err != nil {
		_ = c.Running(ctx, guildID, nil)
		err = fmt.Errorf("guild %s: %w", guildID, err)
		c.log.Warn("could not resume the session of a stopped process", "err", err)
	}
	return err
}

// Running implements bot.GuildClaims.
func (c *guildClaims) Running(ctx context.Context, guildID string, s *bot.ClaimedSession) error {
	state := ""
	if s != nil {
		state = s.Marshal()
	}
	return c.set.SetState(ctx, guildClaim(guildID), state)
}

// owns reports whether this process holds the guild's claim.
func (c *guildClaims) owns(guildID string) bool { return c.set.Holds(guildClaim(guildID)) }

// holder says, for a session starting in the guild, whether this process
// still holds the guild's claim (voicesession.Config.Holder): the session
// records nothing once the claim is lost or its lease expired.
func (c *guildClaims) holder(guildID string) func() bool { return c.set.Holder(guildClaim(guildID)) }

// confirm asks the database whether this process still holds the guild's
// claim (voicesession.Config.Confirm).
func (c *guildClaims) confirm(ctx context.Context, guildID string) (bool, error) {
	err := c.set.Check(ctx, guildClaim(guildID))
	if errors.Is(err, lease.ErrLost) {
		return false, nil
	}
	return err == nil, err
}

// lost hands over the session of a guild another process took over.
func (c *guildClaims) lost(name string, err error) {
	guildID := strings.TrimPrefix(name, guildClaimPrefix)
	c.log.Warn("lost the claim on a guild to another process", "guild", guildID, "err", err)
	if b := c.theBot(); b != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Lost(ctx, guildID); err != nil {
			c.log.Warn("stopping the session of a lost guild", "guild", guildID, "err", err)
		}
	}
}

// takeOver claims the guilds whose owner stopped renewing while a session
// ran there, and resumes those sessions. It reports how many it resumed.
func (c *guildClaims) takeOver(ctx context.Context) (int, error) {
	b := c.theBot()
	if b == nil {
		return 0, nil
	}
	orphans, err := c.set.Leases().Orphans(ctx, guildClaimPrefix)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, o := range orphans {
		guildID := strings.TrimPrefix(o.Name, guildClaimPrefix)
		if !c.mine[guildID] {
			continue
		}
		resumed, err := c.takeOrphan(ctx, guildID, o)
		if err != nil {
			errs = append(errs, err)
		}
		if resumed {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// takeOrphan takes the claim of a guild whose owner stopped renewing it
// and resumes its session, under the guild's lock (guildLock); it reports
// whether the session was resumed here.
func (c *guildClaims) takeOrphan(ctx context.Context, guildID string, o lease.Lease) (bool, error) {
	l := c.guildLock(guildID)
	l.Lock()
	defer l.Unlock()
	ok, state, err := c.set.Take(ctx, o.Name)
	if err != nil {
		return false, err
	}
	if !ok || state == "" {
		return false, nil // another process was quicker
	}
	return c.resume(ctx, guildID, o.Owner, state) == nil, nil // a failure is logged
}

// run takes over orphaned sessions every third of the lease time until ctx
// ends.
func (c *guildClaims) run(ctx context.Context) {
	for {
		if _, err := c.takeOver(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("taking over the sessions of stopped processes", "err", err)
		}
		t := c.clk.NewTimer(c.every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// close gives the guilds up. Their sessions were ended (serve's shutdown
// ends them), so no work stays to resume.
func (c *guildClaims) close(ctx context.Context) error { return c.set.Close(ctx, false) }

// claimed runs job while this process holds the claim name, and leaves it
// to another process otherwise: it tries to take the claim every third of
// the lease time; job's context ends when the claim is lost or ctx ends.
// once says job is done for good when it returns (the claim is then
// released); otherwise it is started again the next time the claim is
// taken. It returns when ctx ends.
func claimed(ctx context.Context, l *lease.Leases, clk clock.Clock, name string, once bool, log *slog.Logger, job func(ctx context.Context)) {
	clk = clock.OrReal(clk)
	for ctx.Err() == nil {
		ls, err := l.Acquire(ctx, name, "")
		var held *lease.HeldError
		switch {
		case errors.As(err, &held):
		case err != nil:
			log.Warn("claiming background work", "claim", name, "err", err)
		default:
			jctx, cancel := context.WithCancel(ctx)
			k := l.Keep(ls, func(err error) {
				log.Warn("lost the claim on background work to another process", "claim", name, "err", err)
				cancel()
			})
			job(jctx)
			cut := jctx.Err() != nil // lost, or ctx ended
			cancel()
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = k.Release(rctx, false)
			rcancel()
			if once && !cut {
				return
			}
		}
		t := clk.NewTimer(l.TTL() / 3)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
	}
}
