package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/glyphoxa/glyphoxa/memory"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockKey serialises concurrent starts: every glyphoxa process
// migrating the same database takes this advisory lock first.
const migrateLockKey = 0x67_6c_79_70_68 // "glyph"

// metaEmbeddingDimensions is the glyphoxa_meta key holding the dimension of
// chunks.embedding.
const metaEmbeddingDimensions = "embedding_dimensions"

type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. A file is
// named NNNN_name.sql.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		if !ok {
			return nil, fmt.Errorf("migration %q: name must be NNNN_name.sql", e.Name())
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %q: bad version: %w", e.Name(), err)
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("two migrations with version %d", ms[i].version)
		}
	}
	return ms, nil
}

// MigrationVersions returns the versions of the migrations this glyphoxa
// knows, in order (the numbering has gaps).
func MigrationVersions() ([]int, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	vs := make([]int, len(ms))
	for i, m := range ms {
		vs[i] = m.version
	}
	return vs, nil
}

// Migrate brings the database at conn up to the newest schema and makes sure
// the semantic index has dims-dimensional embeddings. Each migration runs in
// its own transaction; concurrent callers wait on an advisory lock, so it is
// safe to call on every start. If the database already holds embeddings of
// another dimension it returns a *memory.DimensionMismatchError and changes
// nothing.
func Migrate(ctx context.Context, conn *pgx.Conn, dims int) error {
	_, err := MigrateApplied(ctx, conn, dims)
	return err
}

// MigrateApplied is [Migrate], returning the versions of the migrations it
// applied, in order: none when the database had them all (or another
// process applied them meanwhile). The versions applied before an error
// are returned with it.
func MigrateApplied(ctx context.Context, conn *pgx.Conn, dims int) ([]int, error) {
	if dims <= 0 {
		return nil, fmt.Errorf("%w: embedding dimensions must be positive, got %d", memory.ErrInvalid, dims)
	}
	if current, err := upToDate(ctx, conn, dims); err != nil || current {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return nil, fmt.Errorf("taking the migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey) //nolint:errcheck // released with the session anyway

	applied, err := applyMigrations(ctx, conn)
	if err != nil {
		return applied, err
	}
	return applied, ensureDimensions(ctx, conn, dims)
}

// upToDate reports whether the database at conn has every migration and
// dims-dimensional embeddings already, in one round trip and without the
// migration lock: what every start of a process finds after the first. It
// returns a *memory.DimensionMismatchError for a database of another
// dimension, and false (with no error) when it cannot tell, for a new
// database or one being migrated; [Migrate] then takes the lock and looks
// again.
func upToDate(ctx context.Context, conn *pgx.Conn, dims int) (bool, error) {
	ms, err := migrations()
	if err != nil {
		return false, err
	}
	var applied []int32
	var stored *string
	// The simple protocol sends the query once, without preparing it first.
	err = conn.QueryRow(ctx, `SELECT coalesce((SELECT array_agg(version) FROM schema_migrations), '{}'),
		(SELECT value FROM glyphoxa_meta WHERE key = '`+metaEmbeddingDimensions+`')`, pgx.QueryExecModeSimpleProtocol).
		Scan(&applied, &stored)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table: a new database
			return false, nil
		}
		return false, fmt.Errorf("reading schema_migrations: %w", err)
	}
	have := make(map[int]bool, len(applied))
	for _, v := range applied {
		have[int(v)] = true
	}
	if err := notNewer(ctx, conn, ms, applied); err != nil {
		return false, err
	}
	for _, m := range ms {
		if !have[m.version] {
			return false, nil
		}
	}
	if stored == nil {
		return false, nil
	}
	if n, err := strconv.Atoi(*stored); err == nil && n != dims {
		return false, &memory.DimensionMismatchError{Database: n, Configured: dims}
	}
	return *stored == strconv.Itoa(dims), nil
}

// applyMigrations applies the migrations the database lacks, each in its
// own transaction, and returns their versions.
func applyMigrations(ctx context.Context, conn *pgx.Conn) ([]int, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("creating schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	rows, err := conn.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("reading schema_migrations: %w", err)
	}
	for _, v := range vs {
		applied[int(v)] = true
	}
	if err := notNewer(ctx, conn, ms, vs); err != nil {
		return nil, err
	}
	var done []int
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name)
			return err
		})
		if err != nil {
			return done, fmt.Errorf("applying migration %04d_%s: %w%s", m.version, m.name, err, extensionHint(err))
		}
		done = append(done, m.version)
	}
	return done, nil
}

