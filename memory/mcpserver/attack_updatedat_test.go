package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// nodeStamp is the updated_at of node id in kg_read's campaign level as cs
// reads it.
func nodeStamp(t *testing.T, cs *mcp.ClientSession, id string) time.Time {
	t.Helper()
	out, ok := goCall(t, cs, "kg_read", nil)
	var r struct {
		Campaign struct {
			Nodes []struct {
				ID        string    `json:"id"`
				UpdatedAt time.Time `json:"updated_at"`
			} `json:"nodes"`
		} `json:"campaign"`
	}
	if !ok || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("kg_read: %.300s", out)
	}
	for _, n := range r.Campaign.Nodes {
		if n.ID == id {
			return n.UpdatedAt
		}
	}
	t.Fatalf("kg_read has no node %q", id)
	return time.Time{}
}

// TestAttackUpdatedAtTellsOfADMNoteEdit: the DM writes a note only the DM
// may read (dm_notes) on an NPC every player knows. The change feeds leave
// the edit out (TestAttackSyncTellsOfADMNoteEdit), but the node's
// updated_at, which a player's kg_read shows (and every entity a player's
// handle reads carries), moved to the edit's time: the player learned
// that, and when, the DM wrote a secret note on Old Tam. A player reads the
// time of the last change they can see; the DM reads the real one.
func TestAttackUpdatedAtTellsOfADMNoteEdit(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	url := serveShape(t, store)
	player, dm := goClient(t, url, shapePlayerToken), goClient(t, url, shapeDMToken)
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	g := camp.Graph()
	pc, err := camp.As(memory.PlayerViewer())
	if err != nil {
		t.Fatal(err)
	}
	entityStamp := func() time.Time {
		t.Helper()
		e, err := pc.Graph().Entity(ctx, "old-tam")
		if err != nil {
			t.Fatal(err)
		}
		return e.UpdatedAt
	}
	if err := g.UpsertEntity(ctx, memory.Entity{ID: "old-tam", Type: "npc", Name: "Old Tam",
		Attributes: map[string]any{"description": "a fisherman"}}); err != nil {
		t.Fatal(err)
	}
	seen, seenEntity, dmBefore := nodeStamp(t, player, "old-tam"), entityStamp(), nodeStamp(t, dm, "old-tam")
	if _, err := g.UpdateEntity(ctx, "old-tam", memory.EntityUpdate{SetAttributes: map[string]any{
		"dm_notes": "he is the cult's paymaster"}}); err != nil {
		t.Fatal(err)
	}
	dmAfter := nodeStamp(t, dm, "old-tam")
	if !dmAfter.After(dmBefore) {
		t.Fatalf("the DM's kg_read stamps Old Tam %s after the DM's note, %s before: the DM's caches need it to move", dmAfter, dmBefore)
	}
	if got := nodeStamp(t, player, "old-tam"); !got.Equal(seen) {
		t.Errorf("LEAK: the player's kg_read stamps Old Tam %s after the DM only wrote a DM note (%s before)", got, seen)
	}
	if got := entityStamp(); !got.Equal(seenEntity) {
		t.Errorf("LEAK: the player's handle reads Old Tam updated %s after the DM only wrote a DM note (%s before)", got, seenEntity)
	}
	// A change the player reads moves the player's stamp.
	if _, err := g.UpdateEntity(ctx, "old-tam", memory.EntityUpdate{SetAttributes: map[string]any{
		"description": "a fisherman with a new boat"}}); err != nil {
		t.Fatal(err)
	}
	if got := nodeStamp(t, player, "old-tam"); !got.After(seen) {
		t.Errorf("the player's kg_read stamps Old Tam %s after his public description changed (%s before)", got, seen)
	}
	if got := entityStamp(); !got.After(seenEntity) {
		t.Errorf("the player's handle reads Old Tam updated %s after his public description changed (%s before)", got, seenEntity)
	}
}
