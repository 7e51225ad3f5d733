package audio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

// TickInterval is how often [Router.Run] checks silent speakers.
const TickInterval = 20 * time.Millisecond

// Router keeps one [Lane] per speaker and hands each packet to its lane.
// It is safe for concurrent use; the handlers in its Config are called with
// the router locked.
type Router struct {
	mu    sync.Mutex
	cfg   Config
	lanes map[string]*Lane
}

// NewRouter returns a router with cfg's defaults filled in, or an error
// naming the bad field.
func NewRouter(cfg Config) (*Router, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return &Router{cfg: cfg, lanes: map[string]*Lane{}}, nil
}

// Push hands p to its speaker's lane, making the lane on the speaker's
// first packet. An error means p could not be decoded (it wraps
// [ErrBadPacket]) or the lane could not be made; the router and the lane
// keep running either way.
func (r *Router) Push(p Packet) error {
	if p.UserID == "" {
		return fmt.Errorf("%w: packet %d (ssrc %d) has no user id", errBadPacket, p.Sequence, p.SSRC)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lanes[p.UserID]
	if !ok {
		var err error
		if l, err = newLane(p.UserID, &r.cfg); err != nil {
			return err
		}
		r.lanes[p.UserID] = l
	}
	n, err := PacketSamples(p.Opus)
	if err != nil {
		n = FrameSamples * 3 // a bad packet is concealed as 20 ms
	}
	// A packet the lane drops anyway (a duplicate, or one given up as
	// late) costs nothing: a network that delivers packets twice would
	// otherwise spend the speaker's rate on the copies and cut real
	// audio (PROBE29).
	if !l.stale(p) && !l.rate.take(p.Received, l.rateCost(p, n)) {
		l.stats.RateDropped++
		l.drops++
		if r.cfg.OnDrop != nil {
			r.cfg.OnDrop(p.UserID)
		}
		if l.dropLog.IsZero() || p.Received.Sub(l.dropLog) >= time.Minute {
			r.cfg.Logger.Warn("voice packets dropped: the speaker sends faster than real time",
				"user", p.UserID, "dropped", l.drops, "max_rate", r.cfg.MaxRate)
			l.dropLog, l.drops = p.Received, 0
		}
		p.cut = true
	}
	err = l.push(p)
	if err != nil {
		r.cfg.Logger.Warn("voice packet dropped", "user", p.UserID, "seq", p.Sequence, "err", err)
	}
	return err
}

// Tick lets every lane take the time since its last packet as silence once
// it is late by more than TickSlack, ending utterances of speakers who
// stopped sending, and gives up on packets that waited too long for a
// missing one.
func (r *Router) Tick(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lanes {
		if err := l.tick(now); err != nil {
			r.cfg.Logger.Warn("voice packet dropped", "user", l.user, "err", err)
		}
	}
}

// Remove closes a speaker's lane (the user left), finishing an open
// utterance.
func (r *Router) Remove(userID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.lanes[userID]; ok {
		l.close()
		delete(r.lanes, userID)
	}
}

// Stats returns the counters of a speaker's lane.
func (r *Router) Stats(userID string) (Stats, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.lanes[userID]
	if !ok {
		return Stats{}, false
	}
	return l.stats, true
}

// Close finishes every open utterance and forgets the lanes.
func (r *Router) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, l := range r.lanes {
		l.close()
		delete(r.lanes, id)
	}
}

// Run pushes packets until ctx is done or packets is closed, ticking every
// TickInterval on clk (the system clock when nil). Bad packets are logged
// and skipped. On return every open utterance has been finished.
func (r *Router) Run(ctx context.Context, packets <-chan Packet, clk clock.Clock) error {
	clk = clock.OrReal(clk)
	defer r.Close()
	t := clk.NewTimer(TickInterval)
	defer func() { t.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case p, ok := <-packets:
			if !ok {
				return nil
			}
			if err := r.Push(p); err != nil && !errors.Is(err, ErrBadPacket) {
				return err
			}
		case now := <-t.C():
			// Packets that arrived before the tick go first: the tick
			// fills a silent speaker's time with silence, which must not
			// overtake audio already waiting here.
			for drained := false; !drained; {
				select {
				case p, ok := <-packets:
					if !ok {
						return nil
					}
					if err := r.Push(p); err != nil && !errors.Is(err, ErrBadPacket) {
						return err
					}
				default:
					drained = true
				}
			}
			r.Tick(now)
			t = clk.NewTimer(TickInterval)
		}
	}
}
