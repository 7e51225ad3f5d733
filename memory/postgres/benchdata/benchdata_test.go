package benchdata_test

import (
	"context"
	"fmt"
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

// contentDigest is a digest of everything a campaign's graph and change
// log hold.
func contentDigest(t *testing.T, ctx context.Context, conn *pgx.Conn) string {
	t.Helper()
	var digest string
	if err := conn.QueryRow(ctx, `SELECT md5(string_agg(x, '|' ORDER BY x)) FROM (
		SELECT 'e' || id || name || type AS x FROM entities
		UNION ALL SELECT 'r' || source_id || target_id || rel_type || status || confidence::text FROM relationships
		UNION ALL SELECT 'g' || id::text || kind || ref || op FROM graph_changes) t`).Scan(&digest); err != nil {
		t.Fatal(err)
	}
	return digest
}

// Two benchmark runs' writes leave the campaign as generated: the second
// run measures what the first did, not a campaign grown by it.
func TestRestoreUndoesBenchmarkWrites(t *testing.T) {
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
	generated := contentDigest(t, ctx, conn)
	c, err := s.Campaign(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		// What `glyphoxa bench` writes: new entities, and facts between
		// generated ones (one of them twice: an update).
		for i := range 3 {
			if err := c.Graph().UpsertEntity(ctx, memory.Entity{ID: fmt.Sprintf("%s%d", benchdata.WrittenEntityPrefix, i),
				Type: "npc", Name: fmt.Sprintf("Newcomer %d", i)}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: benchdata.EntityID(i % 2),
				TargetID: benchdata.EntityID(7), Type: benchdata.WrittenRelType,
				Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceInferred}}); err != nil {
				t.Fatal(err)
			}
		}
		if contentDigest(t, ctx, conn) == generated {
			t.Fatalf("run %d: the writes changed nothing; the test tests nothing", run)
		}
		ents, facts, err := benchdata.Restore(ctx, conn, "bench")
		if err != nil {
			t.Fatal(err)
		}
		if ents != 3 || facts != 2 {
			t.Errorf("run %d: removed %d entities and %d facts, want 3 and 2", run, ents, facts)
		}
		if got := contentDigest(t, ctx, conn); got != generated {
			t.Fatalf("run %d: after Restore the campaign differs from the generated one", run)
		}
	}
	// A campaign generated before its change log's end was recorded is
	// restored as well.
	if _, err := conn.Exec(ctx, "DELETE FROM glyphoxa_meta WHERE key LIKE 'bench_changes:%'"); err != nil {
		t.Fatal(err)
	}
	if err := c.Graph().UpsertEntity(ctx, memory.Entity{ID: benchdata.WrittenEntityPrefix + "x", Type: "npc", Name: "Late"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := benchdata.Restore(ctx, conn, "bench"); err != nil {
		t.Fatal(err)
	}
	if got := contentDigest(t, ctx, conn); got != generated {
		t.Fatal("an older campaign: after Restore it differs from the generated one")
	}
}

// The two scales differ in size, not in density: per entity the same
// facts, lines, chunks and chunk links, and sessions of the same length.
func TestScalesHaveEqualDensity(t *testing.T) {
	a, b := benchdata.Scale1k.Density(), benchdata.Scale100k.Density()
	if a != b {
		t.Fatalf("1k density %+v, 100k density %+v", a, b)
	}
	if a.ChunkLinks != 3*a.Chunks {
		t.Fatalf("density %+v: every chunk links 3 entities", a)
	}
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
