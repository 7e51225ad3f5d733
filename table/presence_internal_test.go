package table

import (
	"fmt"
	"testing"
)

// TestWitnessesOfASplitParty: who hears a line when the DM split the
// party (ATTACK2: a player with no character talking at the table outside
// the split scene was heard by the scene's players and NPCs; only players
// with a character were left out, by the knowledge query).
func TestWitnessesOfASplitParty(t *testing.T) {
	t.Parallel()
	users := []string{"p3", "p1", "dm", "p2", "p4"}
	scene := []string{"p1", "p2"}
	for _, tc := range []struct {
		name    string
		scene   []string
		by      string
		opted   map[string]bool
		speaker string
		want    string
		outside bool
	}{
		{"not split: everyone", nil, "", nil, "p3", "[dm p1 p2 p3 p4]", false},
		{"not split, opted out left out", nil, "", map[string]bool{"p4": true}, "p1", "[dm p1 p2 p3]", false},
		{"a player in the scene", scene, "dm", nil, "p1", "[p1 p2]", false},
		{"the DM who split the party narrates", scene, "dm", nil, "dm", "[p1 p2]", false},
		{"an NPC's line", scene, "dm", nil, "", "[p1 p2]", false},
		{"a player outside the scene (no character needed)", scene, "dm", nil, "p3", "[]", true},
		{"another DM outside the scene counts as outside", scene, "dm", nil, "co-dm", "[]", true},
		{"split by nobody known: every outsider is outside", scene, "", nil, "dm", "[]", true},
		{"in the scene, opted out left out", scene, "dm", map[string]bool{"p2": true}, "p1", "[p1]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, outside := witnesses(users, tc.scene, tc.by, tc.opted, tc.speaker)
			if fmt.Sprint(got) != tc.want || outside != tc.outside {
				t.Fatalf("witnesses = %v, outside %v; want %s, %v", got, outside, tc.want, tc.outside)
			}
		})
	}
}
