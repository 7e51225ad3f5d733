package continuity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// DefaultEvery is how often a Checker looks at the change log.
const DefaultEvery = 2 * time.Second

// Source is where canon comes from: the campaign's change log and its
// facts. [CampaignSource] reads a campaign through the memory door.
type Source interface {
	// LastChange is the newest change of the campaign's change log.
	LastChange(ctx context.Context) (int64, error)
	// Load reads canon.
	Load(ctx context.Context) (*Canon, error)
}

// CampaignSource reads canon from a campaign opened for the DM (canon
// includes the secret facts: cards are for the DM only).
func CampaignSource(c *access.Campaign) Source { return campaignSource{c} }

type campaignSource struct{ c *access.Campaign }

func (s campaignSource) LastChange(ctx context.Context) (int64, error) { return s.c.LastChange(ctx) }

// maxFacts bounds the active facts canon reads.
const maxFacts = 100000

func (s campaignSource) Load(ctx context.Context) (*Canon, error) {
	if !s.c.DM() {
		return nil, fmt.Errorf("%w: canon is read for the DM", memory.ErrForbidden)
	}
	g := s.c.Graph()
	all, err := g.FindEntities(ctx, memory.EntityFilter{IncludeRetired: true})
	if err != nil {
		return nil, fmt.Errorf("reading canon's entities: %w", err)
	}
	live, err := g.FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return nil, fmt.Errorf("reading canon's entities: %w", err)
	}
	alive := make(map[string]bool, len(live))
	for _, e := range live {
		alive[e.ID] = true
	}
	ents := make([]Entity, 0, len(all))
	for _, e := range all {
		ce := Entity{Entity: e}
		if !alive[e.ID] {
			r, ok, err := g.RetiredEntity(ctx, e.ID)
			if err != nil {
				return nil, fmt.Errorf("reading why %q was retired: %w", e.ID, err)
			}
			ce.Retired, ce.RetiredReason = ok, r.Reason
		}
		ents = append(ents, ce)
	}
	facts, err := g.FindFacts(ctx, access.FactQuery{Statuses: []memory.FactStatus{memory.StatusActive}, Limit: maxFacts})
	if err != nil {
		return nil, fmt.Errorf("reading canon's facts: %w", err)
	}
	rels := make([]memory.Relationship, len(facts))
	for i, f := range facts {
		rels[i] = f.Relationship
	}
	return NewCanon(ents, rels), nil
}

// Config configures a Checker.
type Config struct {
	// Source is where canon comes from (required).
	Source Source
	// Every is how often the change log is looked at (default
	// DefaultEvery): canon is reloaded when it moved.
	Every  time.Duration
	Clock  clock.Clock
	Logger *slog.Logger
}

// Checker holds a campaign's canon in memory, kept current from the change
// log, and checks lines against it. Its methods are safe for concurrent
// use; Run's caller owns the refresh loop.
type Checker struct {
	cfg   Config
	log   *slog.Logger
	canon atomic.Pointer[Canon]

	mu     sync.Mutex // serialises Refresh
	seen   int64      // the change canon was read at
	loaded bool
}

// New returns a checker; Refresh (or Run) loads canon. It checks nothing
// until canon was loaded once.
func New(cfg Config) (*Checker, error) {
	if cfg.Source == nil {
		return nil, errors.New("continuity: a canon source is required")
	}
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Checker{cfg: cfg, log: cfg.Logger}, nil
}

// Refresh reloads canon when the change log moved since it was read (or it
// never was). It reports whether it reloaded. On an error the canon held
// stays in use.
func (c *Checker) Refresh(ctx context.Context) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	last, err := c.cfg.Source.LastChange(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the change log: %w", err)
	}
	if c.loaded && last == c.seen {
		return false, nil
	}
	canon, err := c.cfg.Source.Load(ctx)
	if err != nil {
		return false, err
	}
	c.canon.Store(canon)
	c.seen, c.loaded = last, true
	return true, nil
}

// Run refreshes canon every Config.Every until ctx ends. A refresh that
// fails (the database is down) is logged once per outage; the canon held
// stays in use, so lines are still checked.
func (c *Checker) Run(ctx context.Context) {
	failing := false
	for {
		_, err := c.Refresh(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			c.log.Warn("continuity: canon cannot be refreshed; lines are checked against the canon held", "err", err)
			failing = true
		case err == nil && failing:
			c.log.Info("continuity: canon is refreshed again")
			failing = false
		}
		t := c.cfg.Clock.NewTimer(c.cfg.Every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// Canon is the canon held (nil before the first load).
func (c *Checker) Canon() *Canon { return c.canon.Load() }

// Check checks a line said by speaker (a display name) against the canon
// held: see Canon.Check.
func (c *Checker) Check(speaker, text string) []Finding { return c.canon.Load().Check(speaker, text) }
