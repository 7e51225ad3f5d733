package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// NewMigratedDatabase lends the test a database holding this tree's schema
// for dims-dimensional embeddings, from the pool NewStore takes from, and
// returns its DSN. A program under test that migrates on start finds
// nothing to do.
func NewMigratedDatabase(tb testing.TB, dims int) string {
	tb.Helper()
	return migratedDatabase(tb, dims)
}

// Fixture is a database built once per test process and copied for each
// test that asks for it, so tests that start from the same data (the
// sample campaign imported) do not each build it again. Declare one per
// starting point in the test package and drop it in TestMain:
//
//	var saga = &pgtest.Fixture{Name: "saga", Build: func(tb testing.TB, dsn string) { ... }}
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		saga.Drop()
//		os.Exit(code)
//	}
//
// Build gets an empty database (or, with Dims set, one migrated for Dims
// dimensions) and must close every connection it opens before it returns:
// PostgreSQL copies a database nobody is connected to. Each copy is a new
// database of the test's own, dropped when the test ends; what one test
// writes is never seen by another.
type Fixture struct {
	// Name tells fixtures apart in database names: lower-case letters
	// and digits.
	Name string
	// Dims, when positive, starts Build on a database migrated for
	// Dims-dimensional embeddings.
	Dims int
	// Build fills the database at dsn.
	Build func(tb testing.TB, dsn string)

	mu       sync.Mutex
	template string // built template, "" until built
	failed   bool   // Build failed once; later tests fail at once
}

// fixturePrefix starts the name of every fixture template. The name goes
// on with the Unix time the template was built, so a template left behind
// by a test process that was killed is dropped by a later one (see
// sweepFixtures).
const fixturePrefix = "glyphoxa_fx_"

// fixtureMaxAge is how old a fixture template must be before another
// test process takes it for abandoned: longer than any test run.
const fixtureMaxAge = 3 * time.Hour

// Copy creates a database from the fixture, building the fixture first if
// no test of this process has, and returns the new database's DSN; it is
// dropped when the test ends.
func (f *Fixture) Copy(tb testing.TB) string {
	tb.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed {
		tb.Fatalf("fixture %s: building it failed in an earlier test", f.Name)
	}
	if f.template == "" {
		f.failed = true // until built
		f.template = f.build(tb)
		f.failed = false
	}
	return newDatabase(tb, f.template)
}

// build creates the fixture's template database and returns its name.
func (f *Fixture) build(tb testing.TB) string {
	tb.Helper()
	if f.Name == "" || strings.Trim(f.Name, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		tb.Fatalf("fixture name %q: want lower-case letters and digits", f.Name)
	}
	admin := DSN(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connecting to the test server (%s): %v", EnvDSN, err)
	}
	defer conn.Close(context.Background())
	sweepFixtures(ctx, tb, conn)

	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%s%d_%s_%s", fixturePrefix, time.Now().Unix(), f.Name, hex.EncodeToString(b[:]))
	create := "CREATE DATABASE " + name
	if f.Dims > 0 {
		if tmpl := migratedTemplate(tb, f.Dims); tmpl != "" {
			create += " TEMPLATE " + tmpl
		}
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		tb.Fatalf("creating fixture %s: %v", f.Name, err)
	}
	built := false
	defer func() {
		if !built {
			dropDatabase(conn, name)
		}
	}()
	dsn, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("%s: %v", EnvDSN, err)
	}
	f.Build(tb, dsn)
	if tb.Failed() {
		tb.FailNow()
	}
	if err := waitUnused(ctx, conn, name); err != nil {
		tb.Fatalf("fixture %s: %v", f.Name, err)
	}
	built = true
	return name
}

// Drop drops the fixture's template database, if it was built. Call it
// from TestMain after m.Run.
func (f *Fixture) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.template == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, os.Getenv(EnvDSN)); err == nil {
		dropDatabase(conn, f.template)
		conn.Close(context.Background())
	}
	f.template = ""
}

// dropDatabase drops database name, ending its sessions.
func dropDatabase(conn *pgx.Conn, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
}

// endSessions terminates every session on database name but conn's own.
func endSessions(ctx context.Context, conn *pgx.Conn, name string) error {
	return endSessionsBut(ctx, conn, name, nil)
}

// endSessionsBut terminates every session on database name but conn's own
// and spare's (nil: none).
func endSessionsBut(ctx context.Context, conn *pgx.Conn, name string, spare *pgx.Conn) error {
	var pid uint32
	if spare != nil {
		pid = spare.PgConn().PID()
	}
	_, err := conn.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND pid <> $2", name, int64(pid))
	return err
}

// waitUnused terminates the sessions still on database name (a closed
// pool's backends end a moment after the client leaves) and waits until
// none is left: CREATE DATABASE ... TEMPLATE needs it unused.
func waitUnused(ctx context.Context, conn *pgx.Conn, name string) error {
	if err := endSessions(ctx, conn, name); err != nil {
		return fmt.Errorf("closing the sessions on %s: %w", name, err)
	}
	for {
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", name).Scan(&n); err != nil {
			return fmt.Errorf("waiting for the sessions on %s to end: %w", name, err)
		}
		if n == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sessions on %s did not end: %w", name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// sweepFixtures drops fixture templates older than fixtureMaxAge: left
// behind by test processes that were killed before TestMain dropped them.
func sweepFixtures(ctx context.Context, tb testing.TB, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE $1", fixturePrefix+"%")
	if err != nil {
		tb.Logf("looking for abandoned fixtures: %v", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Logf("looking for abandoned fixtures: %v", err)
		return
	}
	for _, n := range names {
		stamp, _, _ := strings.Cut(strings.TrimPrefix(n, fixturePrefix), "_")
		unix, err := strconv.ParseInt(stamp, 10, 64)
		if err != nil || time.Since(time.Unix(unix, 0)) < fixtureMaxAge {
			continue
		}
		dropDatabase(conn, n)
	}
}
