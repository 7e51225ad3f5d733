package postgres_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestStoreConnectionsRunWithoutJIT: the store's connections have JIT
// compilation off (it cost seconds on statements that run in a tenth of
// one), unless the DSN sets it, which is the operator's choice and kept.
func TestStoreConnectionsRunWithoutJIT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dsn := pgtest.NewStore(t, 16)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("jit", "on")
	u.RawQuery = q.Encode()
	for _, tc := range []struct {
		name, dsn, want string
	}{
		{"default", dsn, "off"},
		{"set by the DSN", u.String(), "on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.NewStore(ctx, tc.dsn, 16, postgres.WithMaxConns(2))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Two connections at once: the setting holds for every
			// connection of the pool, not only the first.
			for range 2 {
				c, err := s.Pool().Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Release()
				var jit string
				if err := c.QueryRow(ctx, "SHOW jit").Scan(&jit); err != nil {
					t.Fatal(err)
				}
				if jit != tc.want {
					t.Errorf("jit = %s, want %s", jit, tc.want)
				}
			}
		})
	}
}
