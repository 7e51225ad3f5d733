package retrieve

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Fifth round of held-out corpora (issue 27, rank5): written before any
// change to the ranking it measures, never tuned on; its first score is in
// the commit that added it.
//
//   - circus: a travelling circus, in a fourth multi-hop style (after
//     heist, feud and wharf) and with paraphrased questions. The players'
//     characters speak under their own names, the narrator describes the
//     camp in the present tense. Ties between performers are read aloud
//     from a letter or a telegram ("your godmother Pernille will come"),
//     shown only by two people sharing a scene under no relationship word
//     ("Cosima throws the knives and Anatole does not flinch"; the
//     question says "Anatole's knife-act partner"), or stated only as
//     facts. The answer is said by the related one in a later session, in
//     words the question does not use ("the lion's collar" is "that
//     studded leather thing"), while the named one and a stagehand talk
//     about the thing by its name. The paraphrase questions share at most
//     a name with the line that answers them ("How did Clio mend the
//     tent's tear?" for "I sewed the rip in the big top with sail
//     thread").
func genCircus(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9b05688c2b3e6c1f))
	f := &campaignfile.File{Campaign: "circus-eval"}
	type ent struct{ id, name, first string }
	npc := func(i int, name string) ent {
		first, _, _ := strings.Cut(name, " ")
		e := ent{fmt.Sprintf("cnpc-%02d", i), name, first}
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "npc", Name: name, Aliases: []string{first}})
		return e
	}
	var npcs []ent
	for i, n := range []string{"Ottilie Marchetti", "Pernille Voss", "Anatole Graves", "Cosima Lund", "Hesper Quint",
		"Ambrose Quint", "Mireille Dusk", "Florian Dusk", "Zelda Ashgrove", "Bartholomew Finch", "Rosamund Pyle",
		"Cuthbert Hale", "Clio Banberry", "Evander Thorn", "Lucius Merrow", "Ignatius Bly", "Tabitha Crook", "Silas Wendt"} {
		npcs = append(npcs, npc(i, n))
	}
	spots := []string{"the big top", "the menagerie", "the cook tent", "the midway", "the wagon row"}
	for i, p := range spots {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("cloc-%d", i), Type: "location", Name: p[len("the "):]})
	}
	pcs := []ent{{"pc-juniper", "Juniper", "Juniper"}, {"pc-bex", "Bex", "Bex"}}
	for _, p := range pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name, Attributes: map[string]any{"player": "u-" + p.name}})
	}
	stagehand := npcs[16] // Tabitha: talks about every thing by its name
	const sessions = 7
	type line struct {
		speaker ent // zero: the narrator
		text    string
	}
	planned := make([][]line, sessions)
	add := func(s int, l line) { planned[s] = append(planned[s], l) }
	var qs []question
	// Multi-hop pairs: the question names the first, the second answers.
	// how: "letter" (a player reads the tie aloud), "scene" (the two share a
	// scene, no relationship word), "fact" (only the graph knows).
	type pair struct {
		named, other ent
		how          string
		typ          string // the fact's type, for "fact"
		tie          string // the line that ties them (%[1]s named, %[2]s other, first names)
		q            string // %[1]s the named one's first name
		thing, alias string // the question's word, the answer's word
		fate         string
	}
	pairs := []pair{
		{npcs[0], npcs[1], "letter", "", "It's a letter, smudged. 'Ottilie, my dear, your godmother %[2]s will come for the autumn fair.' Signed with a P.",
			"What did %[1]s's godmother reveal about the lion's collar?", "the lion's collar", "that studded leather thing",
			"was pawned in Vell for a round of drinks"},
		{npcs[2], npcs[3], "scene", "", "Behind the cook tent %[2]s throws the knives, one after another, and %[1]s does not flinch against the board.",
			"What does %[1]s's knife-act partner say happened to the ticket box?", "the ticket box", "the tin with the takings",
			"went into the river when the ferry tipped"},
		{npcs[4], npcs[5], "fact", "TWIN_OF", "",
			"According to %[1]s's twin, where did the tiger cub go?", "the tiger cub", "the striped little beast",
			"is being nursed by a dairy farmer's wife in Coldbrook"},
		{npcs[6], npcs[7], "letter", "", "A telegram, for Mireille: 'Brother %[2]s arrives Tuesday on the late train. Meet him.'",
			"What did %[1]s's brother say about the stolen costumes?", "the stolen costumes", "the spangled rags",
			"were sold by the bale to a theatre in the capital"},
		{npcs[8], npcs[9], "scene", "", "%[1]s lets go of the bar at the top of the swing, and %[2]s catches her wrists as he has every night for ten years.",
			"What did the man who catches %[1]s on the trapeze claim about the rigging keys?", "the rigging keys", "the ring of iron",
			"hang on a nail inside the bandstand"},
		{npcs[10], npcs[11], "fact", "LANDLORD_OF", "",
			"What did %[1]s's landlord let slip about the fortune-teller's crystal?", "the fortune-teller's crystal", "the glass ball",
			"was cracked in two and glued back with pitch"},
	}
	for _, p := range pairs {
		sa := 2 + rng.IntN(sessions-2)
		answer := fmt.Sprintf("You mean %s? Keep it quiet: it %s.", p.alias, p.fate)
		add(sa, line{p.other, answer})
		// The named one and the stagehand name the thing.
		for range 2 {
			add(rng.IntN(sessions), line{p.named, fmt.Sprintf(choose(rng, []string{
				"I had nothing to do with %s, ask anyone.", "If you find %s, you bring it to me first.",
				"Everyone blames me for %s."}), p.thing)})
		}
		add(rng.IntN(sessions), line{stagehand, fmt.Sprintf("Nobody's seen %s since we left Vell.", p.thing)})
		q := fmt.Sprintf(p.q, p.named.first)
		switch p.how {
		case "fact":
			f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: p.other.id, Target: p.named.id, Type: p.typ,
				Provenance: campaignfile.Provenance{Session: "c1"}})
			qs = append(qs, question{Kind: "two_hop", Q: q, Expect: p.fate})
		case "letter":
			tie := fmt.Sprintf(p.tie, p.named.first, p.other.first)
			add(rng.IntN(sa), line{choose(rng, pcs), tie})
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{tie, p.fate}})
		default: // scene
			tie := fmt.Sprintf(p.tie, p.named.first, p.other.first)
			add(rng.IntN(sa), line{text: tie})
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{tie, p.fate}})
		}
	}
	// Paraphrases: the line, its evidence and a question in other words.
	paras := []struct {
		speaker     ent
		text, ev, q string
	}{
		{npcs[12], "I sewed the rip in the big top with sail thread, took me till sunrise.", "sail thread",
			"How did Clio mend the tent's tear?"},
		{npcs[13], "The elephant won't touch her hay since we crossed the river; she just sways.", "won't touch her hay",
			"Why is Evander worried about the big animal's appetite?"},
		{npcs[14], "Sold the spare calliope pipes to a church organist in Harrow.", "church organist in Harrow",
			"Who bought the extra parts of the steam organ from Lucius?"},
		{npcs[15], "My hands shake too much now for the torches; I'll do the clowning instead.", "hands shake too much",
			"Why did Ignatius give up his fire act?"},
		{ent{}, "Rain pools on the sawdust ring, the evening show is called off and the crowd gets its pennies back.",
			"crowd gets its pennies back", "When was a performance cancelled for bad weather, with the audience refunded?"},
		{pcs[0], "I slip the mayor's clerk two free tickets so we can pitch on the common.", "two free tickets",
			"How did Juniper get permission to set up on the village green?"},
	}
	for _, p := range paras {
		add(rng.IntN(sessions), line{p.speaker, p.text})
		qs = append(qs, question{Kind: "paraphrase", Q: p.q, Expect: p.ev})
	}
	narration := []func() string{
		func() string { return "The calliope wheezes a waltz while the roustabouts hammer the stakes in." },
		func() string {
			return fmt.Sprintf("Sawdust and burnt sugar hang in the air over %s.", choose(rng, spots))
		},
		func() string {
			return fmt.Sprintf("%s juggles apples for a knot of children by the gate.", choose(rng, npcs).first)
		},
		func() string {
			return fmt.Sprintf("Somewhere near %s someone mutters about %s again.", choose(rng, spots), choose(rng, pairs).thing)
		},
		func() string { return fmt.Sprintf("%s counts the takings twice and frowns.", choose(rng, npcs).first) },
	}
	crosstalk := []func() string{
		func() string { return "I want a look inside " + choose(rng, spots) + " tonight." },
		func() string { return "Do we trust " + choose(rng, npcs).first + "? I don't." },
		func() string { return "Sleight of hand... nineteen." },
		func() string { return "Can I sleep in the hay wagon?" },
		func() string { return "I keep asking about " + choose(rng, pairs).thing + "." },
		func() string { return "Let's buy candied nuts and listen." },
	}
	start := time.Date(2026, 5, 4, 19, 15, 0, 0, time.UTC)
	shape := sessionShape{first: 18 * time.Second, step: 22 * time.Second, durMS: 3000, narratorID: "u-narrator", narratorName: "Narrator"}
	for s := range sessions {
		var ls []line
		gaps := make([]int, len(planned[s])+1)
		for range 22 {
			gaps[rng.IntN(len(gaps))]++
		}
		for i := range gaps {
			for range gaps[i] {
				if rng.IntN(2) == 0 {
					ls = append(ls, line{text: narration[rng.IntN(len(narration))]()})
				} else {
					ls = append(ls, line{choose(rng, pcs), crosstalk[rng.IntN(len(crosstalk))]()})
				}
			}
			if i < len(planned[s]) {
				ls = append(ls, planned[s][i])
			}
		}
		sid := fmt.Sprintf("c%d", s+1)
		at := start.AddDate(0, 0, 10*s)
		us := make([]spoken, len(ls))
		for i, x := range ls {
			us[i] = spoken{x.speaker.id, x.speaker.name, x.text}
		}
		f.Sessions = append(f.Sessions, shape.session(sid, at, us))
	}
	return f, qs
}
