package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// syncOut is the sync tool's answer.
type syncOut struct {
	Changes []map[string]any `json:"changes"`
	Cursor  int64            `json:"cursor"`
}

// syncFrom calls sync as cs from cursor.
func syncFrom(t *testing.T, cs *mcp.ClientSession, cursor int64) syncOut {
	t.Helper()
	out, ok := goCall(t, cs, "sync", map[string]any{"cursor": cursor})
	var s syncOut
	if !ok || json.Unmarshal([]byte(out), &s) != nil {
		t.Fatalf("sync from %d: %.300s", cursor, out)
	}
	return s
}

// TestAttackSyncCursorCountsHiddenChanges: the sync tool's cursor is a
// position in the campaign's change log, and each change listed carried
// its id in the log. Both are numbered for every change, those a player
// may not see included: a player's assistant polling sync read, from the
// step between two cursors (or two ids), how many hidden changes were
// written in between: here three edits of the DM's notes, which the feed
// itself leaves out (migration 0045). A player's cursor is opaque (a keyed
// permutation of the position, checked when it comes back) and their
// changes carry no log id.
func TestAttackSyncCursorCountsHiddenChanges(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	url := serveShape(t, store)
	player, dm := goClient(t, url, shapePlayerToken), goClient(t, url, shapeDMToken)
	g := pgtest.Campaign(t, store, "ironhold-saga").Graph()
	start := syncFrom(t, player, 0).Cursor
	for _, note := range []string{"paymaster", "informant", "double agent"} {
		if _, err := g.UpdateEntity(ctx, "grimjaw", memory.EntityUpdate{SetAttributes: map[string]any{"dm_notes": note}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.UpdateEntity(ctx, "vexa", memory.EntityUpdate{SetAttributes: map[string]any{"description": "a smuggler with a limp"}}); err != nil {
		t.Fatal(err)
	}
	got := syncFrom(t, player, start)
	if len(got.Changes) != 1 || got.Changes[0]["ref"] != "vexa" {
		t.Fatalf("the player's sync lists %+v, want Vexa's public change alone", got.Changes)
	}
	if _, ok := got.Changes[0]["id"]; ok {
		t.Errorf("LEAK: the player's change carries its change-log id, numbered for hidden changes too: %+v", got.Changes[0])
	}
	// The DM's cursor is the log's position after Vexa's change.
	if pos := syncFrom(t, dm, 0).Cursor; got.Cursor == pos {
		t.Errorf("LEAK: the player's cursor moved from %d to %d (the log's position is %d): the step counts the hidden changes, the DM's 3 notes among them", start, got.Cursor, pos)
	}
	// The opaque cursor resumes where it was given, and a made-up one is
	// refused.
	if _, err := g.UpdateEntity(ctx, "vexa", memory.EntityUpdate{SetAttributes: map[string]any{"description": "a smuggler"}}); err != nil {
		t.Fatal(err)
	}
	if next := syncFrom(t, player, got.Cursor); len(next.Changes) != 1 || next.Changes[0]["ref"] != "vexa" {
		t.Errorf("the player's sync from the cursor it was given lists %+v, want Vexa's second change", next.Changes)
	}
	if out, ok := goCall(t, player, "sync", map[string]any{"cursor": got.Cursor + 1}); ok || !strings.Contains(out, "cursor") {
		t.Errorf("a player's made-up cursor %d: %.300s", got.Cursor+1, out)
	}
}