// ErrSchemaNewer is returned when the database holds migrations this
// binary does not know: a newer glyphoxa migrated it. An older binary's
// statements would fail on that schema, or write what it does not expect.
var ErrSchemaNewer = errors.New("the database's schema is newer than this glyphoxa")

// notNewer returns an error wrapping ErrSchemaNewer, naming the unknown
// migrations, when applied holds a version newer than every migration in
// ms (sorted).
func notNewer(ctx context.Context, conn *pgx.Conn, ms []migration, applied []int32) error {
	newest := 0
	if len(ms) > 0 {
		newest = ms[len(ms)-1].version
	}
	if !slices.ContainsFunc(applied, func(v int32) bool { return int(v) > newest }) {
		return nil
	}
	var unknown []string
	rows, err := conn.Query(ctx, "SELECT format('%s_%s', lpad(version::text, 4, '0'), name) FROM schema_migrations WHERE version > $1 ORDER BY version", newest)
	if err == nil {
		unknown, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return fmt.Errorf("reading schema_migrations: %w", err)
	}
	return fmt.Errorf("%w: it has migrations %s, this glyphoxa knows those up to %04d; "+
		"run the glyphoxa that migrated it (or a newer one), or restore a backup taken before the upgrade into a new database",
		ErrSchemaNewer, strings.Join(unknown, ", "), newest)
}

// extensionHint says what to do when the role glyphoxa connects as may not
// create an extension the schema needs (pgvector is not a trusted
// extension: only a superuser creates it).
func extensionHint(err error) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "extension") {
		return ""
	}
	return "; the role glyphoxa connects as may not create extensions: have a superuser run, in this database, " +
		"CREATE EXTENSION IF NOT EXISTS vector; CREATE EXTENSION IF NOT EXISTS btree_gin; CREATE EXTENSION IF NOT EXISTS pg_trgm; then migrate again"
}

// ensureDimensions gives chunks.embedding its dimension and HNSW index on a
// new database, and refuses a database built for another dimension.
func ensureDimensions(ctx context.Context, conn *pgx.Conn, dims int) error {
	var stored string
	err := conn.QueryRow(ctx, "SELECT value FROM glyphoxa_meta WHERE key = $1", metaEmbeddingDimensions).Scan(&stored)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return setDimensions(ctx, tx, dims) })
	case err != nil:
		return fmt.Errorf("reading the embedding dimension: %w", err)
	}
	have, err := strconv.Atoi(stored)
	if err != nil {
		return fmt.Errorf("glyphoxa_meta.%s holds %q, not a number", metaEmbeddingDimensions, stored)
	}
	if have != dims {
		return &memory.DimensionMismatchError{Database: have, Configured: dims}
	}
	return nil
}

// setDimensions (re)creates the embedding column as vector(dims), held in
// the row where it fits, with its HNSW cosine index. Existing embeddings
// are dropped: they were computed for another dimension and must be
// recomputed.
func setDimensions(ctx context.Context, tx pgx.Tx, dims int) error {
	stmts := []string{
		"DROP INDEX IF EXISTS chunks_embedding_hnsw",
		fmt.Sprintf("ALTER TABLE chunks ALTER COLUMN embedding TYPE vector(%d) USING NULL", dims),
		// A new column type takes its type's storage: keep the embedding
		// in the row (migration 0043).
		"ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN",
		"CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding vector_cosine_ops)",
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "54000" {
				return fmt.Errorf("%w: pgvector cannot index %d dimensions: %v", memory.ErrInvalid, dims, err)
			}
			return fmt.Errorf("setting the embedding dimension to %d: %w", dims, err)
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO glyphoxa_meta (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, metaEmbeddingDimensions, strconv.Itoa(dims))
	return err
}

// Reembed rebuilds the semantic index for dims-dimensional embeddings: every
// chunk keeps its text and entity links but loses its embedding, which the
// caller then recomputes (glyphoxa migrate --reembed does). It returns the
// number of chunks that need embedding.
func Reembed(ctx context.Context, conn *pgx.Conn, dims int) (int64, error) {
	if dims <= 0 {
		return 0, fmt.Errorf("%w: embedding dimensions must be positive, got %d", memory.ErrInvalid, dims)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrateLockKey); err != nil {
		return 0, fmt.Errorf("taking the migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", migrateLockKey) //nolint:errcheck
	if _, err := applyMigrations(ctx, conn); err != nil {
		return 0, err
	}
	var n int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if err := setDimensions(ctx, tx, dims); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT count(*) FROM chunks").Scan(&n)
	})
	return n, err
}
