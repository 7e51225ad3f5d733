package campaignfile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// The players key is read by both readers, block and flow style; a player
// whose character the file does not define, or a malformed entry, is an
// error naming the key's line.
func TestPlayersKey(t *testing.T) {
	ents := "entities:\n  - {id: thorin, type: player, name: Thorin}\n  - {id: kael, type: player, name: Kael}\n"
	for _, tc := range []struct {
		name, players string
		want          map[string]string
		err           string
	}{
		{"block", "players:\n  \"311111111111111111\": thorin\n  \"322222222222222222\": kael\n",
			map[string]string{"311111111111111111": "thorin", "322222222222222222": "kael"}, ""},
		{"flow", "players: {u1: thorin}\n", map[string]string{"u1": "thorin"}, ""},
		{"unknown character", "players: {u1: lyra}\n", nil, `line 2: invalid campaign file: players: "u1" plays "lyra", which the file does not define`},
		{"no character", "players: {u1: \"\"}\n", nil, `line 2: invalid campaign file: players: "u1" plays no character`},
		{"not a map", "players: [u1, thorin]\n", nil, "line 2"},
	} {
		doc := "campaign: c\n" + tc.players + ents
		f, perr := campaignfile.Parse(strings.NewReader(doc), "f.yaml")
		sum, cerr := campaignfile.Check(strings.NewReader(doc), "f.yaml", campaignfile.Options{})
		for reader, err := range map[string]error{"Parse": perr, "Check": cerr} {
			if tc.err == "" {
				if err != nil {
					t.Errorf("%s: %s: %v", tc.name, reader, err)
				}
				continue
			}
			if !errors.Is(err, campaignfile.ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %s error = %v, want %q", tc.name, reader, err, tc.err)
			}
		}
		if tc.err != "" {
			continue
		}
		for reader, got := range map[string]campaignfile.Players{"Parse": f.Players, "Check": sum.Players} {
			if len(got) != len(tc.want) {
				t.Errorf("%s: %s players = %v, want %v", tc.name, reader, got, tc.want)
			}
			for u, ch := range tc.want {
				if got[u] != ch {
					t.Errorf("%s: %s: %s plays %q, want %q", tc.name, reader, u, got[u], ch)
				}
			}
		}
	}
}
