package access_test

import (
	"context"
	"errors"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestPingEndedByItsCallerLeavesTheDoorOpen: a memory guard pings through
// the door (table sessions, serve's replay of an earlier run's spool), and
// closing the guard cancels a ping under way. That ping fails, but the
// database was not found down: the door stays open for every other reader
// (it was degraded until its own probe came back, and serve's first reads
// after replaying a spool failed at once).
func TestPingEndedByItsCallerLeavesTheDoorOpen(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	d := newDoor(t, s, reconnect.Backoff{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Ping(ctx); !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("a ping its caller cancelled: %v, want an error", err)
	}
	if h := d.Health(); h.Degraded || h.Outages != 0 {
		t.Fatalf("the door after a ping its caller cancelled: %+v, want open", h)
	}
	if _, err := d.Open(context.Background(), "anything", memory.DMViewer()); errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("Open after a ping its caller cancelled: %v", err)
	}
}
