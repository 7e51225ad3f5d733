package retrieve

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
)

// TestAttackAskGivesSceneEntityID attacks the entity secrecy of split
// scenes through the hybrid ask a player reaches (MCP's ask with their own
// token, `glyphoxa ask --as`, the console's asker): a chunk result carries
// entity_ids, the chunk's mentions, read without view.entityVisible. While
// Thorin is alone with Hadrik in a split scene where the Veiled Abbess
// (alias "the Abbess") is named, Mira, at the table outside the scene,
// speaks of "the abbess of my home temple", a common word: the chunker
// (the real one, chunk.Process, with the campaign's names) links her line
// to the Veiled Abbess by its alias. Mira may read her own line's chunk;
// asking about it, she is given the entity id "veiled-abbess", an entity
// she may not see (ids are slugs of names: she learns the full name).
func TestAttackAskGivesSceneEntityID(t *testing.T) {
	ctx := context.Background()
	// Mira at the table, outside the scene, an hour of cross-talk later.
	c := abbessScene(ctx, t, "sceneids", "veiled-abbess", memory.TranscriptEntry{SessionID: "s1", SpeakerID: "mira", SpeakerName: "Mira",
		Text: "I sit by the fire and pray to the abbess of my home temple while I wait.", At: t0.Add(65 * time.Minute)})
	e, _ := embed.NewOffline(64)
	_, err := chunk.Process(ctx, c, e, chunk.Options{})
	check(t, err)

	mira, err := c.As(memory.PlayerViewerOf("mira"))
	check(t, err)
	if _, err := mira.Graph().Entity(ctx, "veiled-abbess"); err == nil {
		t.Fatal("Mira sees the Abbess: the store does not hide it, the attack proves nothing")
	}
	r, err := New(mira, e, Config{RefreshEvery: -1})
	check(t, err)
	read := false
	for _, m := range Modes() {
		res, err := r.Search(ctx, Query{Text: "what did Mira hum by the fire", Mode: m, K: 20})
		check(t, err)
		for _, x := range res {
			if x.Kind == KindChunk && x.SessionID == "s1" {
				read = true
			}
			if slices.Contains(x.EntityIDs, "veiled-abbess") {
				t.Errorf("LEAK to Mira: %s ask result %s %q gives entity_ids %v (veiled-abbess, first heard in Thorin's scene)",
					m, x.Kind, x.ID, x.EntityIDs)
			}
		}
	}
	if !read {
		t.Fatal("Mira's ask reads none of her own s1 lines: the attack proves nothing")
	}
}
