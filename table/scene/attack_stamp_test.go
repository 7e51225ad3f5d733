package scene_test

import (
	"context"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table/scene"
)

// stampScene starts with a line (no pause before it) and has a line right
// after a command.
const stampScene = `
session: stamp
start: 2026-03-20T19:00:00Z
players:
  - {name: Thorin}
  - {name: Lyra}
lines:
  - {speaker: Thorin, say: "Brannoc, what news?", heard: "Brannoc, what news?"}
  - {command: "/npc scene grimjaw", by: DM, after: 3s}
  - {speaker: Lyra, say: "Grimjaw, what news?", heard: "Grimjaw, what news?"}
`

// TestAttackLineStampedBeforeTheSceneStart: a scene's first line, said at
// the scene's start, was stamped 20 ms before it (the player's first frame
// arrived at the start, so its audio began a frame earlier), before the
// session it belongs to started; likewise a line said right after a
// command was stamped before the command. A line's time is when its
// speaker began: the scene's start, or the command's time.
func TestAttackLineStampedBeforeTheSceneStart(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, dims)
	h := newHarness(t, store)
	ctx := context.Background()
	sc, err := scene.Parse(strings.NewReader(stampScene), "stamp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := scene.Play(ctx, sc, h.opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lines) != 2 || len(res.Commands) != 1 {
		t.Fatalf("played %d lines and %d commands, want 2 and 1", len(res.Lines), len(res.Commands))
	}
	if at := res.Lines[0].At; !at.Equal(sc.Start) {
		t.Errorf("the first line is stamped %s, want the scene's start %s", at.Format("15:04:05.000"), sc.Start.Format("15:04:05.000"))
	}
	if at, cmd := res.Lines[1].At, res.Commands[0].At; !at.Equal(cmd) {
		t.Errorf("the line right after the command is stamped %s, want the command's time %s", at.Format("15:04:05.000"), cmd.Format("15:04:05.000"))
	}
	es, err := h.camp.Sessions().Entries(ctx, res.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) == 0 {
		t.Fatal("the session log holds no line")
	}
	for _, e := range es {
		if e.At.Before(sc.Start) {
			t.Errorf("the session log holds %q at %s, before the session's start %s", e.Text, e.At.Format("15:04:05.000"), sc.Start.Format("15:04:05.000"))
		}
	}
}
