package campaignfile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// A players entry keyed by a mention (what a DM copies from Discord) or a
// display name with spaces never matches the member it means: the player's
// presence would never find their character, silently. Both readers
// refuse it, naming the entry and the key's line.
func TestPlayersKeyRefusesMentionsAndNames(t *testing.T) {
	ents := "entities:\n  - {id: thorin, type: player, name: Thorin}\n"
	for _, tc := range []struct{ name, players, err string }{
		{"mention", "players: {\"<@311111111111111111>\": thorin}\n", `line 2: invalid campaign file: players: "<@311111111111111111>" is a mention`},
		{"nick mention", "players: {\"<@!311111111111111111>\": thorin}\n", `players: "<@!311111111111111111>" is a mention`},
		{"at name", "players: {\"@Lyra\": thorin}\n", `players: "@Lyra" is a mention`},
		{"display name", "players: {\"Lyra Moon\": thorin}\n", `players: "Lyra Moon" is not a Discord user id`},
	} {
		doc := "campaign: c\n" + tc.players + ents
		_, perr := campaignfile.Parse(strings.NewReader(doc), "f.yaml")
		_, cerr := campaignfile.Check(strings.NewReader(doc), "f.yaml", campaignfile.Options{})
		for reader, err := range map[string]error{"Parse": perr, "Check": cerr} {
			if !errors.Is(err, campaignfile.ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %s error = %v, want %q", tc.name, reader, err, tc.err)
			}
		}
	}
}
