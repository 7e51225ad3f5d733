// Package pgtest gives tests a real PostgreSQL with pgvector.
//
// The server comes from GLYPHOXA_TEST_DSN, which `make test` sets after
// bringing up a private cluster (scripts/devdb.sh). Each test gets a fresh
// database of its own, dropped when the test ends. Without a server, tests
// fail when CI=true and skip elsewhere with a message saying how to get one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// EnvDSN is the variable holding the test server's DSN.
const EnvDSN = "GLYPHOXA_TEST_DSN"

// DSN returns the test server's DSN. Without one it fails the test in CI and
// skips it elsewhere.
func DSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn != "" {
		return dsn
	}
	const how = "this test needs PostgreSQL with pgvector: run `make test`, or `make db` and export " + EnvDSN + "=<the printed DSN>"
	if os.Getenv("CI") == "true" {
		tb.Fatal(EnvDSN + " is not set in CI; " + how)
	}
	tb.Skip(how)
	return ""
}

// NewDatabase creates an empty database on the test server and returns its
// DSN. The database is dropped when the test ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	admin := DSN(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connecting to the test server (%s): %v", EnvDSN, err)
	}
	defer conn.Close(context.Background())

	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "glyphoxa_t_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("creating test database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			tb.Errorf("dropping test database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("dropping test database %s: %v", name, err)
		}
	})
	dsn, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("%s: %v", EnvDSN, err)
	}
	return dsn
}

// withDatabase returns dsn (a URL or key=value DSN) pointing at database name.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parsing the DSN: %w", err)
		}
		u.Path = "/" + name
		q := u.Query()
		q.Del("dbname")
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil
}

// NewStore opens a store with dims-dimensional embeddings on a fresh
// database; it is closed when the test ends.
func NewStore(tb testing.TB, dims int, opts ...postgres.Option) (*postgres.Store, string) {
	tb.Helper()
	dsn := NewDatabase(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := postgres.NewStore(ctx, dsn, dims, opts...)
	if err != nil {
		tb.Fatalf("opening the store: %v", err)
	}
	tb.Cleanup(s.Close)
	return s, dsn
}

// Campaign opens campaign id in s, failing the test on error.
func Campaign(tb testing.TB, s *postgres.Store, id string) *postgres.Campaign {
	tb.Helper()
	c, err := s.Campaign(context.Background(), id)
	if err != nil {
		tb.Fatalf("opening campaign %q: %v", id, err)
	}
	return c
}

// Import applies the campaign file at path to s and returns the campaign,
// failing the test on error.
func Import(tb testing.TB, s *postgres.Store, path string) *postgres.Campaign {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, path)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	if err := s.InTx(ctx, cf.Campaign, func(c *postgres.Campaign) error {
		_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
		return err
	}); err != nil {
		tb.Fatalf("importing %s: %v", path, err)
	}
	return Campaign(tb, s, cf.Campaign)
}

// Door returns a door (memory/access) on s, the way readers reach memory;
// it is closed when the test ends. Its health probe is not started: a
// successful Ping opens it again after an outage.
func Door(tb testing.TB, s *postgres.Store) *access.Door {
	tb.Helper()
	d, err := access.New(access.Config{Store: s})
	if err != nil {
		tb.Fatalf("opening the memory door: %v", err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// Open opens campaign id of s through a new door as v, failing the test on
// error.
func Open(tb testing.TB, s *postgres.Store, id string, v memory.Viewer) *access.Campaign {
	tb.Helper()
	c, err := Door(tb, s).Open(context.Background(), id, v)
	if err != nil {
		tb.Fatalf("opening campaign %q as %s: %v", id, v, err)
	}
	return c
}
