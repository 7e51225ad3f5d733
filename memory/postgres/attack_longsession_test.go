package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// planNode is a node of EXPLAIN (FORMAT JSON)'s plan.
type planNode struct {
	NodeType string     `json:"Node Type"`
	Filter   string     `json:"Filter"`
	Removed  int        `json:"Rows Removed by Filter"`
	Plans    []planNode `json:"Plans"`
}

// TestAttackLiveChunkDeleteGrowsWithTheSquareOfTheSession: on every beat
// of a session being played, the live chunker deletes the session's
// chunks that no longer exist, naming every chunk it keeps. The delete
// compared each chunk of the session with each id kept (`id <> ALL`): at
// 2,500 chunks, 6 million comparisons and 150 ms every 10 s, growing with
// the square of the session's length. The ids kept must be looked up as a
// set, so that no chunk is filtered against the whole list.
func TestAttackLiveChunkDeleteGrowsWithTheSquareOfTheSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c1")
	const n = 2000
	t0 := time.Date(2026, 5, 2, 18, 0, 0, 0, time.UTC)
	cs := make([]memory.Chunk, n)
	keep := make([]string, n)
	for i := range cs {
		cs[i] = memory.Chunk{ID: fmt.Sprintf("s1/%06d", i), SessionID: "s1", Content: fmt.Sprintf("chunk %d of the evening", i),
			StartAt: t0.Add(time.Duration(i) * time.Minute), EndAt: t0.Add(time.Duration(i)*time.Minute + 50*time.Second)}
		keep[i] = cs[i].ID
	}
	if err := camp.Index().IndexChunks(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Pool().Exec(ctx, `ANALYZE chunks`); err != nil {
		t.Fatal(err)
	}
	tx, err := store.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var out []byte
	if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+postgres.DeleteSessionChunksSQL, "c1", "s1", keep[1:]).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("reading the plan: %v\n%s", err, out)
	}
	var walk func(p planNode)
	walk = func(p planNode) {
		if strings.Contains(p.Filter, "ALL") && p.Removed >= n/2 {
			t.Errorf("%s filters the session's chunks one by one against the %d ids kept (%s, %d rows removed)",
				p.NodeType, n-1, p.Filter[:min(len(p.Filter), 40)]+"…", p.Removed)
		}
		if p.NodeType == "Nested Loop" {
			t.Errorf("the delete joins the chunks with the ids kept pair by pair (a nested loop)")
		}
		for _, c := range p.Plans {
			walk(c)
		}
	}
	walk(plans[0].Plan)
	// And it deletes what it should: the one chunk not kept.
	tag, err := tx.Exec(ctx, postgres.DeleteSessionChunksSQL, "c1", "s1", keep[1:])
	if err != nil || tag.RowsAffected() != 0 { // the EXPLAIN ANALYZE deleted it already
		t.Errorf("delete after the explained one: %v rows, %v", tag.RowsAffected(), err)
	}
	var left int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE campaign_id = 'c1' AND session_id = 's1'`).Scan(&left); err != nil || left != n-1 {
		t.Errorf("%d chunks left, want %d (%v)", left, n-1, err)
	}
}

// TestAttackFirstChunkingOfALongSessionInOneStatement: a five-hour session
// imported, or never chunked live, is chunked at once, and IndexChunks
// wrote all its chunks in one statement. A statement is bounded by the
// door's statement timeout (10 s), and its time grows with its rows (the
// HNSW index, the postings triggers): 2,500 chunks took 14 s on a loaded
// machine, and the whole chunking failed. No statement may write more than
// a bounded number of chunks, and every chunk and link still lands, in
// one transaction.
func TestAttackFirstChunkingOfALongSessionInOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c1")
	if err := camp.Graph().UpsertEntity(ctx, memory.Entity{ID: "grimjaw", Type: memory.EntityNPC, Name: "Grimjaw"}); err != nil {
		t.Fatal(err)
	}
	// Rows per statement, as a statement-level trigger sees them (dropped
	// after: the test database goes back to its pool).
	t.Cleanup(func() {
		_, _ = store.Pool().Exec(context.Background(), `DROP TRIGGER IF EXISTS test_chunk_statements ON chunks;
			DROP FUNCTION IF EXISTS test_count_chunks(); DROP TABLE IF EXISTS test_chunk_statements`)
	})
	for _, q := range []string{
		`CREATE TABLE test_chunk_statements (n bigint NOT NULL)`,
		`CREATE FUNCTION test_count_chunks() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN INSERT INTO test_chunk_statements SELECT count(*) FROM fresh; RETURN NULL; END $$`,
		`CREATE TRIGGER test_chunk_statements AFTER INSERT ON chunks REFERENCING NEW TABLE AS fresh
		 FOR EACH STATEMENT EXECUTE FUNCTION test_count_chunks()`,
	} {
		if _, err := store.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	const n = 1000
	t0 := time.Date(2026, 5, 2, 18, 0, 0, 0, time.UTC)
	cs := make([]memory.Chunk, n)
	for i := range cs {
		cs[i] = memory.Chunk{ID: fmt.Sprintf("s1/%06d", i), SessionID: "s1", Content: fmt.Sprintf("Grimjaw, chunk %d of the evening", i),
			SpeakerIDs: []string{"p1"}, EntityIDs: []string{"grimjaw"},
			StartAt: t0.Add(time.Duration(i) * 18 * time.Second), EndAt: t0.Add(time.Duration(i)*18*time.Second + 15*time.Second)}
	}
	if err := camp.Index().IndexChunks(ctx, cs); err != nil {
		t.Fatal(err)
	}
	var statements, largest, total, chunks, links int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*), coalesce(max(n), 0), coalesce(sum(n), 0) FROM test_chunk_statements`).
		Scan(&statements, &largest, &total); err != nil {
		t.Fatal(err)
	}
	if err := store.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM chunks WHERE campaign_id = 'c1'),
		(SELECT count(*) FROM chunk_entities WHERE campaign_id = 'c1')`).Scan(&chunks, &links); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d chunks in %d statements, the largest %d", total, statements, largest)
	if chunks != n || links != n || total != n {
		t.Fatalf("%d chunks and %d links stored, %d written; want %d each", chunks, links, total, n)
	}
	if largest > 250 {
		t.Errorf("one statement wrote %d of the session's %d chunks: its time grows with the session, past the statement timeout", largest, n)
	}
}
