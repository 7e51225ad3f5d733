package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

// TestAttackArtifactEdgeOfASceneEntity: Thorin, alone in a split scene,
// hears of the Ghost (an entity first heard there, scene_only); the DM
// notes where the Ghost's story is written (an artifact edge,
// kg_put_edge). A player outside the scene cannot read the Ghost nor the
// edge, yet their kg_sync named a removed edge, "edge:campaign:artifact:N":
// nothing was removed, and the player learned that the DM wrote something
// they may not see (its id counting such edges). An artifact edge a player
// cannot read is not named to them while it is there.
func TestAttackArtifactEdgeOfASceneEntity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t)
	scene := sessionLine(t, w.sl, "thorin", "A pale ghost walks the cellar.", w.t0.Add(2*time.Minute))
	if err := w.g.AddSceneEntity(ctx, memory.Entity{ID: "ghost", Type: memory.EntityNPC, Name: "Ghost"}, []int64{scene}); err != nil {
		t.Fatal(err)
	}
	w.register(t)
	if err := w.camp.KGPutArtifactEdge(ctx, "ghost", "notes/ghost.md:4", "WRITTEN_IN", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	w.noLeak(t, "an artifact edge of a scene entity written", "artifact", "ghost")
}

// TestAttackDeletedArtifactEdgeOfASceneEntity: as above, then the DM
// deletes the edge (kg_delete_edge, or kg_delete_node of the Ghost). Its
// row is gone, so kg_sync could no longer tell it named an entity the
// player may not see, and named "edge:campaign:artifact:N" removed to every
// player: that the DM had written, and then removed, something about a
// scene they were not in. The deletion now records whether every player
// could read the edge, and only such a removal is named to a player. An
// edge every player could read is still named removed, to them and to the
// DM.
func TestAttackDeletedArtifactEdgeOfASceneEntity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t, memory.Entity{ID: "harbour", Type: "location", Name: "Harbour"})
	scene := sessionLine(t, w.sl, "thorin", "A pale ghost walks the cellar.", w.t0.Add(2*time.Minute))
	if err := w.g.AddSceneEntity(ctx, memory.Entity{ID: "ghost", Type: memory.EntityNPC, Name: "Ghost"}, []int64{scene}); err != nil {
		t.Fatal(err)
	}
	for _, e := range [][2]string{{"ghost", "notes/ghost.md:4"}, {"ghost", "notes/ghost.md:9"}, {"harbour", "maps/harbour.png"}} {
		if err := w.camp.KGPutArtifactEdge(ctx, e[0], e[1], "WRITTEN_IN", nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	w.register(t)
	if err := w.camp.KGDeleteArtifactEdge(ctx, "ghost", "notes/ghost.md:4", "WRITTEN_IN"); err != nil {
		t.Fatal(err)
	}
	if err := w.camp.KGDeleteArtifactEdgesOf(ctx, "ghost"); err != nil {
		t.Fatal(err)
	}
	if err := w.camp.KGDeleteArtifactEdge(ctx, "harbour", "maps/harbour.png", "WRITTEN_IN"); err != nil {
		t.Fatal(err)
	}
	w.noLeak(t, "a deleted artifact edge of a scene entity", "artifact:1", "artifact:2")
	// The harbour's edge, which every player could read, is named removed.
	for name, c := range w.players {
		ch, err := c.KGSync(ctx, w.sessions[name].Cursor, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(ch.Removed, "edge:campaign:artifact:3") {
			t.Errorf("%s's kg_sync does not name the harbour's removed edge: %q", name, ch.Removed)
		}
	}
	dm, err := w.camp.KGSync(ctx, w.sessions["any player"].Cursor, "", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"1", "2", "3"} {
		if !slices.Contains(dm.Removed, "edge:campaign:artifact:"+id) {
			t.Errorf("the DM's kg_sync does not name removed artifact edge %s: %q", id, dm.Removed)
		}
	}
}
