package access_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackNPCOutsideTheSceneKnowsSceneEntity attacks the entity secrecy
// of split scenes through what an NPC knows (Graph.VisibleSubgraph, the
// NPC's hot context and its reply to a player): NPCs read every entity
// and every non-secret fact, whatever split scene it was heard in, and an
// NPC's knowledge travels along KNOWS edges. Hadrik named his buyer, the
// Veiled Abbess, only in Thorin's split scene (fact and entity rest on
// that line). Elara was not there and never heard it; she knows Hadrik
// (a public fact). Pia, who was not in the scene either, talks to Elara
// at the table: Elara's knowledge holds the Abbess, so her reply may name
// her to Pia.
func TestAttackNPCOutsideTheSceneKnowsSceneEntity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, s, "atknpc")
	g := c.Graph()
	if err := g.UpsertEntities(ctx, []memory.Entity{{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"},
		{ID: "elara", Type: memory.EntityNPC, Name: "Elara"}}); err != nil {
		t.Fatal(err)
	}
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
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "hadrik", SpeakerName: "Hadrik", NPCID: "hadrik",
		Text: "I know the Veiled Abbess well; she buys every crown I forge.", At: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	es, err := sl.Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	line := es[len(es)-1].ID
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "veiled-abbess", Type: memory.EntityNPC, Name: "Veiled Abbess"}, []int64{line}); err != nil {
		t.Fatal(err)
	}
	f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "hadrik", TargetID: "veiled-abbess", Type: "KNOWS",
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.9, Source: memory.SourceStated}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddEvidence(ctx, f.ID, []int64{line}); err != nil {
		t.Fatal(err)
	}
	// Elara knows Hadrik: told to everyone (the DM's fact).
	if _, err := g.WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "elara", TargetID: "hadrik", Type: "KNOWS",
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated}}, ""); err != nil {
		t.Fatal(err)
	}
	pia, err := c.As(memory.PlayerViewerOf("pia"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pia.Graph().Entity(ctx, "veiled-abbess"); err == nil {
		t.Fatal("Pia sees the Abbess: the attack proves nothing")
	}
	ents, _, err := g.VisibleSubgraph(ctx, "elara", memory.VisibilityScope{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.ID == "veiled-abbess" {
			t.Errorf("LEAK to Pia through Elara: Elara, never in Thorin's scene, knows %q (her hot context, her reply to Pia)", e.Name)
		}
	}
}
