package postsession_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSceneEntityAtTheInstantOfARejoin extracts a session whose split
// scene ends at an exact instant (the DM rejoins the party at t0+5m): a
// name said a microsecond before it is the scene's (Thorin's), a name said
// at that instant is said with the party together (the presence span the
// rejoin opens holds it, as it holds the line for every other read), and
// a name of the scene said with the party together in the next session
// reaches every player from then on.
func TestSceneEntityAtTheInstantOfARejoin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "instant")
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	rejoin := t0.Add(5 * time.Minute)
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Time
		players []string
		split   bool
	}{{t0, []string{"lyra", "thorin"}, false}, {t0.Add(time.Minute), []string{"thorin"}, true}, {rejoin, []string{"lyra", "thorin"}, false}} {
		if err := sl.RecordPresence(ctx, "s1", p.at, p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	write := func(sess, who, text string, at time.Time) {
		t.Helper()
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: sess, SpeakerID: who, SpeakerName: who, Text: text, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	write("s1", "marla", "The Ember Gate opens only at dusk.", rejoin.Add(-time.Microsecond))
	write("s1", "dm", "Back at the inn, a carter talks of the Salt Road.", rejoin)
	if err := sl.EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	x := postsession.Extraction{Entities: []postsession.ExtractedEntity{
		{Name: "Ember Gate", Type: "location", Description: "opens at dusk"}, {Name: "Salt Road", Type: "location"}}}
	run := func(sess string) {
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
	run("s1")
	sees := func(v memory.Viewer, name string) bool {
		t.Helper()
		c, err := camp.As(v)
		if err != nil {
			t.Fatal(err)
		}
		es, err := c.Graph().FindEntities(ctx, memory.EntityFilter{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return len(es) == 1
	}
	check := func(when string, want map[string]map[memory.Viewer]bool) {
		t.Helper()
		for name, byViewer := range want {
			for v, ok := range byViewer {
				if got := sees(v, name); got != ok {
					t.Errorf("%s: %s sees %q = %v, want %v", when, v, name, got, ok)
				}
			}
		}
	}
	lyra, thorin, anyone, dm := memory.PlayerViewerOf("lyra"), memory.PlayerViewerOf("thorin"), memory.PlayerViewer(), memory.DMViewer()
	check("after s1", map[string]map[memory.Viewer]bool{
		"Ember Gate": {lyra: false, thorin: true, anyone: false, dm: true},
		"Salt Road":  {lyra: true, thorin: true, anyone: true, dm: true},
	})
	// Session 2, the party together: Lyra says the gate's name.
	if err := sl.StartSession(ctx, "s2", t0.Add(7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s2", t0.Add(7*24*time.Hour), []string{"lyra", "thorin"}, false); err != nil {
		t.Fatal(err)
	}
	write("s2", "lyra", "Thorin, where is this Ember Gate of yours?", t0.Add(7*24*time.Hour+time.Minute))
	if err := sl.EndSession(ctx, "s2", t0.Add(7*24*time.Hour+time.Hour)); err != nil {
		t.Fatal(err)
	}
	run("s2")
	check("after s2", map[string]map[memory.Viewer]bool{
		"Ember Gate": {lyra: true, thorin: true, anyone: true, dm: true},
	})
}

// TestSceneEntityStaysHiddenWhenEdited: the DM's edits of an entity first
// heard in a split scene (UpdateEntity, UpsertEntity as a campaign file
// does, kg_put_node) leave it hidden from players outside the scene; only
// PublishEntity reveals it.
func TestSceneEntityStaysHiddenWhenEdited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "edit")
	splitSession(ctx, t, camp)
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: scriptedExtractor{postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Vault of Ash", Type: "location"}}}},
		Progress:  postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	lyra, err := camp.As(memory.PlayerViewerOf("lyra"))
	if err != nil {
		t.Fatal(err)
	}
	hidden := func(when string) {
		t.Helper()
		if e, err := lyra.Graph().Entity(ctx, "vault-of-ash"); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("%s: Lyra reads the vault: %v, %v", when, e.Name, err)
		}
	}
	hidden("extracted")
	g := camp.Graph()
	name := "Vault of Ashes"
	if _, err := g.UpdateEntity(ctx, "vault-of-ash", memory.EntityUpdate{Name: &name, SetAttributes: map[string]any{"description": "a vault"}}); err != nil {
		t.Fatal(err)
	}
	hidden("renamed")
	if err := g.UpsertEntity(ctx, memory.Entity{ID: "vault-of-ash", Type: "location", Name: "Vault of Ash"}); err != nil {
		t.Fatal(err)
	}
	hidden("upserted")
	if _, err := camp.KGPutNode(ctx, postgres.KGCampaign, postgres.KGNodeInput{ID: "vault-of-ash", Gist: "a vault"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	hidden("put as a node")
	if _, err := lyra.Graph().PublishEntity(ctx, "vault-of-ash"); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("Lyra publishes the vault: %v", err)
	}
	hidden("Lyra's publish")
	if _, err := g.PublishEntity(ctx, "vault-of-ash"); err != nil {
		t.Fatal(err)
	}
	if e, err := lyra.Graph().Entity(ctx, "vault-of-ash"); err != nil {
		t.Errorf("published: Lyra does not read the vault: %v", err)
	} else if _, ok := e.Attributes["hidden_description"]; ok {
		t.Errorf("published: Lyra reads the hidden description: %v", e.Attributes)
	}
}
