package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// BenchmarkPublishBacklog times the first read of a change log that holds
// a backlog of 20,000 unpublished changes (a large import, a log nobody
// read for a while): LastChange publishes them, 5,000 a statement. It
// reports the time per change (µs/change) beside the time per backlog.
func BenchmarkPublishBacklog(b *testing.B) {
	ctx := context.Background()
	s, dsn := pgtest.NewStore(b, 8)
	camp := pgtest.Campaign(b, s, "camp")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
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
	s, dsn := pgtest.NewStore(b, 8)
	camp := pgtest.Campaign(b, s, "camp")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
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
