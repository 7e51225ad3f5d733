package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// A role that may not create pgvector (not a trusted extension) is told
// what a superuser must run, not only "permission denied".
func TestMigrateWithoutExtensionRightsSaysWhatToRun(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	admin, err := pgx.Connect(ctx, pgtest.DSN(t))
	check(t, err)
	defer admin.Close(context.Background())
	role := fmt.Sprintf("glyphoxa_plain_%d", time.Now().UnixNano())
	_, err = admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN")
	check(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), pgtest.DSN(t))
		if err == nil {
			c.Exec(context.Background(), "DROP ROLE IF EXISTS "+role) //nolint:errcheck // best effort
			c.Close(context.Background())
		}
	})
	dsn := pgtest.NewDatabase(t) // dropped before the role (cleanups run last first)
	u, err := url.Parse(dsn)
	check(t, err)
	_, err = admin.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()+" OWNER TO "+role)
	check(t, err)
	u.User = url.User(role)
	_, err = postgres.NewStore(ctx, u.String(), testDims)
	if err == nil {
		t.Fatal("a role that may not create pgvector migrated the database")
	}
	for _, w := range []string{"permission denied", "have a superuser run", "CREATE EXTENSION IF NOT EXISTS vector"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
}
