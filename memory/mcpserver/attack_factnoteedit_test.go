package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackSyncTellsOfADMNoteOnAFact: the DM writes a note players may
// not read (dm_notes) on a fact every player reads, and changes nothing a
// player sees of it. A player's assistant polling kg_sync and sync was
// told the fact changed, so the player learned that, and when, the DM
// wrote a secret note on it (as with an entity's notes, migration 0045).
func TestAttackSyncTellsOfADMNoteOnAFact(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	url := serveShape(t, store)
	player := goClient(t, url, shapePlayerToken)
	g := pgtest.Campaign(t, store, "ironhold-saga").Graph()
	fact := memory.Relationship{SourceID: "grimjaw", TargetID: "ironhold", Type: "LOCATED_AT",
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}
	// The DM confirms the fact first: the note is then the only change.
	if _, err := g.WriteFact(ctx, memory.DM("dm"), fact, ""); err != nil {
		t.Fatal(err)
	}
	reg, ok := goCall(t, player, "kg_register_session", nil)
	var sess struct {
		ID string `json:"session_id"`
	}
	if !ok || json.Unmarshal([]byte(reg), &sess) != nil {
		t.Fatalf("kg_register_session: %s", reg)
	}
	dm := goClient(t, url, shapeDMToken)
	start, dmStart := syncFrom(t, player, 0).Cursor, syncFrom(t, dm, 0).Cursor
	fact.Attributes = map[string]any{"dm_notes": "he only pretends to live here"}
	w, err := g.WriteFact(ctx, memory.DM("dm"), fact, "")
	if err != nil {
		t.Fatal(err)
	}
	if w.Fact.Attributes["dm_notes"] == nil {
		t.Fatalf("the DM's note did not reach the fact: %+v", w.Fact)
	}
	out, _ := goCall(t, player, "kg_sync", map[string]any{"session_id": sess.ID})
	var ks struct {
		Total int `json:"total_changes"`
	}
	if err := json.Unmarshal([]byte(out), &ks); err != nil || ks.Total != 0 {
		t.Errorf("LEAK: the player's kg_sync reports changes after the DM only wrote a DM note on a fact: %.400s", out)
	}
	if got := syncFrom(t, player, start); len(got.Changes) != 0 {
		t.Errorf("LEAK: the player's sync lists %+v after the DM only wrote a DM note on a fact", got.Changes)
	}
	if strings.Contains(out, "pretends") {
		t.Errorf("LEAK: the note itself: %s", out)
	}
	// The DM's feed has the note; a change players read is theirs.
	if got := syncFrom(t, dm, dmStart); len(got.Changes) != 1 {
		t.Errorf("the DM's sync lists %+v after the DM's note on a fact, want it", got.Changes)
	}
	fact.Attributes = map[string]any{"since": "the flood"}
	if _, err := g.WriteFact(ctx, memory.DM("dm"), fact, ""); err != nil {
		t.Fatal(err)
	}
	if got := syncFrom(t, player, start); len(got.Changes) != 1 || got.Changes[0]["kind"] != "fact" {
		t.Errorf("the player's sync lists %+v after a public attribute of the fact changed, want the fact", got.Changes)
	}
}
