package access_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCursorCountsHiddenSceneEntities attacks the entity secrecy of
// split scenes through the change cursor a player's MCP sync returns
// (mcpserver's sync answers LastChange, the newest change id of the whole
// campaign) and kg_sync's registration: the player's change feed rightly
// lists nothing of an entity first heard in a scene they were not in,
// but the cursor moves by one per hidden entity written. Pia, polling
// after the session, learns that the extraction wrote something she may
// not see, and how many rows, though not its name (low severity).
func TestAttackCursorCountsHiddenSceneEntities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, s, "atkcursor")
	sl := c.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s1", t0, []string{"pia", "otto"}, false); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s1", t0.Add(time.Minute), []string{"otto"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "dm",
		Text: "Otto alone meets the Veiled Abbess.", At: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	es, err := sl.Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	d := newDoor(t, s, reconnect.Backoff{})
	pia, err := d.Open(ctx, "atkcursor", memory.PlayerViewerOf("pia"))
	if err != nil {
		t.Fatal(err)
	}
	before, err := pia.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Graph().AddSceneEntity(ctx, memory.Entity{ID: "veiled-abbess", Type: memory.EntityNPC, Name: "Veiled Abbess"},
		[]int64{es[len(es)-1].ID}); err != nil {
		t.Fatal(err)
	}
	chs, _, err := pia.ChangesSince(ctx, before, "", 500)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != 0 {
		t.Fatalf("Pia's change feed lists %v", chs)
	}
	after, err := pia.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("LEAK to Pia: her change cursor moved from %d to %d with no change she may read: a hidden entity was written", before, after)
	}
}
