package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// BenchmarkPublishBacklog times the first read of a change log that holds
// a backlog of 20,000 unpublished changes (a large import, a log nobody
// read for a while): LastChange publishes them, 5,000 a statement. It
// reports the time per change (µs/change) beside the time per backlog.
func BenchmarkPublishBacklog(b *testing.B) {
	ctx := context.Background()
	camp, conn := changeLogWorld(b)
	const backlog = 20000
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if _, err := conn.Exec(ctx, `INSERT INTO graph_changes (campaign_id, kind, ref, op)
			SELECT 'camp', 'entity', 'e' || i, 'insert' FROM generate_series(1, $1::int) i`, backlog); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := camp.LastChange(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*backlog), "µs/change")
}

// BenchmarkLastChange times a read of a published change log of 100,000
// changes with nothing new to publish: what the MCP sync tool and the
// continuity checker pay on every call.
func BenchmarkLastChange(b *testing.B) {
	ctx := context.Background()
	camp, conn := changeLogWorld(b)
	if _, err := conn.Exec(ctx, `INSERT INTO graph_changes (campaign_id, kind, ref, op)
		SELECT 'camp', 'entity', 'e' || i, 'insert' FROM generate_series(1, 100000) i`); err != nil {
		b.Fatal(err)
	}
	if _, err := camp.LastChange(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE graph_changes`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := camp.LastChange(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// changeLogWorld is campaign "camp" of a fresh store and a connection to
// its database, closed when b ends.
func changeLogWorld(b *testing.B) (*postgres.Campaign, *pgx.Conn) {
	b.Helper()
	s, dsn := pgtest.NewStore(b, 8)
	camp := pgtest.Campaign(b, s, "camp")
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	return camp, conn
}
