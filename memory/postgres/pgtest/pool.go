package pgtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The migrated databases NewStore and NewMigratedDatabase hand out come from
// a pool on the test server, shared by every test process: database n of
// schema key k is glyphoxa_pool_<k>_<n>. A test holds its database for its
// whole run by a session-level advisory lock (key poolLockSpace(k), n) on a
// connection of its own; the lock ends with that connection, when the test
// ends or its process dies. The next test to take it empties it first
// (lend), so what one test wrote is never seen by another, and a database
// left in any state by a killed process is emptied like any other.
//
// Why a pool: a copy of the template (CREATE DATABASE ... TEMPLATE) makes the
// server write out every dirty buffer (STRATEGY FILE_COPY asks for a
// checkpoint) or write the whole template to the WAL (WAL_LOG), and a
// DROP DATABASE is not free either. Measured on a throwaway cluster, server
// and client CPU over 40 rounds, a copy and a drop cost 0.32 s a test; a
// lending (end the sessions, connect, empty, fingerprint) 0.17 s, and no
// checkpoint. Some 250 tests of the suite take such a database.

// poolPrefix starts the name of every pooled database.
const poolPrefix = "glyphoxa_pool_"

// poolMax bounds the pool of one schema: more tests than this holding a
// database at once on one server is a runaway, not a test run.
const poolMax = 512

// poolState is what a pooled database's comment (COMMENT ON DATABASE)
// records when it is copied from the template: the tables the migrations
// fill (kept when the database is emptied) and the fingerprint of its schema
// and of those tables' rows. A database whose fingerprint differs after
// emptying (a test changed the schema or the migrations' rows) is dropped
// and copied again.
type poolState struct {
	Seeded      []string `json:"seeded"`
	Fingerprint string   `json:"fingerprint"`
}

// poolLockSpace is the first key of the advisory locks holding the pool
// databases of schema key (a hex string): its first 32 bits.
func poolLockSpace(key string) int32 {
	n, _ := strconv.ParseUint(key[:8], 16, 32)
	return int32(uint32(n))
}

// migratedDatabase lends the test a database of the pool holding this tree's
// schema for dims-dimensional embeddings, empty but for what the migrations
// write, and returns its DSN. The database is the test's until it ends.
// Without the source files (a test binary run elsewhere) it creates an empty
// database instead, which the store migrates.
func migratedDatabase(tb testing.TB, dims int) string {
	tb.Helper()
	key, ok := schemaKey(dims)
	if !ok {
		return newDatabase(tb, "")
	}
	admin := DSN(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hold := keeping.takeAdmin(ctx)
	if hold == nil {
		var err error
		if hold, err = pgx.Connect(ctx, admin); err != nil {
			tb.Fatalf("connecting to the test server (%s): %v", EnvDSN, err)
		}
	}
	held := false
	defer func() {
		if !held {
			hold.Close(context.Background())
		}
	}()
	space := poolLockSpace(key)
	take := func(n int) bool {
		var got bool
		if err := hold.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, $2)", space, n).Scan(&got); err != nil {
			tb.Fatalf("taking a pooled test database: %v", err)
		}
		return got
	}
	// The databases this process keeps a session on first: lending
	// one of those costs a fraction of lending another (see keepers).
	n := -1
	for _, k := range keeping.numbers(key) {
		if take(k) {
			n = k
			break
		}
	}
	for k := 0; n < 0; k++ {
		if k == poolMax {
			tb.Fatalf("all %d pooled test databases of schema %s are taken", poolMax, key)
		}
		if take(k) {
			n = k
		}
	}
	name := fmt.Sprintf("%s%s_%d", poolPrefix, key, n)
	dsn, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("%s: %v", EnvDSN, err)
	}
	var keeper *pgx.Conn
	if k := keeping.take(name); k != nil {
		// A kept session that fails (another process took the
		// database and ended it, say) gives way to a new one.
		keeper, _ = lend(ctx, hold, name, dsn, k)
	}
	if keeper == nil {
		switch keeper, err = lend(ctx, hold, name, dsn, nil); {
		case errors.Is(err, errMissing):
			keeper = copyToPool(ctx, tb, hold, key, dims, name, dsn)
		case err != nil:
			tb.Logf("pooled test database %s: %v; copying it again", name, err)
			if _, err := hold.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
				tb.Fatalf("dropping pooled test database %s: %v", name, err)
			}
			keeper = copyToPool(ctx, tb, hold, key, dims, name, dsn)
		}
	}
	held = true
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := giveBack(ctx, hold, name, keeper); err != nil {
			tb.Errorf("giving back pooled test database %s: %v", name, err)
			if keeper != nil {
				keeper.Close(context.Background())
			}
		} else if keeper != nil {
			keeping.put(name, keeper)
		}
		keeping.putAdmin(ctx, hold)
	})
	return dsn
}

