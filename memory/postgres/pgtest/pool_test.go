package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// sampleCampaign fills most of the schema: entities, facts, sessions,
// lines, chunks and their postings.
const sampleCampaign = "../../../testdata/campaigns/ironhold-saga.yaml"

// poolDatabase copies the template into a pooled database of the test's
// own, under a name no other test takes, dropped when the test ends.
func poolDatabase(t *testing.T) (admin *pgx.Conn, name, dsn string) {
	t.Helper()
	ctx := context.Background()
	key, ok := schemaKey(8)
	if !ok {
		t.Fatal("the migrations' source files are not readable from the test")
	}
	admin, err := pgx.Connect(ctx, DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	var b [6]byte
	_, _ = rand.Read(b[:])
	name = "glyphoxa_t_" + hex.EncodeToString(b[:])
	if dsn, err = withDatabase(DSN(t), name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dropDatabase(admin, name) })
	copyToPool(ctx, t, admin, key, 8, name, dsn).Close(ctx)
	return admin, name, dsn
}

// fill imports the sample campaign into the database at dsn and leaves
// planner statistics behind.
func fill(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	s, err := postgres.NewStore(ctx, dsn, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := Import(t, s, sampleCampaign)
	// Chunks, with embeddings in the HNSW index, and their postings.
	sessions, err := c.Sessions().Sessions(ctx)
	if err != nil || len(sessions) == 0 {
		t.Fatalf("the sample campaign's sessions: %v (%d)", err, len(sessions))
	}
	if err := c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k1", SessionID: sessions[0].ID, Content: "Aldric pours the ale.", Embedding: []float32{1, 0, 0, 0, 0, 0, 0, 0}},
		{ID: "k2", SessionID: sessions[0].ID, Content: "Brenna sharpens the blade.", Embedding: []float32{0, 1, 0, 0, 0, 0, 0, 0}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
}

// contents lists the public tables with rows, the sequences that moved and
// the tables with planner statistics, as "rows:<table>", "seq:<sequence>"
// and "stats:<table>".
func contents(t *testing.T, dsn string) []string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tb := range tables {
		var some bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+pgx.Identifier{"public", tb}.Sanitize()+")").Scan(&some); err != nil {
			t.Fatal(err)
		}
		if some {
			got = append(got, "rows:"+tb)
		}
	}
	rows, err = conn.Query(ctx, "SELECT 'seq:' || sequencename FROM pg_sequences WHERE schemaname = 'public' AND last_value IS NOT NULL ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	rows, err = conn.Query(ctx, `SELECT DISTINCT 'stats:' || starelid::regclass::text FROM pg_statistic
		WHERE starelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'public'::regnamespace) ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return append(append(got, seqs...), stats...)
}

// TestLentDatabaseIsAsTheTemplate fills a pooled database as a test would,
// leaves a session in a transaction holding a lock on it (a test process
// killed mid-test), and lends it again, on a new session and on the session
// kept from the lending before (see keepers): the next test must find only
// what the migrations wrote.
func TestLentDatabaseIsAsTheTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, name, dsn := poolDatabase(t)
	fresh := contents(t, dsn)
	for _, c := range fresh {
		if !strings.HasPrefix(c, "rows:") {
			t.Fatalf("a fresh copy of the template has %s", c)
		}
	}
	var keeper *pgx.Conn
	defer func() {
		if keeper != nil {
			keeper.Close(ctx)
		}
	}()
	for _, kept := range []bool{false, true} {
		fill(t, dsn)
		filled := contents(t, dsn)
		if len(filled) <= len(fresh)+3 {
			t.Fatalf("the sample campaign filled only %v (fresh: %v): the test checks nothing", filled, fresh)
		}

		stuck, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer stuck.Close(ctx)
		if _, err := stuck.Exec(ctx, "BEGIN; LOCK TABLE entities IN ACCESS EXCLUSIVE MODE"); err != nil {
			t.Fatal(err)
		}

		var with *pgx.Conn
		if kept {
			if keeper == nil {
				t.Fatal("the first lending returned no session")
			}
			with = keeper
		} else if keeper != nil {
			t.Fatal("a session kept before the first lending")
		}
		if keeper, err = lend(ctx, admin, name, dsn, with); err != nil {
			t.Fatalf("lending a used database (kept session %v): %v", kept, err)
		}
		if kept && keeper != with {
			t.Error("lending with a kept session used another")
		}
		if got := contents(t, dsn); strings.Join(got, " ") != strings.Join(fresh, " ") {
			t.Errorf("lent after use (kept session %v), it holds %v; a fresh copy holds %v", kept, got, fresh)
		}
		if err := stuck.Ping(ctx); err == nil {
			t.Errorf("the session left in a transaction survived the lending (kept session %v)", kept)
		}
	}
}

