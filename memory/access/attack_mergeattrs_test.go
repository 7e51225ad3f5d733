package access_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackMergeCarriesSceneAttributes attacks the entity secrecy of
// split scenes through MergeEntities: merging an entity first heard in a
// split scene into one every player sees keeps the scene entity's names
// where only the DM reads them (hidden_aliases), but its public attributes
// fill the keys the kept entity lacks, and every player reads them. The
// scene's Veiled Abbess has a gist and a title (as kg_put_node or the
// DM's edit writes them: public attributes); the DM merges her into the
// "Mysterious Buyer" everyone has heard of. Pia, who was not in the scene,
// reads the Abbess's title and gist on the Buyer.
func TestAttackMergeCarriesSceneAttributes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, s, "atkmerge")
	g := c.Graph()
	sl := c.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"pia", "thorin"}, false}, {time.Minute, []string{"thorin"}, true}, {5 * time.Minute, []string{"pia", "thorin"}, false}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "dm",
		Text: "The Veiled Abbess of the Grey Cloister buys every crown Hadrik forges.", At: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	es, err := sl.Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "veiled-abbess", Type: memory.EntityNPC, Name: "Veiled Abbess",
		Attributes: map[string]any{"title": "Abbess of the Grey Cloister", "gist": "The Veiled Abbess buys every crown Hadrik forges."}},
		[]int64{es[0].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEntity(ctx, memory.Entity{ID: "mysterious-buyer", Type: memory.EntityNPC, Name: "Mysterious Buyer"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.MergeEntities(ctx, "veiled-abbess", "mysterious-buyer", "s1"); err != nil {
		t.Fatal(err)
	}
	pia, err := c.As(memory.PlayerViewerOf("pia"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := pia.Graph().Entity(ctx, "mysterious-buyer")
	if err != nil {
		t.Fatal(err)
	}
	seen := strings.ToLower(fmt.Sprint(e.Name, e.Aliases, e.Attributes))
	for _, secret := range []string{"veiled", "grey cloister"} {
		if strings.Contains(seen, secret) {
			t.Errorf("LEAK to Pia: the merged Mysterious Buyer shows %q: %s", secret, seen)
		}
	}
}
