package postgres_test

import (
	"context"
	"net/url"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestStoreConnectionSettings: the store's connections run without JIT
// compilation (it cost seconds on statements that run in a tenth of one)
// and without parallel workers (starting them cost a session-log search
// 67 ms of 0.5), unless the DSN sets the parameter, which is the
// operator's choice and kept; the other is still set.
func TestStoreConnectionSettings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dsn := pgtest.NewStore(t, 16)
	with := func(name, value string) string {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set(name, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	for _, tc := range []struct {
		name, dsn    string
		jit, workers string
	}{
		{"default", dsn, "off", "0"},
		{"jit set by the DSN", with("jit", "on"), "on", "0"},
		{"workers set by the DSN", with("max_parallel_workers_per_gather", "3"), "off", "3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := postgres.NewStore(ctx, tc.dsn, 16, postgres.WithMaxConns(2))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Two connections at once: the settings hold for every
			// connection of the pool, not only the first.
			for range 2 {
				c, err := s.Pool().Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Release()
				for _, p := range []struct{ name, want string }{
					{"jit", tc.jit}, {"max_parallel_workers_per_gather", tc.workers},
				} {
					var got string
					if err := c.QueryRow(ctx, "SHOW "+p.name).Scan(&got); err != nil {
						t.Fatal(err)
					}
					if got != p.want {
						t.Errorf("%s = %s, want %s", p.name, got, p.want)
					}
				}
			}
		})
	}
}
