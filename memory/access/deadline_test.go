package access_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestCallerDeadlineIsNotAnOutage: a caller that gives up on a slow
// statement (an NPC's tool budget, a turn's timeout) has its own deadline
// to blame, not the database: the door stays open for everyone else, and
// the caller's error says it ran out of time, not that memory is offline. A statement that outlives the
// door's own statement timeout while its caller still waits is what a hung
// database looks like, and still degrades the door.
func TestCallerDeadlineIsNotAnOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		statement  time.Duration // the door's statement timeout
		caller     time.Duration // the caller's deadline (0: none)
		wantOutage bool
	}{
		{"the caller's deadline", time.Minute, 50 * time.Millisecond, false},
		{"the door's statement timeout", 50 * time.Millisecond, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, dsn := boundedDoor(t, "slow", tt.statement)
			ctx := context.Background()
			dm, err := d.Open(ctx, "slow", memory.DMViewer())
			if err != nil {
				t.Fatal(err)
			}
			// Another session holds the entities table until the read
			// below has returned: the read waits for as long as its
			// deadline lets it.
			release := pgtest.LockTable(t, dsn, "entities", "ACCESS EXCLUSIVE")
			rctx := ctx
			if tt.caller > 0 {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(ctx, tt.caller)
				defer cancel()
			}
			_, err = dm.Graph().Entity(rctx, "vexa")
			if err == nil {
				t.Fatal("a read of a locked table returned")
			}
			if got := errors.Is(err, memory.ErrUnavailable); got != tt.wantOutage {
				t.Errorf("error %v: ErrUnavailable %v, want %v", err, got, tt.wantOutage)
			}
			if !tt.wantOutage && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not say the caller's deadline passed", err)
			}
			if got := d.Health().Degraded; got != tt.wantOutage {
				t.Errorf("door degraded %v, want %v", got, tt.wantOutage)
			}
			release()
			if tt.wantOutage {
				return
			}
			// The door is open: the next reader is answered.
			if e, err := dm.Graph().Entity(ctx, "vexa"); err != nil || e.Name != "Vexa" {
				t.Fatalf("the next read: %+v, %v", e, err)
			}
		})
	}
}

// TestOpeningIsBoundedByTheStatementTimeout: opening a campaign, and
// listing them, on a database that has stopped answering (another session
// holds the campaigns table) ends after the door's statement timeout with
// an outage, as every other statement does; it used to wait for as long as
// its caller did, forever for a console page or an MCP call.
func TestOpeningIsBoundedByTheStatementTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		op   func(context.Context, *access.Door) error
	}{
		{"the DM opens", func(ctx context.Context, d *access.Door) error {
			_, err := d.Open(ctx, "stuck", memory.DMViewer())
			return err
		}},
		{"a player opens", func(ctx context.Context, d *access.Door) error {
			_, err := d.Open(ctx, "stuck", memory.PlayerViewer())
			return err
		}},
		{"the campaigns are listed", func(ctx context.Context, d *access.Door) error {
			_, err := d.Campaigns(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, dsn := boundedDoor(t, "stuck", 50*time.Millisecond)
			release := pgtest.LockTable(t, dsn, "campaigns", "ACCESS EXCLUSIVE")
			err := returns(t, tt.name, release, func() error { return tt.op(context.Background(), d) })
			release()
			if !errors.Is(err, memory.ErrUnavailable) || !d.Health().Degraded {
				t.Fatalf("%s with the database not answering: %v (degraded %v), want ErrUnavailable", tt.name, err, d.Health().Degraded)
			}
		})
	}
}

// TestTransactionsAreBoundedByTheStatementTimeout: a write that runs as a
// transaction (the DM adding an entity from the console or over MCP) on a
// database that has stopped answering (another session holds the table it
// writes) ends after the door's statement timeout with an outage, as a
// single statement does; it used to wait for as long as its caller did.
// A transaction that commits, on a database that answers, leaves the door
// open: pgx.BeginFunc rolls back after every commit and is told the
// transaction is closed, which is not an outage.
func TestTransactionsAreBoundedByTheStatementTimeout(t *testing.T) {
	t.Parallel()
	add := func(ctx context.Context, dm *access.Campaign) error {
		_, err := dm.Graph().AddEntity(ctx, memory.Entity{Type: memory.EntityNPC, Name: "Kessa"})
		return err
	}
	addInTx := func(ctx context.Context, dm *access.Campaign) error {
		return dm.InTx(ctx, "dm", func(c *access.Campaign) error { return add(ctx, c) })
	}
	tests := []struct {
		name   string
		locked bool
		op     func(context.Context, *access.Campaign) error
	}{
		{"the DM adds an entity", true, add},
		{"the DM adds an entity in a change of several", true, addInTx},
		{"the DM adds an entity, the database answering", false, add},
		{"a change of several, the database answering", false, addInTx},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The statement timeout is short only where the table is
			// held: a database that answers is never cut off by it. It
			// is long enough for the campaign to open first on a loaded
			// machine (50 ms was not, beside a CI run at load 10 on 2
			// cores); what is measured is that the write ends at all.
			timeout := time.Minute
			if tt.locked {
				timeout = 2 * time.Second
			}
			d, dsn := boundedDoor(t, "stuck", timeout)
			ctx := context.Background()
			dm, err := d.Open(ctx, "stuck", memory.DMViewer())
			if err != nil {
				t.Fatal(err)
			}
			release := func() {}
			if tt.locked {
				release = pgtest.LockTable(t, dsn, "entities", "ACCESS EXCLUSIVE")
			}
			err = returns(t, tt.name, release, func() error { return tt.op(ctx, dm) })
			release()
			if !tt.locked {
				if err != nil || d.Health().Degraded {
					t.Fatalf("%s: %v (degraded %v), want it written and the door open", tt.name, err, d.Health().Degraded)
				}
				if e, err := dm.Graph().Entity(ctx, "kessa"); err != nil || e.Name != "Kessa" {
					t.Fatalf("reading what was written: %+v, %v", e, err)
				}
				return
			}
			if !errors.Is(err, memory.ErrUnavailable) || !d.Health().Degraded {
				t.Fatalf("%s with the database not answering: %v (degraded %v), want ErrUnavailable", tt.name, err, d.Health().Degraded)
			}
		})
	}
}

// returns is op's error, run in a goroutine; t fails if op has not
// returned after a 2-minute hang guard (not a budget: a statement that
// waits on a database that does not answer ends after the door's statement
// timeout), after release has let the database answer.
func returns(t *testing.T, what string, release func(), op func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		release()
		t.Fatalf("%s waited on a database that does not answer, past the statement timeout: %v", what, <-done)
		return nil
	}
}

// boundedDoor is a door on a store of its own holding campaign id (seed),
// each statement bounded by statement, its probe not running while a test
// lasts; dsn is the store's database, for pgtest.LockTable.
func boundedDoor(t *testing.T, id string, statement time.Duration) (d *access.Door, dsn string) {
	t.Helper()
	s, dsn := pgtest.NewStore(t, 8)
	seed(t, s, id)
	d, err := access.New(access.Config{Store: s, StatementTimeout: statement, Probe: reconnect.Backoff{Initial: time.Hour, Max: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, dsn
}
