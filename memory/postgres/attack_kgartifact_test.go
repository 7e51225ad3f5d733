package postgres_test

import (
	"context"
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
