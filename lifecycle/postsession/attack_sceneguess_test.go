package postsession_test

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
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
	a := newSceneAttack(t, "guess")
	// Session 1: Thorin alone in the scene hears the smuggler's name.
	a.scene("lyra", "marla", "They call me Korrin Ashvale, and my boat leaves at dawn.", postsession.Extraction{Entities: []postsession.ExtractedEntity{
		{Name: "Korrin Ashvale", Type: "npc", Aliases: []string{"Korrin"}, Description: "a smuggler with a boat"}}})
	if es := a.sees("lyra", "Ashvale"); len(es) != 0 {
		t.Fatalf("after s1 Lyra already sees %v: the attack proves nothing", es)
	}

	// Session 2, the party together: Lyra guesses a name that sounds like it.
	a.party("lyra", []said{{"lyra", "Is there a Corin at the docks?"}},
		postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Corin", Type: "npc"}}})
	if es := a.sees("lyra", "Ashvale"); len(es) != 0 {
		for _, e := range es {
			t.Errorf("LEAK to Lyra: having said only \"Corin\" with the party together, she reads %q (%s, aliases %v), first heard in Thorin's scene",
				e.Name, e.Type, e.Aliases)
		}
	}
}
