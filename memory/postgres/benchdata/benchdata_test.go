package benchdata_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

var tiny = benchdata.Spec{Name: "tiny", Entities: 120, Relationships: 500, Entries: 900, Chunks: 60,
	EntriesPerSession: 300, Dims: 16, Seed: 3}

// generate builds the tiny campaign in a fresh database and returns a digest
// of its contents.
func generate(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, dsn := pgtest.NewStore(t, tiny.Dims)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := benchdata.Generate(ctx, conn, "bench", tiny, nil); err != nil {
		t.Fatal(err)
	}
	var counts [5]int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM relationships),
		(SELECT count(*) FROM transcript_entries), (SELECT count(*) FROM chunks), (SELECT count(*) FROM sessions)`).
		Scan(&counts[0], &counts[1], &counts[2], &counts[3], &counts[4]); err != nil {
		t.Fatal(err)
	}
	if counts[0] != 120 || counts[1] < 400 || counts[2] != 900 || counts[3] != 60 || counts[4] != 3 {
		t.Fatalf("generated counts %v", counts)
	}
	// The generated campaign works through the store's API.
	c, err := s.Campaign(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Index().Search(ctx, benchdata.ChunkVector(5, tiny), 3, memory.ChunkFilter{})
	if err != nil || len(res) != 3 || res[0].Chunk.ID != "c0000005" {
		t.Fatalf("nearest chunk to chunk 5's own vector: %+v, %v", res, err)
	}
	var digest string
	if err := conn.QueryRow(ctx, `SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
		SELECT id || name || type AS x FROM entities
		UNION ALL SELECT source_id || target_id || rel_type || status || confidence::text FROM relationships
		UNION ALL SELECT session_id || text || at::text FROM transcript_entries
		UNION ALL SELECT id || content || embedding::text FROM chunks) t`).Scan(&digest); err != nil {
		t.Fatal(err)
	}
	return digest
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := generate(t), generate(t)
	if a != b {
		t.Fatalf("two generations differ: %s vs %s", a, b)
	}
}

func TestNamesAreUnique(t *testing.T) {
	seen := map[string]int{}
	for i := range 100_000 {
		n := benchdata.EntityName(i)
		if j, ok := seen[n]; ok {
			t.Fatalf("entities %d and %d are both named %q", j, i, n)
		}
		seen[n] = i
	}
}
