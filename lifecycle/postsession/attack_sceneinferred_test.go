package postsession_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackInferredFactRevealsSceneEntity attacks the entity secrecy of
// split scenes through a fact extraction draws from a public window about
// an entity first heard in a scene, without that window naming it: the
// extractor is handed the campaign's known entities (the hidden one
// among them) and resolves "a rich lady" to it. The fact rests on the
// public line it quotes, so every player reads it (factRevealed), and
// with it the entity (view.entityTraced: a fact they may see that has it
// as an end). Mira asked Hadrik, with the party together, who buys his
// crowns; he would not say. Yet afterwards Mira reads "Hadrik SELLS_TO
// Veiled Abbess", a name said only in Thorin's scene.
func TestAttackInferredFactRevealsSceneEntity(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "inferred")
	if err := camp.Graph().UpsertEntity(ctx, memory.Entity{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"}); err != nil {
		t.Fatal(err)
	}
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	write := func(sess, who, text string, at time.Time) {
		t.Helper()
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: sess, SpeakerID: who, SpeakerName: who, Text: text, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(sess string, x postsession.Extraction) {
		t.Helper()
		p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
			Extractor: scriptedExtractor{x}, Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	miraSees := func() []memory.Entity {
		t.Helper()
		c, err := camp.As(memory.PlayerViewerOf("mira"))
		if err != nil {
			t.Fatal(err)
		}
		es, err := c.Graph().FindEntities(ctx, memory.EntityFilter{Name: "Abbess"})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}

	// Session 1: Thorin alone with Hadrik hears of the Veiled Abbess.
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"mira", "thorin"}, false}, {time.Minute, []string{"thorin"}, true}, {5 * time.Minute, []string{"mira", "thorin"}, false}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	write("s1", "hadrik", "The Veiled Abbess buys every crown I forge.", t0.Add(2*time.Minute))
	if err := sl.EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run("s1", postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Veiled Abbess", Type: "npc"}}})
	if es := miraSees(); len(es) != 0 {
		t.Fatalf("after s1 Mira already sees %v: the attack proves nothing", es)
	}

	// Session 2, the party together: Hadrik will not name his buyer.
	s2 := t0.Add(7 * 24 * time.Hour)
	if err := sl.StartSession(ctx, "s2", s2); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s2", s2, []string{"mira", "thorin"}, false); err != nil {
		t.Fatal(err)
	}
	write("s2", "mira", "Hadrik, who buys all your crowns?", s2.Add(time.Minute))
	write("s2", "hadrik", "A rich lady, and that is all I will say.", s2.Add(2*time.Minute))
	if err := sl.EndSession(ctx, "s2", s2.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// The extractor, handed the known entities, resolves "a rich lady".
	run("s2", postsession.Extraction{Relationships: []postsession.ExtractedRelationship{{Source: "Hadrik", Type: "SELLS_TO",
		Target: "Veiled Abbess", Evidence: "A rich lady, and that is all I will say.", Confidence: 0.9, Basis: "inferred"}}})
	for _, e := range miraSees() {
		t.Errorf("LEAK to Mira: after a public window that never names it, she reads %q (%s), first heard in Thorin's scene", e.Name, e.Type)
	}
}

// TestAttackEpithetRevealsSceneEntity attacks the same resolution with an
// epithet: the extractor, handed the known entities, lists the public
// window's "the rich lady" as an entity whose alias is the hidden one's
// name (a model that knows who she is). The resolver matches the alias,
// and namedIn takes the public line naming "the rich lady" (the name
// used) as a line naming the Veiled Abbess: every player now reads her
// name, though only an epithet was said with the party together.
func TestAttackEpithetRevealsSceneEntity(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "epithet")
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	write := func(sess, who, text string, at time.Time) {
		t.Helper()
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: sess, SpeakerID: who, SpeakerName: who, Text: text, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	run := func(sess string, x postsession.Extraction) {
		t.Helper()
		p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
			Extractor: scriptedExtractor{x}, Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	miraSees := func() []memory.Entity {
		t.Helper()
		c, err := camp.As(memory.PlayerViewerOf("mira"))
		if err != nil {
			t.Fatal(err)
		}
		es, err := c.Graph().FindEntities(ctx, memory.EntityFilter{Name: "Veiled"})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"mira", "thorin"}, false}, {time.Minute, []string{"thorin"}, true}, {5 * time.Minute, []string{"mira", "thorin"}, false}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	write("s1", "hadrik", "The Veiled Abbess buys every crown I forge.", t0.Add(2*time.Minute))
	if err := sl.EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run("s1", postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Veiled Abbess", Type: "npc"}}})
	if es := miraSees(); len(es) != 0 {
		t.Fatalf("after s1 Mira already sees %v: the attack proves nothing", es)
	}
	s2 := t0.Add(7 * 24 * time.Hour)
	if err := sl.StartSession(ctx, "s2", s2); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s2", s2, []string{"mira", "thorin"}, false); err != nil {
		t.Fatal(err)
	}
	write("s2", "hadrik", "The rich lady pays well, that is all I will say.", s2.Add(time.Minute))
	if err := sl.EndSession(ctx, "s2", s2.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run("s2", postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "the rich lady", Type: "npc", Aliases: []string{"Veiled Abbess"}}}})
	for _, e := range miraSees() {
		t.Errorf("LEAK to Mira: only \"the rich lady\" was said with the party together, yet she reads %q (%s), first heard in Thorin's scene", e.Name, e.Type)
	}
}
