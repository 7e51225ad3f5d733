package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAskAsPlayerLeavesOutTheSplitScene: a session in which the DM split
// the party (Lyra, u2, alone in the scene) is processed as glyphoxa
// process chunks it; then ask, by words and by every mode: --as player
// (any player, the DM's preview of what all players see) and --as
// player:u1 (Thorin, outside the scene) never answer with the scene's
// line, --as player:u2 and --as dm do. A bad --as is refused by name.
func TestAskAsPlayerLeavesOutTheSplitScene(t *testing.T) {
	t.Parallel()
	dsn := sampleUnprocessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := pgtest.Campaign(t, store, "ironhold-saga")
	start := time.Date(2026, 4, 2, 19, 0, 0, 0, time.UTC)
	sl := c.Sessions()
	if err := sl.StartSession(ctx, "split", start); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"u1", "u2"}, false}, {time.Minute, []string{"u2"}, true}, {3 * time.Minute, []string{"u1", "u2"}, false}} {
		if err := sl.RecordPresence(ctx, "split", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []memory.TranscriptEntry{
		{SpeakerID: "dm", SpeakerName: "Dana", Text: "Everyone sees the lanterns of Quillmere harbour.", At: start.Add(30 * time.Second)},
		{SpeakerID: "dm", SpeakerName: "Dana", Text: "Lyra alone finds the sapphire key under the Quillmere altar.", At: start.Add(2 * time.Minute)},
		{SpeakerID: "dm", SpeakerName: "Dana", Text: "The party meets again at the Quillmere gate.", At: start.Add(4 * time.Minute)},
	} {
		e.SessionID = "split"
		if _, err := sl.WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := sl.EndSession(ctx, "split", start.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--session", "split"); code != 0 {
		t.Fatalf("process: %s %s", out, errs)
	}
	if n, err := c.Index().ChunkIDs(ctx, "split"); err != nil || len(n) == 0 {
		t.Fatalf("the split session has %d chunks (%v)", len(n), err)
	}
	for _, tc := range []struct {
		as    string
		scene bool
	}{{"player", false}, {"player:u1", false}, {"player:u2", true}, {"dm", true}} {
		for _, mode := range []string{"fts", "vector", "hybrid", "graphrag", "ppr"} {
			code, out, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "--mode", mode, "--k", "20", "--as", tc.as,
				"Who finds the sapphire key under the Quillmere altar?")
			if code != 0 {
				t.Fatalf("ask --as %s --mode %s: %d %s", tc.as, mode, code, errs)
			}
			if got := strings.Contains(out, "sapphire"); got && !tc.scene {
				t.Errorf("LEAK: ask --as %s --mode %s answers with the split scene:\n%s", tc.as, mode, out)
			} else if !got && tc.scene && (mode == "fts" || mode == "hybrid") {
				t.Errorf("ask --as %s --mode %s does not find the scene its reader may read:\n%s", tc.as, mode, out)
			}
		}
	}
	for _, bad := range []string{"player:", "npc", "player: u1"} {
		if code, _, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "--as", bad, "Where is Grimjaw?"); code == 0 ||
			!strings.Contains(errs, "--as") {
			t.Errorf("ask --as %q: %d %s", bad, code, errs)
		}
	}
}
