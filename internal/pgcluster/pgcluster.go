// Package pgcluster starts a private, throwaway PostgreSQL cluster for tests
// that must stop and start the server (outage tests) without disturbing the
// shared test server other tests use.
//
// It needs the PostgreSQL 15 server binaries (initdb, pg_ctl). Run as root,
// it runs them as the postgres user (they refuse to run as root). When it
// cannot get a cluster it fails the test if CI=true and skips it otherwise,
// saying why.
package pgcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// BinDir is where the server binaries are looked for, unless
// GLYPHOXA_PG_BINDIR names another directory.
const BinDir = "/usr/lib/postgresql/15/bin"

// Cluster is a running private cluster.
type Cluster struct {
	tb    testing.TB
	bin   string
	dir   string // owned by the server's user
	data  string
	port  int
	asPG  bool // run the binaries through runuser as postgres
	dbDSN string
}

// unavailable fails in CI and skips elsewhere.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		tb.Fatalf("cannot start a private PostgreSQL cluster in CI: %s", msg)
	}
	tb.Skipf("this test needs a private PostgreSQL cluster (PostgreSQL 15 with pgvector at %s, and root to run it as postgres): %s", BinDir, msg)
}

// Start initialises a cluster in a temporary directory, starts it on a free
// loopback port, creates database "glyphoxa" and returns the cluster. It is
// stopped and removed when the test ends.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	bin := BinDir
	if d := os.Getenv("GLYPHOXA_PG_BINDIR"); d != "" {
		bin = d
	}
	if _, err := os.Stat(filepath.Join(bin, "pg_ctl")); err != nil {
		unavailable(tb, "pg_ctl not found: %v", err)
	}
	c := &Cluster{tb: tb, bin: bin, asPG: os.Geteuid() == 0}
	dir, err := os.MkdirTemp("/tmp", "glyphoxa-pg-")
	if err != nil {
		unavailable(tb, "creating the cluster directory: %v", err)
	}
	c.dir = dir
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if c.asPG {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(tb, "running as root but there is no postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			unavailable(tb, "handing %s to postgres: %v", dir, err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		unavailable(tb, "chmod %s: %v", dir, err)
	}
	c.data = filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", c.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		unavailable(tb, "initdb: %v\n%s", err, out)
	}
	// Another process may take the free port before the server binds it;
	// try a few.
	for attempt := 1; ; attempt++ {
		c.port = freePort(tb)
		err := c.startServer()
		if err == nil {
			break
		}
		if attempt == 3 {
			unavailable(tb, "%v", err)
		}
	}
	tb.Cleanup(func() { c.run("pg_ctl", "-D", c.data, "stop", "-m", "immediate", "-w") })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.dsn("postgres"))
	if err != nil {
		unavailable(tb, "connecting to the private cluster: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE glyphoxa"); err != nil {
		unavailable(tb, "creating the database: %v", err)
	}
	c.dbDSN = c.dsn("glyphoxa")
	return c
}

// DSN is the DSN of the cluster's "glyphoxa" database.
func (c *Cluster) DSN() string { return c.dbDSN }

// Port is the TCP port the cluster listens on.
func (c *Cluster) Port() int { return c.port }

func (c *Cluster) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// StopImmediate stops the server the hard way (pg_ctl stop -m immediate):
// no checkpoint, connections cut, crash recovery at the next start.
func (c *Cluster) StopImmediate() error {
	if out, err := c.run("pg_ctl", "-D", c.data, "stop", "-m", "immediate", "-w"); err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %w\n%s", err, out)
	}
	return nil
}

// Restart starts the stopped server again on the same port.
func (c *Cluster) Restart() error { return c.startServer() }

func (c *Cluster) startServer() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50", c.port, c.dir)
	if out, err := c.run("pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		logb, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, logb)
	}
	return nil
}

func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return []byte(strings.TrimSpace(string(out))), err
}

func freePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		unavailable(tb, "finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
