package guard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestCallerDeadlineDoesNotDegrade: a read whose caller gives up (a turn's
// deadline) returns the caller's error and leaves the guard as it was; a
// read that outlives the guard's own WriteTimeout while its caller still
// waits is a hung database and degrades it.
func TestCallerDeadlineDoesNotDegrade(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		writeTimeout time.Duration
		caller       time.Duration // 0: no deadline of the caller's
		wantDegraded bool
	}{
		{"the caller's deadline", time.Minute, 50 * time.Millisecond, false},
		{"the guard's write timeout", 50 * time.Millisecond, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, dsn := pgtest.NewStore(t, 8)
			ctx := context.Background()
			l1 := pgtest.Campaign(t, store, "c").Sessions()
			if _, err := l1.WriteEntry(ctx, entry(0)); err != nil {
				t.Fatal(err)
			}
			g, err := guard.New(guard.Config{Store: l1, Ping: store.Ping, SpoolDir: t.TempDir(), WriteTimeout: tt.writeTimeout,
				Probe: fastProbe(), Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			// Another session holds the session log until the read below
			// has returned.
			release := pgtest.LockTable(t, dsn, "transcript_entries", "ACCESS EXCLUSIVE")
			rctx := ctx
			if tt.caller > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(ctx, tt.caller)
				defer cancel()
			}
			got, err := g.Entries(rctx, "s1")
			if tt.wantDegraded {
				if err != nil || len(got) != 0 {
					t.Errorf("a read in an outage: %v, %v; want nothing and no error", got, err)
				}
			} else if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a read past its caller's deadline: %v, %v; want the deadline's error", got, err)
			}
			if g.IsDegraded() != tt.wantDegraded {
				t.Errorf("degraded %v, want %v", g.IsDegraded(), tt.wantDegraded)
			}
			release()
			if tt.wantDegraded {
				return
			}
			if got, err := g.Entries(ctx, "s1"); err != nil || len(got) != 1 {
				t.Fatalf("the next read: %v, %v; want the one line", got, err)
			}
		})
	}
}
