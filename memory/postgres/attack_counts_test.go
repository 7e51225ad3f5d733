package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCountsTellTheSplitScene (ATTACK s11): a player's session
// listing counts only the lines they may read (74dc288), but the
// campaign's Counts (the MCP kg_ping tool, for the player role too) count
// every line: the difference tells a player outside the scene that, and how
// much, was said in a split scene they were not in. Expected: a player's
// count of lines is the number of lines they may read (as Sessions says).
func TestAttackCountsTellTheSplitScene(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s1", t0, []string{"lyra", "thorin"}, false); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s1", t0.Add(time.Minute), []string{"thorin"}, true); err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"Together at the gate.", "Thorin alone hears the code.", "And the second half of it."} {
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "Dana",
			Text: text, At: t0.Add(time.Duration(i)*time.Minute + 30*time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []memory.Viewer{memory.PlayerViewerOf("lyra"), memory.PlayerViewer()} {
		c, err := camp.As(v)
		if err != nil {
			t.Fatal(err)
		}
		ss, err := c.Sessions().Sessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		readable := 0
		for _, x := range ss {
			readable += x.Entries
		}
		n, err := c.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if readable != 1 {
			t.Fatalf("%s: sessions count %d readable lines, want 1", v, readable)
		}
		if n.Entries != readable {
			t.Errorf("LEAK: %s counts %d transcript lines, reads %d: %d were said in a scene they were not in",
				v, n.Entries, readable, n.Entries-readable)
		}
	}
}
