package npc

import (
	"context"
	"sync"
)

// Floor makes NPCs take turns: one NPC speaks at a time, the others wait
// their turn in order, and no NPC interrupts another. Players can still
// interrupt (barge-in is the voice pipeline's business).
type Floor struct {
	mu      sync.Mutex
	holder  string
	waiting []*floorWaiter
}

type floorWaiter struct {
	npc   string
	ready chan struct{}
}

// Acquire waits until npcID may speak and returns the function that gives
// the floor back. It returns ctx's error if the wait is abandoned.
func (f *Floor) Acquire(ctx context.Context, npcID string) (release func(), err error) {
	f.mu.Lock()
	if f.holder == "" && len(f.waiting) == 0 {
		f.holder = npcID
		f.mu.Unlock()
		return f.releaser(), nil
	}
	w := &floorWaiter{npc: npcID, ready: make(chan struct{})}
	f.waiting = append(f.waiting, w)
	f.mu.Unlock()
	select {
	case <-w.ready:
		return f.releaser(), nil
	case <-ctx.Done():
		f.mu.Lock()
		defer f.mu.Unlock()
		select {
		case <-w.ready:
			// Handed the floor just as we gave up: pass it on.
			f.passLocked()
		default:
			for k, x := range f.waiting {
				if x == w {
					f.waiting = append(f.waiting[:k], f.waiting[k+1:]...)
					break
				}
			}
		}
		return nil, ctx.Err()
	}
}

// Speaking returns the NPC holding the floor, or "".
func (f *Floor) Speaking() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.holder
}

func (f *Floor) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.passLocked()
		})
	}
}

// passLocked gives the floor to the next waiter, if any.
func (f *Floor) passLocked() {
	f.holder = ""
	if len(f.waiting) == 0 {
		return
	}
	next := f.waiting[0]
	f.waiting = f.waiting[1:]
	f.holder = next.npc
	close(next.ready)
}
