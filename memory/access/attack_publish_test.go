package access_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackBacklogIsPublishedInBatches: the first reader of a change
// log nobody read for a while (a large import, a bot without MCP clients
// or continuity checker) publishes the whole backlog. In one statement
// (as first written) 100k changes took 4 to 9 s, against the door's
// 10 s statement timeout: past it the publication was rolled back,
// counted as an outage, and the next sync started over with more. The
// function now numbers at most a batch (publishBatch, 5,000) a call and
// the reader calls it until the backlog is done, each batch kept.
func TestAttackBacklogIsPublishedInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, dsn := pgtest.NewStore(t, 8)
	pgtest.Campaign(t, s, "camp")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const backlog = 12000
	if _, err := conn.Exec(ctx, `INSERT INTO graph_changes (campaign_id, kind, ref, op)
		SELECT 'camp', 'entity', 'e' || i, 'insert' FROM generate_series(1, $1::int) i`, backlog); err != nil {
		t.Fatal(err)
	}
	unpublished := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM graph_changes WHERE campaign_id = 'camp' AND pos IS NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT glyphoxa_publish_changes('camp', 5000)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if left := unpublished(); n != 5000 || left != backlog-5000 {
		t.Fatalf("one call published %d and left %d, want 5000 and %d", n, left, backlog-5000)
	}
	d, err := access.New(access.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	dm, err := d.Open(ctx, "camp", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	var listed int
	for cursor := int64(0); ; {
		chs, next, err := dm.ChangesSince(ctx, cursor, "", 500)
		if err != nil {
			t.Fatal(err)
		}
		for i, ch := range chs {
			if i > 0 && ch.ID < chs[i-1].ID {
				t.Fatalf("published out of id order: %d after %d", ch.ID, chs[i-1].ID)
			}
		}
		listed += len(chs)
		if len(chs) < 500 {
			break
		}
		cursor = next
	}
	if left := unpublished(); left != 0 || listed != backlog {
		t.Errorf("after a sync: %d listed, %d left unpublished, want %d and 0", listed, left, backlog)
	}
	if h := d.Health(); h.Outages > 0 {
		t.Errorf("publishing the change log degraded the door %d times", h.Outages)
	}
}

// TestAttackPlayerCursorMovesOnDMNotes: the cursor a player's sync gets
// back (ChangesSince's next, LastChange) is the newest position the
// player "may see", but that predicate (changeVisible) lets through the
// DM's private notes (kinds dm_node, dm_edge) that the listing itself
// leaves out. Pia polling sync learns when, and how often, the DM writes
// private notes. (Pre-existing with ids; the change keeps it.)
func TestAttackPlayerCursorMovesOnDMNotes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, s, "notes")
	if err := c.Graph().UpsertEntity(ctx, memory.Entity{ID: "bo", Type: memory.EntityNPC, Name: "Bo"}); err != nil {
		t.Fatal(err)
	}
	d := pgtest.Door(t, s)
	pia, err := d.Open(ctx, "notes", memory.PlayerViewerOf("pia"))
	if err != nil {
		t.Fatal(err)
	}
	_, cursor, err := pia.ChangesSince(ctx, 0, "", 500)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.KGPutNode(ctx, postgres.KGDM, postgres.KGNodeInput{ID: "plot", Gist: "the abbess is the traitor"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	chs, next, err := pia.ChangesSince(ctx, cursor, "", 500)
	if err != nil {
		t.Fatal(err)
	}
	last, err := pia.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != 0 {
		t.Fatalf("pia lists %v", chs)
	}
	if next != cursor || last != cursor {
		t.Errorf("only a DM note was written: pia's cursor moved %d -> %d (LastChange %d)", cursor, next, last)
	}
}
