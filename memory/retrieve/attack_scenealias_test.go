package retrieve

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCommonAliasRevealsSceneEntity attacks the entity secrecy of
// split scenes through the chunk trace (view.entityTraced: a chunk the
// player may read and heard that mentions the entity): the chunker links
// a chunk to an entity when its text says any of the entity's names, a
// generic alias included. The Veiled Abbess (alias "the Abbess") was named
// only in Thorin's split scene. After the party meets again, Mira speaks
// of "the abbess of my home temple", another abbess altogether: her
// public line's chunk mentions the Veiled Abbess, and from then on every
// player reads the full name, first heard in Thorin's scene.
func TestAttackCommonAliasRevealsSceneEntity(t *testing.T) {
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 64)
	c := pgtest.Campaign(t, store, "scenealias")
	sl := c.Sessions()
	check(t, sl.StartSession(ctx, "s1", t0))
	check(t, sl.RecordPresence(ctx, "s1", t0, []string{"thorin", "mira"}, false))
	check(t, sl.RecordPresence(ctx, "s1", t0.Add(2*time.Minute), []string{"thorin"}, true))
	check(t, sl.RecordPresence(ctx, "s1", t0.Add(10*time.Minute), []string{"thorin", "mira"}, false))
	_, err := sl.WriteEntries(ctx, []memory.TranscriptEntry{
		{SessionID: "s1", SpeakerID: "hadrik", SpeakerName: "Hadrik", Text: "The Veiled Abbess buys every crown I forge.", At: t0.Add(3 * time.Minute)},
		// The party together again, an hour later.
		{SessionID: "s1", SpeakerID: "mira", SpeakerName: "Mira", Text: "I pray to the abbess of my home temple every night.",
			At: t0.Add(70 * time.Minute)},
	})
	check(t, err)
	es, err := sl.Entries(ctx, "s1")
	check(t, err)
	check(t, c.Graph().AddSceneEntity(ctx, memory.Entity{ID: "veiled-abbess", Type: memory.EntityNPC, Name: "Veiled Abbess",
		Aliases: []string{"the Abbess"}}, []int64{es[0].ID}))
	for _, v := range []memory.Viewer{memory.PlayerViewerOf("mira"), memory.PlayerViewer()} {
		as, err := c.As(v)
		check(t, err)
		if _, err := as.Graph().Entity(ctx, "veiled-abbess"); err == nil {
			t.Fatalf("%s sees the Abbess before the chunking: the attack proves nothing", v)
		}
	}
	e, _ := embed.NewOffline(64)
	_, err = chunk.Process(ctx, c, e, chunk.Options{})
	check(t, err)
	for who, v := range map[string]memory.Viewer{"Mira": memory.PlayerViewerOf("mira"), "any player": memory.PlayerViewer()} {
		as, err := c.As(v)
		check(t, err)
		if got, err := as.Graph().Entity(ctx, "veiled-abbess"); err == nil {
			t.Errorf("LEAK to %s: after Mira spoke of another abbess with the party together, reads %q (aliases %v), first heard in Thorin's scene",
				who, got.Name, got.Aliases)
		}
	}
}
