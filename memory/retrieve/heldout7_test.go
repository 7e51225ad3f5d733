package retrieve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Seventh round of held-out corpora (issue 27, fuse): written before any
// change to the fusion it measures, never tuned on; its first score
// (hybrid recall@5 / @10 .33 / .80, fts .40 / .73, ppr .03 / .33) is in
// the commit after the one that added it.
//
//   - vine: a grape harvest in a hill valley, in a sixth multi-hop style
//     (after heist, feud, wharf, circus and abbey). Every session after
//     the first opens with the GM's recap naming every villager met so far
//     with a few words each (a hub that names everyone, the relatives
//     included); the GM speaks in long monologues (1.5–3k characters) next
//     to the players' short interjections. Kin and allies are told in the
//     GM's narration with the kinship word ("Hobb, Rowena's uncle on her
//     mother's side"), in the narration by what two people do together
//     with no relationship word, in dialogue (by the related one, by the
//     named one, or by a third villager answering a player), or stated
//     only as facts. Each question asks what the relative of a named
//     villager said, has or did about a thing; the relative answers in a
//     later session in other words ("the press screw" is "that iron worm
//     off the big press"), while the named one, the GM and the recaps name
//     the thing itself. Two questions ask for the detail of an event the
//     recaps repeat without it; the paraphrase questions share at most a
//     name with the line that answers them.
func genVine(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5be0cd19137e2179))
	f := &campaignfile.File{Campaign: "vine-eval"}
	type ent struct{ id, name, first, role string }
	var npcs []ent
	for i, n := range []string{"Rowena Calloway|the vintner's widow", "Hobb Carder|the cellar master", "Jessamy Gale|the cook",
		"Tobin Wrexham|the cooper's boy", "Marguerite Aske|the old cooper", "Dunstan Reeve|the reeve", "Corliss Fane|a picker",
		"Wynn Abernathy|a picker", "Perrin Stoat|the water carrier", "Ilse Marrow|the herb woman", "Gideon Tull|the tax man's clerk",
		"Nell Ostry|the laundress", "Bram Kettering|the innkeeper", "Sabine Loach|the miller", "Orrin Vail|the miller's hand",
		"Fennimore Crabb|the oldest picker", "Agnes Holt|the hired sword", "Lysander Quayle|the lord's steward",
		"Matthias Brock|the shepherd", "Delphine Orme|the jam maker"} {
		name, role, _ := strings.Cut(n, "|")
		first, _, _ := strings.Cut(name, " ")
		e := ent{fmt.Sprintf("vnpc-%02d", i), name, first, role}
		npcs = append(npcs, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "npc", Name: name, Aliases: []string{first}})
	}
	places := []string{"the press house", "the south terraces", "the drying shed", "the cellar", "the millpond", "the chapel yard"}
	for i, p := range places {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("vloc-%d", i), Type: "location", Name: p[len("the "):]})
	}
	pcs := []ent{{"pc-marlo", "Marlo", "Marlo", ""}, {"pc-quill", "Quill", "Quill", ""}, {"pc-tansy", "Tansy", "Tansy", ""}}
	for _, p := range pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name, Attributes: map[string]any{"player": "u-" + p.name}})
	}
	const sessions = 6
	type line struct {
		speaker ent // zero: the GM
		text    string
	}
	monologue := make([][]string, sessions)
	planned := make([][]line, sessions)
	add := func(s int, l line) { planned[s] = append(planned[s], l) }
	// events[s] are session s's events in a few words, for the recaps.
	events := make([][]string, sessions)
	var qs []question
	// how: "told" (the GM's narration with the kinship word), "shown" (the
	// narration shows the two together, no relationship word), "own" (the
	// related one says it), "named" (the named one says it), "third" (a
	// third villager answers a player), "fact" (only the graph knows).
	type pair struct {
		named, other ent
		how          string
		typ          string // the fact's type, for "fact"
		tie          string // %[1]s the named one's first name, %[2]s the other's
		tieEv        string // the part of the tie the answer needs (whole tie when empty)
		q            string // %[1]s the named one's first name
		thing, alias string
		fate         string // the related one's words for what became of it
	}
	pairs := []pair{
		{npcs[0], npcs[1], "told", "", "%[2]s Carder, %[1]s's uncle on her mother's side, rolls the empty barrels down the ramp two at a time and curses each one by name.",
			"%[2]s Carder, %[1]s's uncle on her mother's side",
			"What did %[1]s's uncle say about the missing press screw?", "the missing press screw", "that iron worm off the big press",
			"sank in the millpond under the sluice gate"},
		{npcs[5], npcs[2], "told", "", "%[2]s keeps to %[1]s's elbow all evening, as she has since the two of them were married at midsummer, ladling stew for anyone who holds out a bowl.",
			"since the two of them were married at midsummer",
			"Where has %[1]s's wife put the vineyard deed?", "the vineyard deed", "the folded paper with the old lord's seal",
			"is sewn inside the hem of my apron"},
		{npcs[7], npcs[6], "shown", "", "Down the fourth row %[2]s cuts and %[1]s carries, basket after basket, the same pair on the same row every morning since the first frost.",
			"the same pair on the same row every morning",
			"What did the woman who picks beside %[1]s every morning do with the tax ledger?", "the tax ledger", "the little green book the tax man left",
			"went into the bonfire on the night of the pressing"},
		{npcs[9], npcs[8], "own", "", "%[1]s is my godmother. She's the one got me this work, hauling water up the terraces.", "",
			"What did %[1]s's godson say about the poisoned cask?", "the poisoned cask", "the barrel that smelled of bitter almonds",
			"was rolled down into the cellar of the Crooked Stile"},
		{npcs[10], npcs[11], "third", "", "%[2]s and %[1]s? Sister and brother, though both of them would spit before admitting it.", "",
			"What does %[1]s's sister know about the stolen festival silver?", "the stolen festival silver", "the purse from the feast-day box",
			"is buried under the fig tree behind the chapel"},
		{npcs[13], npcs[14], "named", "", "Ask my nephew %[2]s, he'll vouch for me. He always does, bless him.", "",
			"What did %[1]s's nephew claim about the fire in the drying shed?", "the fire in the drying shed", "the blaze where the raisins hang",
			"was started by a lantern the night watchman kicked over"},
		{npcs[3], npcs[4], "fact", "MENTOR_OF", "", "",
			"What did %[1]s's mentor tell the party about the forged seal?", "the forged seal", "that false stamp",
			"is hidden in a tin of lard in the smokehouse"},
		{npcs[17], npcs[16], "fact", "SWORN_TO", "", "",
			"What did the guard sworn to %[1]s do with the widow's letter?", "the widow's letter", "the note sealed in green wax",
			"was slid under the bishop's door at midnight"},
		{npcs[19], npcs[18], "fact", "PARENT_OF", "", "",
			"According to %[1]s's father, what happened to the prize ram?", "the prize ram", "the big horned beast from the fair",
			"was sold to drovers heading south for the winter"},
	}
	for _, p := range pairs {
		sa := 2 + rng.IntN(sessions-2)
		add(sa, line{p.other, fmt.Sprintf(choose(rng, []string{"%s? Don't tell a soul: it %s.", "You mean %s. Fine. It %s, and that's all I'll say.",
			"Oh, %s. Between you and me, it %s."}), p.alias, p.fate)})
		// The named one, the GM and the recaps name the thing itself.
		add(rng.IntN(sessions), line{p.named, fmt.Sprintf(choose(rng, []string{"I know nothing about %s, and I'm tired of being asked.",
			"Who's been talking to you about %s?", "Leave %s to the reeve, it's none of your business."}), p.thing)})
		sm := rng.IntN(sessions)
		monologue[sm] = append(monologue[sm],
			fmt.Sprintf("%s, %s, keeps glancing toward %s whenever anyone mentions %s.", p.named.first, p.named.role, choose(rng, places), p.thing))
		se := rng.IntN(sessions)
		events[se] = append(events[se], fmt.Sprintf("%s got cagey about %s", p.named.first, p.thing))
		q := fmt.Sprintf(p.q, p.named.first)
		if p.how == "fact" {
			f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: p.other.id, Target: p.named.id, Type: p.typ,
				Provenance: campaignfile.Provenance{Session: "v1"}})
			qs = append(qs, question{Kind: "two_hop", Q: q, Expect: p.fate})
			continue
		}
		tie := fmt.Sprintf(p.tie, p.named.first, p.other.first)
		ev := tie
		if p.tieEv != "" {
			ev = strings.NewReplacer("%[1]s", p.named.first, "%[2]s", p.other.first).Replace(p.tieEv)
		}
		st := rng.IntN(sa)
		switch p.how {
		case "told", "shown":
			monologue[st] = append(monologue[st], tie)
		case "own":
			add(st, line{p.other, tie})
		case "named":
			add(st, line{p.named, tie})
		case "third":
			add(st, line{choose(rng, pcs), fmt.Sprintf("How do %s and %s know each other?", p.other.first, p.named.first)})
			add(st, line{npcs[12], tie}) // Bram the innkeeper knows everyone
		}
		qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{ev, p.fate}})
	}
	// Details the recaps repeat without: the event in full once, later
	// recaps in a few words.
	details := []struct {
		speaker            ent
		text, recap, ev, q string
		inMonologue        bool
	}{
		{ent{}, "Hail comes down the valley like thrown gravel and strips the south terraces bare down to the third wire, leaves and all.",
			"the hail hit the south terraces", "down to the third wire", "How badly did the hail damage the south terraces?", true},
		{pcs[2], "I give the tinker my silver thimble for the little key that fits the cellar grate.",
			"Tansy got a cellar key from the tinker", "silver thimble", "What did Tansy hand over to the tinker for the cellar key?", false},
	}
	for _, d := range details {
		s := rng.IntN(sessions - 2)
		if d.inMonologue {
			monologue[s] = append(monologue[s], d.text)
		} else {
			add(s, line{d.speaker, d.text})
		}
		events[s] = append(events[s], d.recap) // every later recap repeats it
		qs = append(qs, question{Kind: "single", Q: d.q, Expect: d.ev})
	}
	// Paraphrases: the line, its evidence, a question in other words.
	paras := []struct {
		speaker     ent
		text, ev, q string
	}{
		{npcs[15], "My knees won't take another day bent double in the low rows, so they've put me on the sorting table.", "sorting table",
			"Why did Fennimore stop picking out in the vineyard?"},
		{npcs[19], "Wasps got into the sugar crock and I had to throw out a week of jam.", "throw out a week of jam",
			"What ruined Delphine's preserves?"},
		{pcs[0], "I trade my fiddle to the cooper for a cart ride down to the river town.", "cart ride down to the river town",
			"What did Marlo get in return for the musical instrument?"},
		{npcs[17], "Nobody draws from the east well since the dead fox turned up in the bucket.", "dead fox turned up in the bucket",
			"Why does Lysander warn folk off the water on the eastern side?"},
	}
	for _, p := range paras {
		add(rng.IntN(sessions), line{p.speaker, p.text})
		qs = append(qs, question{Kind: "paraphrase", Q: p.q, Expect: p.ev})
	}
	filler := []func() string{
		func() string {
			return fmt.Sprintf("Wasps drone over the split grapes in %s and the air is thick and sweet.", choose(rng, places))
		},
		func() string {
			a, b := choose(rng, npcs), choose(rng, npcs)
			return fmt.Sprintf("%s trades a nod with %s over the baskets and goes back to work.", a.first, b.first)
		},
		func() string {
			return "The bell in the chapel yard counts the hours and nobody looks up from the vines."
		},
		func() string {
			n := choose(rng, npcs)
			return fmt.Sprintf("%s, %s, wipes purple hands on an apron and watches you from %s.", n.first, n.role, choose(rng, places))
		},
		func() string {
			return fmt.Sprintf("Someone near %s mutters about %s, then falls quiet when you pass.", choose(rng, places), choose(rng, pairs).thing)
		},
		func() string {
			return "Carts creak up the terrace road, the oxen steaming, the juice already running from the bottom boards."
		},
		func() string {
			n := choose(rng, npcs)
			return fmt.Sprintf("By the fire %s tells a long story about the vintage of the comet year, and nobody believes a word of it.", n.first)
		},
	}
	interject := []func() string{
		func() string { return "hold on" },
		func() string { return "lol" },
		func() string { return "perception, fourteen" },
		func() string { return "I follow " + choose(rng, npcs).first + "." },
		func() string { return "wait, who's " + choose(rng, npcs).first + " again?" },
		func() string { return "brb" },
		func() string { return "I eat a grape. Just one." },
		func() string { return "I ask about " + choose(rng, pairs).thing + "." },
		func() string { return "Can we go to " + choose(rng, places) + "?" },
	}
	start := time.Date(2026, 9, 12, 18, 30, 0, 0, time.UTC)
	shape := sessionShape{first: 15 * time.Second, step: 20 * time.Second, durMS: 2500, narratorID: "u-gm", narratorName: "GM"}
	for s := range sessions {
		var ls []line
		if s > 0 {
			// The GM's recap names every villager with a few words each,
			// then the sessions' events.
			var b strings.Builder
			b.WriteString("Last time in the valley: you have met ")
			for i, n := range npcs {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s %s", n.name, n.role)
			}
			b.WriteString(". ")
			for t := range s {
				fmt.Fprintf(&b, "In session %d ", t+1)
				if len(events[t]) == 0 {
					b.WriteString("you picked grapes and listened. ")
					continue
				}
				b.WriteString(strings.Join(events[t], "; ") + ". ")
			}
			ls = append(ls, line{text: strings.TrimSpace(b.String())})
		}
		sents := make([]string, 0, 28)
		for range 14 + rng.IntN(9) {
			sents = append(sents, filler[rng.IntN(len(filler))]())
		}
		for _, m := range monologue[s] {
			sents = slices.Insert(sents, rng.IntN(len(sents)+1), m)
		}
		ls = append(ls, line{text: strings.Join(sents, " ")})
		gaps := make([]int, len(planned[s])+1)
		for range 22 {
			gaps[rng.IntN(len(gaps))]++
		}
		for i := range gaps {
			for range gaps[i] {
				if rng.IntN(3) == 0 {
					ls = append(ls, line{text: filler[rng.IntN(len(filler))]()})
				} else {
					ls = append(ls, line{choose(rng, pcs), interject[rng.IntN(len(interject))]()})
				}
			}
			if i < len(planned[s]) {
				ls = append(ls, planned[s][i])
			}
		}
		sid := fmt.Sprintf("v%d", s+1)
		at := start.AddDate(0, 0, 7*s)
		us := make([]spoken, len(ls))
		for i, x := range ls {
			us[i] = spoken{x.speaker.id, x.speaker.name, x.text}
		}
		f.Sessions = append(f.Sessions, shape.session(sid, at, us))
	}
	return f, qs
}
