package realtime

import (
	"fmt"
	"sync"
	"time"
)

// Budget bounds the audio minutes one or more sessions may use: the audio
// sent to the model plus the audio it sends back, which is what realtime
// models bill. Give every NPC's session of one game session the same
// Budget (and the sessions re-dialled after an idle close) to cap the
// game session's cost. It is safe for concurrent use.
type Budget struct {
	mu   sync.Mutex
	max  time.Duration
	used time.Duration
}

// NewBudget returns a budget of max audio; max ≤ 0 means no limit.
func NewBudget(max time.Duration) *Budget { return &Budget{max: max} }

// Spend takes d from the budget. When the budget cannot cover it, nothing
// is taken and the error wraps [ErrAudioLimit].
func (b *Budget) Spend(d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max > 0 && b.used+d > b.max {
		return fmt.Errorf("%w: %s of %s used, %s more refused", ErrAudioLimit, b.used.Round(time.Millisecond), b.max, d.Round(time.Millisecond))
	}
	b.used += d
	return nil
}

// Used is the audio spent so far.
func (b *Budget) Used() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Remaining is the audio left, or -1 for an unlimited budget.
func (b *Budget) Remaining() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.max <= 0 {
		return -1
	}
	return b.max - b.used
}
