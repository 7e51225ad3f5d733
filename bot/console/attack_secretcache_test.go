package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/access"
)

// TestAttackSnapshotKeepsAFactMadeSecret attacks the console's per-player
// graph snapshot (bot/console/cache.go) with a fact the player has read and
// the DM then makes secret. The fact's change is one the player may no
// longer see, so the player's change cursor (LastChange) does not move;
// keyed on it, the snapshot went on serving the secret fact to the player.
func TestAttackSnapshotKeepsAFactMadeSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	g := f.camp.Graph()
	fs, err := g.FindFacts(ctx, access.FactQuery{EntityIDs: []string{"grimjaw"}, Types: []string{"KNOWS"}, Limit: 1})
	if err != nil || len(fs) != 1 {
		t.Fatalf("grimjaw KNOWS: %v %v", fs, err)
	}
	edge := fmt.Sprintf(`{"id":%d,`, fs[0].ID)
	b, _, _ := f.signInDiscord(t, player)
	pages := []string{"/api/graph", "/api/entity/grimjaw"}
	for _, p := range pages {
		if _, body := b.get(p); !strings.Contains(body, edge) {
			t.Fatalf("%s: the player does not see fact %d before it is made secret", p, fs[0].ID)
		}
	}
	fact := fs[0].Relationship
	fact.Attributes = map[string]any{"secret": true}
	if _, err := g.UpsertRelationship(ctx, fact); err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if _, body := b.get(p); strings.Contains(body, edge) {
			t.Errorf("%s still shows the player fact %d, which the DM made secret", p, fs[0].ID)
		}
	}
}
