// Package pgtest gives tests a real PostgreSQL with pgvector.
//
// The server comes from GLYPHOXA_TEST_DSN, which `make test` sets after
// bringing up a private cluster (scripts/devdb.sh). Each test gets a
// database of its own: NewStore and NewMigratedDatabase lend it one of a
// pool of migrated databases, emptied before it is lent (see pool.go);
// NewDatabase creates an empty one, dropped when the test ends. Without a
// server, tests fail when CI=true and skip elsewhere with a message saying
// how to get one.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
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
	return newDatabase(tb, "")
}

// newDatabase creates a database, a copy of template (empty: PostgreSQL's
// default), dropped when the test ends, and returns its DSN.
func newDatabase(tb testing.TB, template string) string {
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
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	create += copyStrategy(conn)
	if _, err := conn.Exec(ctx, create); err != nil {
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

// copyStrategy returns the STRATEGY clause for CREATE DATABASE on the
// server at conn: FILE_COPY from PostgreSQL 15 on (which added the clause
// and made WAL_LOG the default), nothing before. A test database is a copy
// of a template of about 9 MB (the catalogs and our schema, no rows).
// WAL_LOG reads it through shared buffers and writes every page to the
// WAL; FILE_COPY copies the files and asks for a checkpoint, which on the
// test server (fsync off) writes out dirty buffers without syncing them.
// Measured on a throwaway cluster (fsync off, shared_buffers 1 GB, an
// otherwise idle server on a loaded machine), 40 rounds of create from the
// migrated template, connect and query, drop, CPU of client and server:
// 46.3 and 47.7 s with WAL_LOG, 32.3 and 40.4 s with FILE_COPY, 13.5 and
// 13.0 s for the connect and query alone; the copy and drop cost 0.8 to
// 0.9 s of CPU with WAL_LOG, 0.5 to 0.7 s with FILE_COPY.
func copyStrategy(conn *pgx.Conn) string {
	v := conn.PgConn().ParameterStatus("server_version")
	major, _, _ := strings.Cut(v, ".")
	if n, err := strconv.Atoi(strings.TrimFunc(major, func(r rune) bool { return r < '0' || r > '9' })); err == nil && n >= 15 {
		return " STRATEGY FILE_COPY"
	}
	return ""
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

// NewStore opens a store with dims-dimensional embeddings on a database of
// the test's own; it is closed when the test ends. The database comes from
// the pool (see migratedDatabase): migrated once for this schema and
// dimension, empty but for what the migrations write.
func NewStore(tb testing.TB, dims int, opts ...postgres.Option) (*postgres.Store, string) {
	tb.Helper()
	dsn := migratedDatabase(tb, dims)
	return StoreAt(tb, dsn, dims, opts...), dsn
}

// StoreAt opens a store with dims-dimensional embeddings on the database
// at dsn (a test's own cluster, internal/pgcluster, which it may stop);
// it is closed when the test ends.
func StoreAt(tb testing.TB, dsn string, dims int, opts ...postgres.Option) *postgres.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := postgres.NewStore(ctx, dsn, dims, opts...)
	if err != nil {
		tb.Fatalf("opening the store: %v", err)
	}
	tb.Cleanup(s.Close)
	return s
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

// templateLockKey serialises building a template database across test
// processes (packages run in parallel against one server).
const templateLockKey = 0x67_6c_74_6d_70 // "gltmp"

// migratedTemplate returns the name of a database holding the schema of
// this tree's migrations for dims-dimensional embeddings, building it on
// first use. Its name carries a hash of the migrations (and of the code
// that applies them) and dims, so a changed schema gets a template of its
// own and a template is never changed once built; nobody connects to it
// after it is built, as CREATE DATABASE ... TEMPLATE requires. Without the
// source files (a test binary run elsewhere) it returns "": the test
// migrates a fresh database itself.
func migratedTemplate(tb testing.TB, dims int) string {
	tb.Helper()
	key, ok := schemaKey(dims)
	if !ok {
		return ""
	}
	admin := DSN(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("connecting to the test server (%s): %v", EnvDSN, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		tb.Fatalf("locking the template database: %v", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLockKey)
	return ensureTemplate(ctx, tb, conn, key, dims)
}

// templatePrefix starts the name of every migrated template.
const templatePrefix = "glyphoxa_tmpl_"

// ensureTemplate returns the name of the migrated template of schema key
// and dims, building it if it does not exist. The caller holds the
// template lock on conn.
func ensureTemplate(ctx context.Context, tb testing.TB, conn *pgx.Conn, key string, dims int) string {
	tb.Helper()
	name := templatePrefix + key
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		tb.Fatalf("looking for the template database: %v", err)
	}
	if exists {
		return name
	}
	sweepStale(ctx, tb, conn, key)
	// Built under another name and renamed once complete: a template
	// half-built by a test process that died is never used.
	var b [6]byte
	_, _ = rand.Read(b[:])
	building := "glyphoxa_tmpb_" + hex.EncodeToString(b[:])
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		tb.Fatalf("creating the template database: %v", err)
	}
	built := false
	defer func() {
		if !built {
			conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)")
		}
	}()
	dsn, err := withDatabase(DSN(tb), building)
	if err != nil {
		tb.Fatalf("%s: %v", EnvDSN, err)
	}
	s, err := postgres.NewStore(ctx, dsn, dims)
	if err != nil {
		tb.Fatalf("migrating the template database: %v", err)
	}
	s.Close()
	// The server ends a closed session's backend a moment later;
	// FORCE-free rename needs it gone, and so does every copy.
	if err := waitUnused(ctx, conn, building); err != nil {
		tb.Fatalf("the template database: %v", err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		tb.Fatalf("naming the template database: %v", err)
	}
	if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+name+" IS "+quoteLiteral(strconv.FormatInt(time.Now().Unix(), 10))); err != nil {
		tb.Fatalf("dating the template database: %v", err)
	}
	built = true
	return name
}

// templateMaxAge is how old a template of another schema key must be
// before sweepStale drops it. A key is a schema and a dimension, so a
// template of another key may be in use (another dimension, another
// checkout against the same server); one in use longer is simply built
// again when next needed.
const templateMaxAge = 7 * 24 * time.Hour

// sweepStale drops what tests of other schemas left on the server: the
// templates of other schema keys built more than templateMaxAge ago (or
// before templates were dated), then the pooled databases no test holds
// whose template is gone. It runs when a template is built, that is once
// per schema change and dimension, under the template lock, so no copy of
// a template is under way. A test process of another schema that still
// runs builds its template again, and copies its pooled databases again,
// when it next needs them.
func sweepStale(ctx context.Context, tb testing.TB, conn *pgx.Conn, key string) {
	tb.Helper()
	rows, err := conn.Query(ctx, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database
		WHERE (datname LIKE $1 || '%' OR datname LIKE $2 || '%') AND datname NOT LIKE $1 || $3 || '%' AND datname NOT LIKE $2 || $3 || '%'
		ORDER BY datname LIKE $2 || '%'`,
		templatePrefix, poolPrefix, key)
	if err != nil {
		tb.Logf("looking for stale test databases: %v", err)
		return
	}
	type db struct{ name, comment string }
	dbs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (db, error) {
		var d db
		return d, r.Scan(&d.name, &d.comment)
	})
	if err != nil {
		tb.Logf("looking for stale test databases: %v", err)
		return
	}
	kept := map[string]bool{} // keys whose template stays
	// Templates come first (ORDER BY: false before true).
	for _, d := range dbs {
		if k, ok := strings.CutPrefix(d.name, templatePrefix); ok {
			built, err := strconv.ParseInt(d.comment, 10, 64)
			if len(k) == 16 && (err != nil || time.Since(time.Unix(built, 0)) > templateMaxAge) {
				dropDatabase(conn, d.name)
			} else {
				kept[k] = true
			}
			continue
		}
		k, nstr, ok := strings.Cut(strings.TrimPrefix(d.name, poolPrefix), "_")
		n, err := strconv.Atoi(nstr)
		if !ok || len(k) != 16 || err != nil || kept[k] {
			continue
		}
		var got bool
		if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", poolLockSpace(k), n).Scan(&got); err != nil || !got {
			continue
		}
		dropDatabase(conn, d.name)
		conn.Exec(ctx, "SELECT pg_advisory_unlock($1, $2)", poolLockSpace(k), n)
	}
}

// schemaKey hashes what decides a migrated database's contents: the
// migrations, the code applying them (memory/postgres/migrate.go) and
// dims. ok is false when the source files cannot be read.
func schemaKey(dims int) (key string, ok bool) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", false
	}
	dir := filepath.Join(filepath.Dir(self), "..")
	files, err := filepath.Glob(filepath.Join(dir, "migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		return "", false
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintf(h, "dims %d\n", dims)
	for _, f := range append([]string{filepath.Join(dir, "migrate.go")}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", false
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), true
}

// LockTable holds table of the database at dsn locked in mode (LOCK
// TABLE's: "ACCESS EXCLUSIVE", "EXCLUSIVE", ...) from a session of its own,
// inside a transaction, until release is called or the test ends: the
// statements that need the table wait, as on a database that has stopped
// answering them. release rolls the transaction back and closes the
// session; it may be called more than once.
func LockTable(tb testing.TB, dsn, table, mode string) (release func()) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connecting to lock %s: %v", table, err)
	}
	if _, err := conn.Exec(ctx, "BEGIN; LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN "+mode+" MODE"); err != nil {
		conn.Close(ctx)
		tb.Fatalf("locking %s in %s mode: %v", table, mode, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
				tb.Errorf("releasing the lock on %s: %v", table, err)
			}
			conn.Close(ctx)
		})
	}
	tb.Cleanup(release)
	return release
}
