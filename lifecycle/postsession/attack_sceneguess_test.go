package postsession_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackGuessRevealsSceneEntity attacks the entity secrecy of split
// scenes through post-session extraction's name resolution: a player who
// was not in the scene says, with the party together, a name that only
// sounds like the scene's entity (or one of its aliases). Extraction
// resolves it to the hidden entity (by sound, Resolver.Resolve), and
// namedIn then takes the player's public line as a line naming the
// entity (the name used counts as one of its names), so the entity's
// real name, aliases and type are shown to every player.
//
// Thorin alone met the smuggler "Korrin Ashvale" (alias "Korrin") in a
// split scene. The next session, the party together, Lyra asks "Is there
// a Corin at the docks?": she never said, nor heard, "Korrin Ashvale",
// yet afterwards she (and any player) finds it, name and aliases.
func TestAttackGuessRevealsSceneEntity(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "guess")
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
	lyraSees := func() []memory.Entity {
		t.Helper()
		c, err := camp.As(memory.PlayerViewerOf("lyra"))
		if err != nil {
			t.Fatal(err)
		}
		es, err := c.Graph().FindEntities(ctx, memory.EntityFilter{Name: "Ashvale"})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}

	// Session 1: Thorin alone in the scene hears the smuggler's name.
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"lyra", "thorin"}, false}, {time.Minute, []string{"thorin"}, true}, {5 * time.Minute, []string{"lyra", "thorin"}, false}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	write("s1", "marla", "They call me Korrin Ashvale, and my boat leaves at dawn.", t0.Add(2*time.Minute))
	if err := sl.EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run("s1", postsession.Extraction{Entities: []postsession.ExtractedEntity{
		{Name: "Korrin Ashvale", Type: "npc", Aliases: []string{"Korrin"}, Description: "a smuggler with a boat"}}})
	if es := lyraSees(); len(es) != 0 {
		t.Fatalf("after s1 Lyra already sees %v: the attack proves nothing", es)
	}

	// Session 2, the party together: Lyra guesses a name that sounds like it.
	s2 := t0.Add(7 * 24 * time.Hour)
	if err := sl.StartSession(ctx, "s2", s2); err != nil {
		t.Fatal(err)
	}
	if err := sl.RecordPresence(ctx, "s2", s2, []string{"lyra", "thorin"}, false); err != nil {
		t.Fatal(err)
	}
	write("s2", "lyra", "Is there a Corin at the docks?", s2.Add(time.Minute))
	if err := sl.EndSession(ctx, "s2", s2.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	run("s2", postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Corin", Type: "npc"}}})
	if es := lyraSees(); len(es) != 0 {
		for _, e := range es {
			t.Errorf("LEAK to Lyra: having said only \"Corin\" with the party together, she reads %q (%s, aliases %v), first heard in Thorin's scene",
				e.Name, e.Type, e.Aliases)
		}
	}
}
