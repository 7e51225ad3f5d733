package npc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestFloorTakesTurnsInOrder(t *testing.T) {
	var f Floor
	release, err := f.Acquire(context.Background(), "grimjaw")
	if err != nil || f.Speaking() != "grimjaw" {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for _, npc := range []string{"elara", "brannoc"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rel, err := f.Acquire(context.Background(), npc)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, npc)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			rel()
		}()
		// Make the queue order deterministic.
		for {
			f.mu.Lock()
			n := len(f.waiting)
			f.mu.Unlock()
			if n > 0 && (npc == "elara" && n == 1 || npc == "brannoc" && n == 2) {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	mu.Lock()
	if len(order) != 0 {
		t.Fatalf("an NPC spoke over grimjaw: %v", order)
	}
	mu.Unlock()
	release()
	release() // releasing twice is harmless
	wg.Wait()
	if len(order) != 2 || order[0] != "elara" || order[1] != "brannoc" || f.Speaking() != "" {
		t.Fatalf("order %v, holder %q", order, f.Speaking())
	}
}

func TestFloorWaitCanBeAbandoned(t *testing.T) {
	var f Floor
	release, _ := f.Acquire(context.Background(), "grimjaw")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := f.Acquire(ctx, "elara"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	release()
	if f.Speaking() != "" {
		t.Fatalf("the abandoned waiter holds the floor")
	}
	r2, err := f.Acquire(context.Background(), "brannoc")
	if err != nil || f.Speaking() != "brannoc" {
		t.Fatal(err)
	}
	r2()
}