// keeping is the test process's keepers.
var keeping = &keepers{conns: map[string]*pgx.Conn{}}

// keepersMax bounds the sessions one test process keeps open: about as
// many databases as it holds at once (-test.parallel), and far below the
// test server's connection limit.
const keepersMax = 16

// keepers holds, for pooled databases this test process lent and got back,
// the session that emptied it, left open between tests (idle, no
// transaction, no lock). Lending the database again with it costs a
// fraction of a new session: no backend to start, and the catalog entries
// emptying and fingerprinting read are cached (the server invalidates
// them on any change, so they are never stale). Measured on a throwaway
// cluster, server and client CPU of 60 rounds of lending a database,
// writing a row into it on a session of the test's own and giving it back:
// 0.21 s a round with a new session, 0.08 to 0.09 s with a kept one.
//
// A kept session is no way into another test's data: it is opened only by
// a lending, under the database's lock, and the next holder of that lock
// in another process ends it (lend's endSessions) before it opens the
// database. It is the one package-level mutable value of pgtest: the
// sessions must outlive a test, and tests reach the pool through
// NewStore(tb, dims) alone.
//
// It also keeps the sessions on the test server's own database that held
// a pooled database's lock for a test (migratedDatabase's hold), once they
// released every advisory lock they held: the next lending in the process
// takes one instead of connecting. Each lending needs such a session, and a
// new one costs the server a backend (on this project's 2-core test
// machine about 40 ms of server CPU for a connection and its first
// statements, measured over 200 connections).
type keepers struct {
	mu     sync.Mutex
	conns  map[string]*pgx.Conn // by database name
	admins []*pgx.Conn          // idle sessions on the test server's database, holding no lock
}

// numbers returns the pool numbers of schema key this process keeps a
// session on, smallest first.
func (k *keepers) numbers(key string) []int {
	k.mu.Lock()
	defer k.mu.Unlock()
	var ns []int
	for name := range k.conns {
		if s, ok := strings.CutPrefix(name, poolPrefix+key+"_"); ok {
			if n, err := strconv.Atoi(s); err == nil {
				ns = append(ns, n)
			}
		}
	}
	sort.Ints(ns)
	return ns
}

// take removes and returns the session kept on database name, or nil.
func (k *keepers) take(name string) *pgx.Conn {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.conns[name]
	delete(k.conns, name)
	return c
}

// put keeps conn, a session on database name; beyond keepersMax it is
// closed instead.
func (k *keepers) put(name string, conn *pgx.Conn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.conns) >= keepersMax {
		conn.Close(context.Background())
		return
	}
	k.conns[name] = conn
}

// adminsMax bounds the idle sessions on the test server's database one test
// process keeps: about as many lendings as it makes at once
// (-test.parallel).
const adminsMax = 8

