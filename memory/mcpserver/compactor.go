package mcpserver

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// DefaultCompactEvery is how often a Compactor checks the token budget.
const DefaultCompactEvery = 30 * time.Second

// Compactor keeps one campaign's memory-tool view within its token budget:
// every Interval it runs a compaction pass on both levels (see
// access.Campaign.CompactKG). Whoever calls Start calls Close.
type Compactor struct {
	// Door opens the campaign for the DM (memory/access).
	Door     *access.Door
	Campaign string
	// Interval between passes (default DefaultCompactEvery).
	Interval time.Duration
	// Clock times the passes and dates them (default the real clock).
	Clock  clock.Clock
	Logger *slog.Logger
	// OnPass, if set, receives each pass's reports (tests, metrics).
	OnPass func([]access.Compaction, error)

	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start begins the passes; the first runs one Interval from now.
func (c *Compactor) Start(ctx context.Context) error {
	if c.Door == nil || c.Campaign == "" {
		return errors.New("compactor: the memory door and a campaign are required")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return errors.New("compactor: already started")
	}
	if c.Interval <= 0 {
		c.Interval = DefaultCompactEvery
	}
	clk := clock.OrReal(c.Clock)
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for {
			t := clk.NewTimer(c.Interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			reps, err := c.Pass(ctx, clk.Now())
			if err != nil && ctx.Err() == nil {
				log.Warn("memory-tool compaction failed", "campaign", c.Campaign, "err", err)
			}
			for _, r := range reps {
				if r.Archived > 0 || r.Deleted > 0 {
					log.Info("memory-tool compaction", "campaign", c.Campaign, "level", r.Level, "tokens_before", r.Before,
						"tokens_after", r.After, "limit", r.Limit, "archived", r.Archived, "deleted", r.Deleted)
				}
			}
			if c.OnPass != nil {
				c.OnPass(reps, err)
			}
		}
	}()
	return nil
}

// Pass runs one compaction pass on both levels as of now.
func (c *Compactor) Pass(ctx context.Context, now time.Time) ([]access.Compaction, error) {
	camp, err := c.Door.Open(ctx, c.Campaign, memory.DMViewer())
	if err != nil {
		return nil, err
	}
	var reps []access.Compaction
	for _, l := range []access.KGLevel{access.KGCampaign, access.KGDM} {
		r, err := camp.CompactKG(ctx, l, now)
		if err != nil {
			return reps, err
		}
		reps = append(reps, r)
	}
	return reps, nil
}

// Close stops the passes and waits for a running one to end. It is safe to
// call more than once.
func (c *Compactor) Close() error {
	c.mu.Lock()
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
	return nil
}
