package bot

import (
	"fmt"
	"testing"
)

// TestSeenIDsForgetsTheOldest: an id is seen once; the ring forgets the
// oldest id after recentInteractions others, and never more than that.
func TestSeenIDsForgetsTheOldest(t *testing.T) {
	t.Parallel()
	var s seenIDs
	if !s.first("a") || s.first("a") {
		t.Fatal("an id is new once, then seen")
	}
	for n := range recentInteractions - 1 {
		if !s.first(fmt.Sprint(n)) {
			t.Fatalf("id %d reported seen", n)
		}
	}
	if s.first("a") {
		t.Fatal("the oldest id was forgotten before the ring was full")
	}
	if !s.first("x") || !s.first("a") {
		t.Fatal("the oldest id is forgotten once another takes its place")
	}
	if len(s.ids) != recentInteractions {
		t.Fatalf("remembers %d ids, want %d", len(s.ids), recentInteractions)
	}
}
