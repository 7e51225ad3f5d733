package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackSyncTellsOfADMNoteEdit: the DM writes a note only the DM may
// read (dm_notes) on an NPC every player knows, and changes nothing a
// player sees of it. A player's assistant polling kg_sync and sync is
// told the NPC changed (a node whose content is what it was, a change
// entry), so the player learns that, when and how often the DM writes
// secret notes about Old Tam: the existence of a secret.
func TestAttackSyncTellsOfADMNoteEdit(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	url := serveShape(t, store)
	player := goClient(t, url, shapePlayerToken)
	g := pgtest.Campaign(t, store, "ironhold-saga").Graph()
	if err := g.UpsertEntity(ctx, memory.Entity{ID: "old-tam", Type: "npc", Name: "Old Tam",
		Attributes: map[string]any{"description": "a fisherman"}}); err != nil {
		t.Fatal(err)
	}
	reg, ok := goCall(t, player, "kg_register_session", nil)
	var sess struct {
		ID string `json:"session_id"`
	}
	if !ok || json.Unmarshal([]byte(reg), &sess) != nil || sess.ID == "" {
		t.Fatalf("kg_register_session: %s", reg)
	}
	first, ok := goCall(t, player, "sync", map[string]any{})
	var s0 struct {
		Cursor int64 `json:"cursor"`
	}
	if !ok || json.Unmarshal([]byte(first), &s0) != nil {
		t.Fatalf("sync: %s", first)
	}
	// The DM's cursor: a player's is opaque (cursor.go).
	dm := goClient(t, url, shapeDMToken)
	dmFirst, ok := goCall(t, dm, "sync", map[string]any{})
	var d0 struct {
		Cursor int64 `json:"cursor"`
	}
	if !ok || json.Unmarshal([]byte(dmFirst), &d0) != nil {
		t.Fatalf("the DM's sync: %s", dmFirst)
	}
	if _, err := g.UpdateEntity(ctx, "old-tam", memory.EntityUpdate{SetAttributes: map[string]any{
		"dm_notes": "he is the cult's paymaster"}}); err != nil {
		t.Fatal(err)
	}
	out, _ := goCall(t, player, "kg_sync", map[string]any{"session_id": sess.ID})
	var ks struct {
		Total int `json:"total_changes"`
	}
	if err := json.Unmarshal([]byte(out), &ks); err != nil {
		t.Fatalf("kg_sync: %s", out)
	}
	if ks.Total != 0 {
		t.Errorf("LEAK: the player's kg_sync reports %d changes after the DM only wrote a DM note on Old Tam: %.400s", ks.Total, out)
	}
	out, _ = goCall(t, player, "sync", map[string]any{"cursor": s0.Cursor})
	if strings.Contains(out, "old-tam") {
		t.Errorf("LEAK: the player's sync lists Old Tam changed after the DM only wrote a DM note on him: %.400s", out)
	}
	if strings.Contains(strings.ToLower(out), "paymaster") {
		t.Errorf("LEAK: the DM's note itself: %s", out)
	}
	// The DM's feed has the edit, and a change players read is theirs.
	if out, _ := goCall(t, dm, "sync", map[string]any{"cursor": d0.Cursor}); !strings.Contains(out, "old-tam") {
		t.Errorf("the DM's sync does not list the DM's own note on Old Tam: %.400s", out)
	}
	if _, err := g.UpdateEntity(ctx, "old-tam", memory.EntityUpdate{SetAttributes: map[string]any{
		"description": "a fisherman with a new boat"}}); err != nil {
		t.Fatal(err)
	}
	if out, _ := goCall(t, player, "sync", map[string]any{"cursor": s0.Cursor}); !strings.Contains(out, "old-tam") {
		t.Errorf("the player's sync does not list Old Tam's public description changing: %.400s", out)
	}
}
