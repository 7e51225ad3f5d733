package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackOlderBinaryOnANewerSchema: a self-hoster who upgraded glyphoxa
// (its migrations ran) and then went back to the older binary was told
// "database is up to date", and the older binary's writes then failed on
// the newer schema with SQL errors ("no unique or exclusion constraint
// matching the ON CONFLICT specification") or wrote rows the newer schema
// does not expect. A schema newer than the binary is refused when the store
// opens, naming both versions and what to do.
func TestAttackOlderBinaryOnANewerSchema(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	dsn := pgtest.NewDatabase(t)
	s, err := postgres.NewStore(ctx, dsn, testDims)
	check(t, err)
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	check(t, err)
	defer conn.Close(context.Background())
	var newest int
	check(t, conn.QueryRow(ctx, "SELECT max(version) FROM schema_migrations").Scan(&newest))
	_, err = conn.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, 'from_a_newer_glyphoxa')", newest+1)
	check(t, err)

	_, err = postgres.NewStore(ctx, dsn, testDims)
	if !errors.Is(err, postgres.ErrSchemaNewer) {
		t.Fatalf("opening a database of a newer schema: %v, want ErrSchemaNewer", err)
	}
	for _, w := range []string{"newer", "from_a_newer_glyphoxa"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q: %v", w, err)
		}
	}
	if err := postgres.Migrate(ctx, conn, testDims); !errors.Is(err, postgres.ErrSchemaNewer) {
		t.Errorf("Migrate on a database of a newer schema: %v, want ErrSchemaNewer", err)
	}
}