// takeAdmin removes and returns a kept session on the test server's
// database that still answers, or nil.
func (k *keepers) takeAdmin(ctx context.Context) *pgx.Conn {
	for {
		k.mu.Lock()
		n := len(k.admins)
		if n == 0 {
			k.mu.Unlock()
			return nil
		}
		c := k.admins[n-1]
		k.admins = k.admins[:n-1]
		k.mu.Unlock()
		if err := c.Ping(ctx); err == nil {
			return c
		}
		c.Close(context.Background())
	}
}

// putAdmin releases every session-level advisory lock conn holds (the
// pooled database's, and any a failed step left) and keeps it for the next
// lending; a session that cannot do that, is in a transaction, or is one
// too many is closed, which releases its locks too.
func (k *keepers) putAdmin(ctx context.Context, conn *pgx.Conn) {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_unlock_all()"); err != nil || conn.PgConn().TxStatus() != 'I' {
		conn.Close(context.Background())
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.admins) >= adminsMax {
		conn.Close(context.Background())
		return
	}
	k.admins = append(k.admins, conn)
}

// giveBack closes pooled database name to connections and ends the
// sessions still on it but keeper's (nil: none), as dropping it did: a
// program the test started or a connection pool it did not close must not
// reconnect and write into the database once another test holds it. lend
// opens it again.
func giveBack(ctx context.Context, admin *pgx.Conn, name string, keeper *pgx.Conn) error {
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" WITH ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("closing it to connections: %w", err)
	}
	if err := endSessionsBut(ctx, admin, name, keeper); err != nil {
		return fmt.Errorf("ending its sessions: %w", err)
	}
	return nil
}

// errMissing is lend's report of a pooled database not yet created.
var errMissing = errors.New("not created yet")

// lend empties pooled database name (DSN dsn), which the caller holds the
// lock of, and checks that its schema and the migrations' rows are what they
// were when it was copied from the template. Every session on the database
// ends first but keeper (nil: none), a session on it kept from an earlier
// lending (see keepers), which does the work; without one, a new session
// does. It returns that session, open, for the caller to keep or close; on
// error it is closed.
func lend(ctx context.Context, admin *pgx.Conn, name, dsn string, keeper *pgx.Conn) (*pgx.Conn, error) {
	conn, err := lendOn(ctx, admin, name, dsn, keeper)
	if err != nil && conn != nil {
		conn.Close(context.Background())
	}
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// lendOn does lend's work, returning the session it used (nil if none)
// even on error.
func lendOn(ctx context.Context, admin *pgx.Conn, name, dsn string, keeper *pgx.Conn) (*pgx.Conn, error) {
	st, err := stateOf(ctx, admin, name)
	if err != nil {
		return keeper, err
	}
	// A process killed mid-test may have left sessions, even one in
	// a transaction holding locks.
	if err := endSessionsBut(ctx, admin, name, keeper); err != nil {
		return keeper, fmt.Errorf("ending its sessions: %w", err)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+name+" WITH ALLOW_CONNECTIONS true"); err != nil {
		return keeper, fmt.Errorf("opening it to connections: %w", err)
	}
	conn := keeper
	if conn == nil {
		if conn, err = pgx.Connect(ctx, dsn); err != nil {
			return nil, fmt.Errorf("connecting: %w", err)
		}
	}
	if err := empty(ctx, conn, st.Seeded); err != nil {
		return conn, err
	}
	fp, err := fingerprint(ctx, conn, st.Seeded)
	if err != nil {
		return conn, err
	}
	if fp != st.Fingerprint {
		return conn, fmt.Errorf("its schema or the migrations' rows changed since it was copied")
	}
	return conn, nil
}

// stateOf reads the state copyToPool recorded for pooled database name.
func stateOf(ctx context.Context, admin *pgx.Conn, name string) (poolState, error) {
	var st poolState
	var comment *string
	err := admin.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).Scan(&comment)
	if err == pgx.ErrNoRows {
		return st, errMissing
	}
	if err != nil {
		return st, fmt.Errorf("reading its state: %w", err)
	}
	if comment == nil {
		return st, fmt.Errorf("no state recorded (a copy that did not finish)")
	}
	if err := json.Unmarshal([]byte(*comment), &st); err != nil {
		return st, fmt.Errorf("reading its state: %w", err)
	}
	return st, nil
}

