// Package pgcluster starts a private, throwaway PostgreSQL cluster for tests
// that must stop and start the server (outage tests) without disturbing the
// shared test server other tests use.
//
// A cluster listens on a Unix socket in its own directory, never on a TCP
// port: a test that stops its server and starts it again must find its
// address free, and a loopback port given up while the server is down can
// be taken by another test's cluster in the meantime.
//
// The data directory is copied from a template made by initdb once per
// PostgreSQL installation and user and kept in the temporary directory
// (os.TempDir()/glyphoxa-pgcluster, about 40 MB; it goes with the rest of
// /tmp): initdb costs about two seconds of CPU, the copy a tenth of that.
//
// It needs the PostgreSQL server binaries (initdb, pg_ctl) of an installed
// version with pgvector, found as scripts/devdb.sh finds them (see
// [FindBinDir]): CI's Debian has PostgreSQL 15, Ubuntu 24.04 16. Run as
// root, it runs them as the postgres user (they refuse to run as root).
// When it cannot get a cluster it fails the test under CI (the environment
// variable CI set, as CI services set it) and skips it otherwise, saying
// why.
package pgcluster

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// serverRoot holds Debian's and Ubuntu's PostgreSQL installations, one
// directory per major version (/usr/lib/postgresql/15/bin…).
const serverRoot = "/usr/lib/postgresql"

// shareRoot holds each version's extensions
// (/usr/share/postgresql/15/extension/vector.control).
const shareRoot = "/usr/share/postgresql"

// FindBinDir returns the directory of the PostgreSQL server binaries the
// clusters use: GLYPHOXA_PG_BINDIR when set (getenv); else, as
// scripts/devdb.sh, the highest version under /usr/lib/postgresql that has
// pg_ctl, preferring one with pgvector installed; else pg_config
// --bindir, when pg_ctl is there.
func FindBinDir(getenv func(string) string) (string, error) {
	if d := getenv("GLYPHOXA_PG_BINDIR"); d != "" {
		return d, nil
	}
	return findBinDir(serverRoot, shareRoot, pgConfigBinDir)
}

// findBinDir is FindBinDir's search: the versions under servers (their
// bin/pg_ctl), highest first, with pgvector under shares first; else
// pgConfig's directory.
func findBinDir(servers, shares string, pgConfig func() (string, error)) (string, error) {
	type version struct {
		n      float64
		bin    string
		vector bool
	}
	var vs []version
	entries, _ := os.ReadDir(servers)
	for _, e := range entries {
		n, err := strconv.ParseFloat(e.Name(), 64)
		bin := filepath.Join(servers, e.Name(), "bin")
		if err != nil || !isFile(filepath.Join(bin, "pg_ctl")) {
			continue
		}
		vs = append(vs, version{n, bin, isFile(filepath.Join(shares, e.Name(), "extension", "vector.control"))})
	}
	slices.SortFunc(vs, func(a, b version) int {
		if a.vector != b.vector {
			if a.vector {
				return -1
			}
			return 1
		}
		return cmp.Compare(b.n, a.n)
	})
	if len(vs) > 0 {
		return vs[0].bin, nil
	}
	if pgConfig != nil {
		if d, err := pgConfig(); err == nil && isFile(filepath.Join(d, "pg_ctl")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("no PostgreSQL server binaries (pg_ctl) under %s/*/bin nor in pg_config --bindir; "+
		"install postgresql and pgvector (scripts/devdb.sh does), or set GLYPHOXA_PG_BINDIR", servers)
}

// pgConfigBinDir asks pg_config where the binaries are.
func pgConfigBinDir() (string, error) {
	out, err := exec.Command("pg_config", "--bindir").Output()
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir()
}

// InCI reports whether the tests run under CI: the environment variable
// CI is set (GitHub Actions and most CI services set CI=true), to anything
// but "false" or "0". There a test that needs a cluster fails instead of
// skipping.
func InCI(getenv func(string) string) bool {
	v := strings.TrimSpace(getenv("CI"))
	return v != "" && !strings.EqualFold(v, "false") && v != "0"
}

// Cluster is a running private cluster.
type Cluster struct {
	tb    testing.TB
	bin   string
	dir   string // owned by the server's user; holds the socket
	data  string
	asPG  bool // run the binaries through runuser as postgres
	dbDSN string
}

// unavailable fails in CI and skips elsewhere.
func unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI(os.Getenv) {
		tb.Fatalf("cannot start a private PostgreSQL cluster in CI: %s", msg)
	}
	tb.Skipf("this test needs a private PostgreSQL cluster (PostgreSQL server binaries with pgvector, and root to run them as postgres): %s", msg)
}

// socketPort names the socket file (.s.PGSQL.<port>); each cluster's
// socket lives in its own directory, so every cluster can use the same.
const socketPort = 5432

// Start initialises a cluster in a temporary directory, starts it on a Unix
// socket in that directory, creates database "glyphoxa" and returns the
// cluster. It is stopped and removed when the test ends.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	bin, err := FindBinDir(os.Getenv)
	if err != nil {
		unavailable(tb, "%v", err)
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
		if err := chownToPostgres(dir); err != nil {
			unavailable(tb, "%v", err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		unavailable(tb, "chmod %s: %v", dir, err)
	}
	c.data = filepath.Join(dir, "data")
	if err := c.initData(); err != nil {
		unavailable(tb, "%v", err)
	}
	if err := c.startServer(); err != nil {
		unavailable(tb, "%v", err)
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

func (c *Cluster) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d&sslmode=disable", db, url.QueryEscape(c.dir), socketPort)
}

// StopImmediate stops the server the hard way (pg_ctl stop -m immediate):
// no checkpoint, connections cut, crash recovery at the next start.
func (c *Cluster) StopImmediate() error {
	if out, err := c.run("pg_ctl", "-D", c.data, "stop", "-m", "immediate", "-w"); err != nil {
		return fmt.Errorf("pg_ctl stop -m immediate: %w\n%s", err, out)
	}
	return nil
}

// StopFast stops the server with pg_ctl stop -m fast: open transactions
// are rolled back, connections are terminated (SQLSTATE 57P01), and a
// checkpoint is written.
func (c *Cluster) StopFast() error {
	if out, err := c.run("pg_ctl", "-D", c.data, "stop", "-m", "fast", "-w", "-t", "120"); err != nil {
		return fmt.Errorf("pg_ctl stop -m fast: %w\n%s", err, out)
	}
	return nil
}

// Restart starts the stopped server again on the same socket.
func (c *Cluster) Restart() error { return c.startServer() }

func (c *Cluster) startServer() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses='' -c fsync=off -c max_connections=50", socketPort, c.dir)
	if out, err := c.run("pg_ctl", "-D", c.data, "-l", filepath.Join(c.dir, "server.log"), "-o", opts, "-w", "-t", "60", "start"); err != nil {
		logb, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %w\n%s\n%s", err, out, logb)
	}
	return nil
}

// chownToPostgres hands dir to the postgres user.
func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root but there is no postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("handing %s to postgres: %w", dir, err)
	}
	return nil
}

