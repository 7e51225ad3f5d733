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