// empty empties every table of the public schema but the seeded ones,
// restarts every sequence and forgets the planner's statistics, so that the
// database is as its template was.
//
// Tables with a vector index (HNSW) are truncated, with every table that
// references them: a deleted row stays in an HNSW graph until VACUUM, and
// the next test's nearest-neighbour search would walk through it. The
// others are emptied by DELETE with triggers and foreign keys off (session
// replication role): TRUNCATE gives every table and index a new file and
// unlinks the old one, which cost about three times the rest of lending
// (0.17 against 0.05 s of server CPU per lending, measured on a throwaway
// cluster); a delete from an empty table costs nothing. What DELETE leaves
// (dead rows, a table's size in the catalog) changes no result, only
// space, which autovacuum takes back. Only a superuser may turn triggers
// off, or delete statistics; under another role every table is
// truncated and statistics are kept.
func empty(ctx context.Context, conn *pgx.Conn, seeded []string) error {
	var super bool
	if err := conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil {
		return fmt.Errorf("reading the test role: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT format('%I.%I', n.nspname, c.relname), EXISTS (
			SELECT FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am am ON am.oid = x.relam
			WHERE i.indrelid = c.oid AND am.amname IN ('hnsw', 'ivfflat'))
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relname = ANY($1) ORDER BY 1`, seeded)
	if err != nil {
		return fmt.Errorf("listing its tables: %w", err)
	}
	type table struct {
		name   string
		vector bool
	}
	tables, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (table, error) {
		var t table
		return t, r.Scan(&t.name, &t.vector)
	})
	if err != nil {
		return fmt.Errorf("listing its tables: %w", err)
	}
	batch := &pgx.Batch{}
	batch.Queue("SET lock_timeout = '60s'")
	var truncate, del []string
	for _, t := range tables {
		if t.vector || !super {
			truncate = append(truncate, t.name)
		} else {
			del = append(del, t.name)
		}
	}
	if len(truncate) > 0 && super {
		// Only those holding rows: an empty one costs its files too.
		var full []string
		for _, t := range truncate {
			var some bool
			if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+t+")").Scan(&some); err != nil {
				return fmt.Errorf("reading table %s: %w", t, err)
			}
			if some {
				full = append(full, t)
			}
		}
		truncate = full
	}
	if len(truncate) > 0 {
		batch.Queue("TRUNCATE " + strings.Join(truncate, ", ") + " CASCADE")
	}
	if len(del) > 0 {
		batch.Queue("SET session_replication_role = replica")
		for _, t := range del {
			batch.Queue("DELETE FROM " + t)
		}
		batch.Queue("RESET session_replication_role")
	}
	batch.Queue(`SELECT setval(format('%I.%I', schemaname, sequencename), start_value, false)
		FROM pg_sequences WHERE schemaname = 'public' AND last_value IS NOT NULL`)
	// Statistics a test's rows left would steer the next test's plans
	// (neither TRUNCATE nor DELETE drops them).
	if super {
		batch.Queue(`DELETE FROM pg_statistic WHERE starelid IN
			(SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace)`)
	}
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("emptying it: %w", err)
	}
	return nil
}

// fingerprint hashes what emptying a database must leave as the template
// had it: the public schema's tables, columns, indexes, constraints,
// triggers, functions and sequences' positions, the extensions, the
// schemas, and the rows of the seeded tables.
func fingerprint(ctx context.Context, conn *pgx.Conn, seeded []string) (string, error) {
	// Raw catalog fields, not pg_get_indexdef and the like: those load
	// much of the catalog cache into the new backend, three times the
	// cost of the rest of lending.
	parts := []string{
		`SELECT format('c %s %s %s', relname, relkind, relpersistence) FROM pg_class WHERE relnamespace = 'public'::regnamespace`,
		`SELECT format('a %s %s %s %s %s %s', c.relname, a.attname, a.atttypid, a.atttypmod, a.attnotnull, md5(d.adbin::text))
			FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
			WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped`,
		`SELECT format('i %s %s %s %s %s', x.relname, c.relname, i.indkey, i.indisunique, i.indisvalid)
			FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid
			WHERE c.relnamespace = 'public'::regnamespace`,
		`SELECT format('k %s %s %s %s', conname, contype, convalidated, md5(conbin::text))
			FROM pg_constraint WHERE connamespace = 'public'::regnamespace`,
		`SELECT format('t %s %s %s', c.relname, t.tgname, t.tgenabled) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
			WHERE NOT t.tgisinternal`,
		`SELECT format('f %s %s %s', proname, proargtypes, md5(prosrc)) FROM pg_proc WHERE pronamespace = 'public'::regnamespace`,
		`SELECT format('q %s %s', sequencename, last_value) FROM pg_sequences WHERE schemaname = 'public'`,
		`SELECT format('e %s %s', extname, extversion) FROM pg_extension`,
		// pg_temp_N and pg_toast_temp_N come and go with sessions
		// using temporary tables.
		`SELECT format('n %s', nspname) FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%'`,
	}
	for _, t := range seeded {
		id := pgx.Identifier{"public", t}.Sanitize()
		parts = append(parts, fmt.Sprintf(`SELECT format('r %%s %%s', %s, (SELECT md5(string_agg(r::text, E'\n' ORDER BY r::text)) FROM %s r))`,
			quoteLiteral(t), id))
	}
	q := "SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM (" + strings.Join(parts, " UNION ALL ") + ") s(x)"
	var fp string
	if err := conn.QueryRow(ctx, q).Scan(&fp); err != nil {
		return "", fmt.Errorf("fingerprinting its schema: %w", err)
	}
	return fp, nil
}