// run runs a server binary in the cluster's directory.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	return c.runIn(c.dir, name, args...)
}

// runIn runs a server binary in dir, as postgres when run as root.
func (c *Cluster) runIn(dir, name string, args ...string) ([]byte, error) {
	path := filepath.Join(c.bin, name)
	var cmd *exec.Cmd
	if c.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	} else {
		cmd = exec.Command(path, args...)
	}
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	return []byte(strings.TrimSpace(string(out))), err
}

// initData fills c.data from the installation's template, making the
// template first if there is none yet.
func (c *Cluster) initData() error {
	tmpl, err := c.template()
	if err != nil {
		return err
	}
	// cp -a keeps the owner (postgres, when run as root) and the modes the
	// server insists on (0700 on the data directory).
	if out, err := exec.Command("cp", "-a", tmpl, c.data).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the template data directory %s: %w\n%s", tmpl, err, out)
	}
	return nil
}

// template returns the data directory initdb made for this installation,
// making it if needed. Processes may race to make it: each runs initdb in
// a directory of its own and renames it into place; a loser's rename fails
// because the winner's is there, and it uses the winner's. A directory at
// the final path is complete, since rename is atomic.
func (c *Cluster) template() (string, error) {
	postgres, err := os.Stat(filepath.Join(c.bin, "postgres"))
	if err != nil {
		return "", fmt.Errorf("the server binary: %w", err)
	}
	// The installation is named by its server binary's size and time: an
	// upgrade makes a new template. The server's user (postgres, when run
	// as root) must reach the directory initdb writes in: not under a home
	// directory, which it cannot enter.
	root := filepath.Join(os.TempDir(), "glyphoxa-pgcluster")
	final := filepath.Join(root, fmt.Sprintf("data-%d-%d-%d", postgres.Size(), postgres.ModTime().UnixNano(), os.Geteuid()))
	if _, err := os.Stat(filepath.Join(final, "PG_VERSION")); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("making the template directory: %w", err)
	}
	work, err := os.MkdirTemp(root, "initdb-")
	if err != nil {
		return "", fmt.Errorf("making the template directory: %w", err)
	}
	defer os.RemoveAll(work)
	if c.asPG {
		if err := chownToPostgres(work); err != nil {
			return "", err
		}
	}
	data := filepath.Join(work, "data")
	if out, err := c.runIn(work, "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		return "", fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if err := os.Rename(data, final); err != nil {
		if _, statErr := os.Stat(filepath.Join(final, "PG_VERSION")); statErr == nil {
			return final, nil // another process made it first
		}
		return "", fmt.Errorf("putting the template in place: %w", err)
	}
	return final, nil
}
