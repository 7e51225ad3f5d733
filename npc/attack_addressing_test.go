package npc_test

import (
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/npc"
)

// TestAttackGroupAddressFloodsTheTable attacks the floor with one line: a
// player names every NPC of a crowded scene, or, in a conversation, asks
// "what do you all think?", and each NPC named or present would take a
// turn, one after the other, for minutes of speech and a model call each.
// At most npc.MaxAnswering NPCs answer one line, chosen in the addressing
// rules' order: the first named, or the NPC in conversation and then the
// scene's order.
func TestAttackGroupAddressFloodsTheTable(t *testing.T) {
	names := map[string][]string{}
	var scene []string
	for _, n := range []string{"Tyrul", "Goryr", "Sela", "Brannoc", "Hadrik", "Elara", "Mira", "Osk"} {
		id := string(rune(n[0]+'a'-'A')) + n[1:]
		names[id] = []string{n}
		scene = append(scene, id)
	}
	finder := newExactNames(names)
	isNPC := func(string) bool { return true }
	now := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, lang, text, last string
		present                []string
		want                   []string
		reason                 string
	}{
		{"every NPC named", "en", "Tyrul, Goryr, Sela, Brannoc, Hadrik, Elara, Mira and Osk, what do you think?", "", scene,
			[]string{"tyrul", "goryr", "sela"}, npc.ReasonNamed},
		{"every NPC named, no scene set", "en", "Tyrul, Goryr, Sela, Brannoc, Hadrik, Elara, Mira, Osk, speak!", "", nil,
			[]string{"tyrul", "goryr", "sela"}, npc.ReasonNamed},
		{"you all, in conversation", "en", "And what do you all think?", "hadrik", scene,
			[]string{"hadrik", "tyrul", "goryr"}, npc.ReasonSeveral},
		{"ihr alle, in conversation", "de", "Und was meint ihr alle dazu?", "mira", scene,
			[]string{"mira", "tyrul", "goryr"}, npc.ReasonSeveral},
		{"plural you with every NPC named", "en", "What do you all think, Osk, Mira, Elara, Hadrik and Brannoc?", "", scene,
			[]string{"osk", "mira", "elara"}, npc.ReasonNamed},
		{"two named: both answer", "en", "Tyrul and Goryr, what do you both think?", "", scene,
			[]string{"tyrul", "goryr"}, npc.ReasonNamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := npc.NewAddresser(finder, isNPC, nil, 0)
			a.UseLanguage(tc.lang)
			if tc.last != "" {
				a.NoteReply(tc.last, "u1", now.Add(-5*time.Second))
			}
			got := a.Decide(npc.AddressInput{Text: tc.text, SpeakerID: "u1", At: now, Present: tc.present})
			if !slices.Equal(got.NPCIDs, tc.want) || got.Reason != tc.reason {
				t.Errorf("%q: %d NPCs answer %v (%s), want %v (%s)", tc.text, len(got.NPCIDs), got.NPCIDs, got.Reason, tc.want, tc.reason)
			}
			if len(got.NPCIDs) > npc.MaxAnswering {
				t.Errorf("%q: %d NPCs answer one line, more than %d", tc.text, len(got.NPCIDs), npc.MaxAnswering)
			}
		})
	}
}