// copyToPool creates pooled database name (DSN dsn), which the caller holds
// the lock of, as a copy of the migrated template of key and dims, and
// records its state. The copy is made under the template lock, so that no
// template is dropped while it is copied (see sweepStale). It returns the
// session that read the copy, open, for the caller to keep (see keepers)
// or close.
func copyToPool(ctx context.Context, tb testing.TB, admin *pgx.Conn, key string, dims int, name, dsn string) *pgx.Conn {
	tb.Helper()
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		tb.Fatalf("locking the template database: %v", err)
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLockKey)
	tmpl := ensureTemplate(ctx, tb, admin, key, dims)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+tmpl+copyStrategy(admin)); err != nil {
		tb.Fatalf("creating pooled test database %s: %v", name, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connecting to pooled test database %s: %v", name, err)
	}
	ok := false
	defer func() {
		if !ok {
			conn.Close(context.Background())
		}
	}()
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		tb.Fatalf("listing the tables of %s: %v", name, err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatalf("listing the tables of %s: %v", name, err)
	}
	st := poolState{Seeded: []string{}}
	for _, t := range tables {
		var some bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+pgx.Identifier{"public", t}.Sanitize()+")").Scan(&some); err != nil {
			tb.Fatalf("reading table %s of %s: %v", t, name, err)
		}
		if some {
			st.Seeded = append(st.Seeded, t)
		}
	}
	if st.Fingerprint, err = fingerprint(ctx, conn, st.Seeded); err != nil {
		tb.Fatalf("pooled test database %s: %v", name, err)
	}
	b, _ := json.Marshal(st)
	if _, err := admin.Exec(ctx, "COMMENT ON DATABASE "+name+" IS "+quoteLiteral(string(b))); err != nil {
		tb.Fatalf("recording the state of %s: %v", name, err)
	}
	ok = true
	return conn
}

// quoteLiteral quotes s as an SQL string literal (COMMENT takes no
// parameters).
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