// TestLentDatabaseWithAChangedSchemaIsRefused: a test that changed the
// schema or the migrations' rows leaves a database that no emptying makes
// right; lending it fails (and migratedDatabase copies it again).
func TestLentDatabaseWithAChangedSchemaIsRefused(t *testing.T) {
	t.Parallel()
	for _, change := range []string{
		"ALTER TABLE entities ADD COLUMN extra int",
		"DROP INDEX " + "chunks_embedding_hnsw",
		"ALTER TABLE entities DISABLE TRIGGER USER",
		"DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)",
		"CREATE TABLE scratch (id int)",
	} {
		t.Run(change, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin, name, dsn := poolDatabase(t)
			keeper, err := lend(ctx, admin, name, dsn, nil)
			if err != nil {
				t.Fatalf("lending an unchanged database: %v", err)
			}
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.Exec(ctx, change)
			conn.Close(ctx)
			if err != nil {
				t.Fatalf("making the change: %v", err)
			}
			// On the session kept from the lending (its catalog
			// caches filled before the change), then on a new one.
			if c, err := lend(ctx, admin, name, dsn, keeper); err == nil {
				c.Close(ctx)
				t.Fatal("a database whose schema changed was lent on the kept session")
			}
			if !keeper.IsClosed() {
				t.Error("a kept session that failed to lend was not closed")
			}
			if c, err := lend(ctx, admin, name, dsn, nil); err == nil {
				c.Close(ctx)
				t.Fatal("a database whose schema changed was lent")
			}
		})
	}
}

// TestPooledDatabasesAreTheTestsOwn: two tests holding pooled databases at
// once hold different ones, and a database is lent again once its test
// ends.
func TestPooledDatabasesAreTheTestsOwn(t *testing.T) {
	t.Parallel()
	var first, second string
	t.Run("both", func(t *testing.T) {
		first = migratedDatabase(t, 8)
		second = migratedDatabase(t, 8)
		if first == second {
			t.Fatalf("two holders got the same database %s", first)
		}
		fill(t, first)
	})
	// Whichever database this gets (other test processes take them
	// too), it must hold nothing of another test's.
	again := migratedDatabase(t, 8)
	_, _, fresh := poolDatabase(t)
	if got, want := contents(t, again), contents(t, fresh); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("a lent database holds %v; a fresh copy %v", got, want)
	}
}

// TestGivenBackDatabaseTakesNoConnection: once its test ended, a pooled
// database ends the sessions left on it but the one kept for the next
// lending, and refuses new ones (a leaked connection pool reconnecting
// would write into the next test's database) until it is lent again.
func TestGivenBackDatabaseTakesNoConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, name, dsn := poolDatabase(t)
	keeper, err := lend(ctx, admin, name, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer keeper.Close(ctx)
	left, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer left.Close(ctx)
	if err := giveBack(ctx, admin, name, keeper); err != nil {
		t.Fatal(err)
	}
	if err := left.Ping(ctx); err == nil {
		t.Error("a session left on a given-back database survived")
	}
	if err := keeper.Ping(ctx); err != nil {
		t.Errorf("the kept session did not survive the giving back: %v", err)
	}
	if c, err := pgx.Connect(ctx, dsn); err == nil {
		c.Close(ctx)
		t.Fatal("a given-back database took a new connection")
	}
	again, err := lend(ctx, admin, name, dsn, keeper)
	if err != nil {
		t.Fatalf("lending it again: %v", err)
	}
	if again != keeper {
		t.Error("lending it again did not use the kept session")
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connecting to it once lent again: %v", err)
	}
	c.Close(ctx)
	// Without a kept session, every session ends.
	if err := giveBack(ctx, admin, name, nil); err != nil {
		t.Fatal(err)
	}
	if err := keeper.Ping(ctx); err == nil {
		t.Error("a session survived a giving back that kept none")
	}
}

// TestSweepDropsOnlyWhatNobodyUses: a new schema's template sweeps the
// undated or old templates of other keys and the pooled databases of keys
// whose template is gone, but not one a test holds, nor the template and
// pool of a key in use (another dimension of the schema).
func TestSweepDropsOnlyWhatNobodyUses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	key := func() string {
		var b [8]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}
	stale, live := key(), key()
	names := map[string]bool{ // name: kept
		templatePrefix + stale:    false,
		poolPrefix + stale + "_0": false,
		poolPrefix + stale + "_1": true, // held below
		templatePrefix + live:     true,
		poolPrefix + live + "_0":  true,
	}
	for n := range names {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+n+copyStrategy(admin)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dropDatabase(admin, n) })
	}
	if _, err := admin.Exec(ctx, "COMMENT ON DATABASE "+templatePrefix+live+" IS "+quoteLiteral(strconv.FormatInt(time.Now().Unix(), 10))); err != nil {
		t.Fatal(err)
	}
	holder, err := pgx.Connect(ctx, DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1, 1)", poolLockSpace(stale)); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		t.Fatal(err)
	}
	sweepStale(ctx, t, admin, key())
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_unlock($1)", templateLockKey); err != nil {
		t.Fatal(err)
	}
	for n, kept := range names {
		var exists bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", n).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists != kept {
			t.Errorf("%s: exists after the sweep %v, want %v", n, exists, kept)
		}
	}
}
