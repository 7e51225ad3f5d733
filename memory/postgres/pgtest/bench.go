package pgtest

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
)

// BenchStore opens the store of the campaign `glyphoxa bench` generates
// and keeps for spec (database spec.DatabaseName() on the test server; its
// campaign is "bench"), for benchmarks at a scale too large to generate
// per run. The benchmark is skipped when the database has not been
// generated (`make bench`) or holds another spec's data.
func BenchStore(b *testing.B, spec benchdata.Spec) *postgres.Store {
	b.Helper()
	ctx := context.Background()
	u, err := url.Parse(DSN(b))
	if err != nil {
		b.Fatal(err)
	}
	u.Path = "/" + spec.DatabaseName()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		b.Skipf("no %s database (run `make bench` once to generate it): %v", spec.DatabaseName(), err)
	}
	var key string
	err = conn.QueryRow(ctx, "SELECT value FROM glyphoxa_meta WHERE key = 'bench_key'").Scan(&key)
	conn.Close(ctx)
	if err != nil || key != spec.Key() {
		b.Skipf("%s holds no %s campaign of this version (run `make bench`): %v", spec.DatabaseName(), spec.Name, err)
	}
	s, err := postgres.NewStore(ctx, u.String(), spec.Dims)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s
}
