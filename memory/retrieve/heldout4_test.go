package retrieve

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Fourth round of held-out corpora (issue 27, rank4): written before any
// change to the ranking it measures, never tuned on; its first score is in
// the commit that added it.
//
//   - wharf: a multi-hop campaign in a third style (after heist and feud).
//     A river port's merchant houses; the players' characters speak under
//     their own names. Ties between the people are told by a third party
//     (a gossip, not the GM, not the relative), stated by the named one
//     ("my partner Odile ..."), or only as facts. The answer is said by
//     the related one in a later session, in words the question does not
//     use (the question asks about "the cargo", the answer "the crates"),
//     while the named one and a harbour clerk talk about the thing by its
//     name in several lines. Questions use the possessive, "the … of", or
//     "whoever … is".
func genWharf(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x3c6ef372fe94f82b))
	f := &campaignfile.File{Campaign: "wharf-eval"}
	type ent struct{ id, name, first string }
	first := []string{"Odile", "Quillon", "Marisol", "Benedek", "Saoirse", "Thaddeus", "Ilse", "Rainer", "Calla", "Dorian",
		"Fenna", "Gideon", "Juno", "Lazlo", "Noor", "Piet", "Sabine", "Ulric", "Wren", "Zdenek"}
	last := []string{"Oakhaven", "Tallow", "Brine", "Coppercourt", "Meer", "Stallard", "Vantongeren", "Wexley"}
	var npcs []ent
	for i, fn := range first {
		e := ent{fmt.Sprintf("wnpc-%02d", i), fn + " " + last[(i*3)%len(last)], fn}
		npcs = append(npcs, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "npc", Name: e.name, Aliases: []string{fn}})
	}
	docks := []string{"the Tallow Quay", "the customs house", "Pilchard Row", "the dry dock", "the Lantern Steps"}
	for i, p := range docks {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("wloc-%d", i), Type: "location", Name: p[len("the "):]})
	}
	pcs := []ent{{"pc-mira", "Mira", "Mira"}, {"pc-tov", "Tov", "Tov"}}
	for _, p := range pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name, Attributes: map[string]any{"player": "u-" + p.name}})
	}
	// Relations: type, the question's word, a gossip's telling (%[1]s the
	// named one's first name, %[2]s the related one's full name), the
	// named one's own telling (%[2]s the related one's first name).
	type rel struct{ typ, word, gossip, own string }
	rels := []rel{
		{"PARTNER_OF", "partner", "Half the quay knows %[2]s put up the money when %[1]s bought the first barge.", "My partner %[2]s handles the books; I handle the river."},
		{"WIFE_OF", "wife", "They say %[2]s married %[1]s in the flood year, against her family's wishes.", "%[2]s, my wife, would skin me if she heard me say it."},
		{"APPRENTICE_OF", "apprentice", "%[2]s sweeps %[1]s's counting room and is learning the ledgers there.", "The lad %[2]s is my apprentice; don't fill his head with nonsense."},
		{"CREDITOR_OF", "creditor", "Everyone knows %[1]s still owes %[2]s for the warehouse roof.", "I owe %[2]s more than I'll ever pay, and he reminds me weekly."},
		{"COUSIN_OF", "cousin", "%[2]s and %[1]s grew up in the same house on Pilchard Row, cousins by their mothers.", "My cousin %[2]s and I don't speak since the funeral."},
	}
	type obj struct{ name, other string }
	objs := []obj{{"the cargo", "the crates"}, {"the harbour seal", "the brass stamp"}, {"the toll money", "the purse"},
		{"the drowned man's ring", "the gold band"}, {"the bill of lading", "the folded paper"}, {"the spice chest", "the pepper box"},
		{"the pilot's chart", "the sea map"}, {"the guild charter", "the old parchment"}, {"the stolen lantern", "the green lamp"},
		{"the contraband brandy", "the casks"}}
	fates := []string{"went upriver on the Sparrow at the turn of the tide", "is hidden in a bread oven on the Lantern Steps",
		"was pawned to a tinker for nine crowns", "sank off the breakwater in the squall", "is nailed under the floor of a net loft",
		"was sold to the bishop's steward", "got burnt with the rest of the rubbish", "sits in a bank vault in the upper town",
		"was swapped for a barrel of eels", "is with the nuns at Saint Ebba's"}
	const sessions = 6
	type line struct {
		speaker ent
		text    string
	}
	planned := make([][]line, sessions)
	var qs []question
	for j := 0; j+1 < len(npcs); j += 2 {
		named, other := npcs[j], npcs[j+1]
		r := rels[(j/2)%len(rels)]
		o := objs[(j/2)%len(objs)]
		fate := fates[(j/2)%len(fates)]
		sa := 1 + rng.IntN(sessions-1)
		planned[sa] = append(planned[sa], line{other, fmt.Sprintf("Between us? %s %s. Don't tell a soul I said so.", capFirst(o.other), fate)})
		// The named one and the harbour clerk name the thing, more than once.
		for range 2 {
			s := rng.IntN(sessions)
			planned[s] = append(planned[s], line{named, choose(rng, []string{
				"Nobody touches %s without my say-so.", "I have papers for %s, every one of them.", "Ask me about %s again and we're done."})})
			planned[s][len(planned[s])-1].text = fmt.Sprintf(planned[s][len(planned[s])-1].text, o.name)
		}
		clerk := npcs[(j+7)%len(npcs)]
		if clerk != named && clerk != other {
			s := rng.IntN(sessions)
			planned[s] = append(planned[s], line{clerk, fmt.Sprintf("The customs book has no entry for %s, none at all.", o.name)})
		}
		var q string
		switch rng.IntN(3) {
		case 0:
			q = fmt.Sprintf("What did %s's %s let slip about %s?", named.first, r.word, o.name)
		case 1:
			q = fmt.Sprintf("According to the %s of %s, where did %s go?", r.word, named.name, o.name)
		default:
			q = fmt.Sprintf("Whoever %s's %s is, what do they say became of %s?", named.first, r.word, o.name)
		}
		switch (j / 2) % 3 {
		case 0: // a fact only
			f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: other.id, Target: named.id, Type: r.typ,
				Provenance: campaignfile.Provenance{Session: "w1"}})
			qs = append(qs, question{Kind: "two_hop", Q: q, Expect: fate})
		case 1: // told by a gossip
			gossip := npcs[(j+11)%len(npcs)]
			intro := fmt.Sprintf(r.gossip, named.first, other.name)
			si := rng.IntN(sa + 1)
			planned[si] = append([]line{{gossip, intro}}, planned[si]...)
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{intro, fate}})
		default: // told by the named one
			intro := fmt.Sprintf(r.own, named.first, other.first)
			si := rng.IntN(sa + 1)
			planned[si] = append([]line{{named, intro}}, planned[si]...)
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{intro, fate}})
		}
	}
	filler := []func() string{
		func() string { return fmt.Sprintf("Gulls fight over fish heads along %s.", choose(rng, docks)) },
		func() string {
			return fmt.Sprintf("A barge scrapes the pilings near %s and someone swears.", choose(rng, docks))
		},
		func() string { return fmt.Sprintf("%s nods at you and keeps walking.", choose(rng, npcs).first) },
		func() string {
			return fmt.Sprintf("Rumour says %s turned up at %s.", choose(rng, objs).name, choose(rng, docks))
		},
	}
	chatter := []func() string{
		func() string { return "I don't trust " + choose(rng, npcs).first + "." },
		func() string { return "Let's check " + choose(rng, docks) + " after dark." },
		func() string { return "I'll ask about " + choose(rng, objs).name + "." },
		func() string { return "Perception, I got a twelve." },
		func() string { return "Can we get something to eat first?" },
	}
	start := time.Date(2026, 3, 2, 18, 30, 0, 0, time.UTC)
	shape := sessionShape{first: 15 * time.Second, step: 25 * time.Second, durMS: 3500, narratorID: "u-dm", narratorName: "DM"}
	for s := range sessions {
		var ls []line
		gaps := make([]int, len(planned[s])+1)
		for range 20 {
			gaps[rng.IntN(len(gaps))]++
		}
		for i := range gaps {
			for range gaps[i] {
				if rng.IntN(2) == 0 {
					ls = append(ls, line{text: filler[rng.IntN(len(filler))]()})
				} else {
					ls = append(ls, line{choose(rng, pcs), chatter[rng.IntN(len(chatter))]()})
				}
			}
			if i < len(planned[s]) {
				ls = append(ls, planned[s][i])
			}
		}
		sid := fmt.Sprintf("w%d", s+1)
		at := start.AddDate(0, 0, 7*s)
		us := make([]spoken, len(ls))
		for i, x := range ls {
			us[i] = spoken{x.speaker.id, x.speaker.name, x.text}
		}
		f.Sessions = append(f.Sessions, shape.session(sid, at, us))
	}
	return f, qs
}

// capFirst upper-cases the first letter of an ASCII phrase.
func capFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
