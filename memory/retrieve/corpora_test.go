package retrieve

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// The evaluation has three corpora of different shapes, so that a choice
// that helps one and hurts another shows:
//
//   - saltmere: the hand-written campaign of testdata/saltmere-eval.yaml
//     (38 entities, 6 sessions, facts stated in transcript lines);
//   - chat: a long casual conversation between two people over 25 weekly
//     sessions (about 600 lines), written by [genChat]. The two speakers
//     are the only entities; most lines name nobody; questions ask about
//     what one of them said, join two lines from different sessions, ask
//     when something happened, or ask open questions;
//   - names: a name-dense campaign written by [genNames]: 60 generated
//     NPCs, places and items, facts between them, and questions that name
//     one entity and ask what a relative, mentor or employer of it said.
//
// The generated corpora come from a fixed seed: the same corpus every run.
// No public data set is copied; every sentence comes from the templates
// below.

// evalSeed seeds the generated corpora.
const evalSeed = 16

// genChat writes the casual two-person conversation corpus and its
// questions.
func genChat(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	type person struct{ id, user, first, full string }
	people := []person{{"p-nadia", "u-nadia", "Nadia", "Nadia Osei"}, {"p-tom", "u-tom", "Tom", "Tom Lindqvist"}}
	f := &campaignfile.File{Campaign: "chat-eval"}
	for _, p := range people {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.full,
			Aliases: []string{p.first}, Attributes: map[string]any{"player": p.user}})
	}
	const sessions, perSession = 25, 24
	start := time.Date(2025, 3, 2, 20, 0, 0, 0, time.UTC)
	// lines[s] are the planned lines of session s: who speaks and what.
	type line struct {
		who  int
		text string
	}
	planned := make([][]line, sessions)
	var qs []question
	used := map[string]bool{}
	fresh := func(xs []string) string { // a slot value not used by an earlier event
		for range 50 {
			if x := pick(xs); !used[x] {
				used[x] = true
				return x
			}
		}
		return pick(xs)
	}
	date := func(s int) string { return start.AddDate(0, 0, 7*s).Format("January 2") }
	plan := func(s, who int, text string) { planned[s] = append(planned[s], line{who, text}) }

	animals := []string{"greyhound", "tabby cat", "rabbit", "parrot", "tortoise", "beagle", "ferret", "hamster"}
	hobbies := []string{"pottery", "salsa", "life drawing", "bouldering", "cello", "woodworking", "Italian", "choir", "fencing", "archery"}
	cities := []string{"Lisbon", "Porto", "Edinburgh", "Krakow", "Montreal", "Osaka", "Valencia", "Bergen", "Tallinn", "Hobart"}
	sights := []string{"night market", "cliff walk", "old cathedral", "harbour ferry", "botanical garden", "jazz bar", "castle ruins"}
	companies := []string{"county library", "bike co-op", "design studio", "vet clinic", "bakery chain", "water board", "radio station"}
	roles := []string{"project lead", "junior analyst", "night manager", "trainer", "copy editor", "technician"}
	dishes := []string{"sourdough", "ramen broth", "paella", "croissants", "lasagne", "dumplings", "curry paste"}
	ingredients := []string{"garlic", "onions", "the rice", "the butter", "the chillies", "the stock"}
	bodyparts := []string{"ankle", "wrist", "knee", "shoulder", "thumb"}
	sports := []string{"five-a-side", "badminton", "netball", "squash", "ultimate frisbee", "volleyball"}
	vehicles := []string{"campervan", "cargo bike", "moped", "hatchback", "rowing boat"}
	prices := []string{"eight hundred quid", "two grand", "four hundred pounds", "fifty quid and a crate of beer", "three thousand"}
	plants := []string{"orchid", "lemon tree", "jasmine", "chilli plant", "cactus", "fig tree"}
	relatives := []string{"sister", "brother", "cousin", "aunt", "uncle", "niece", "godmother"}
	months := []string{"April", "May", "June", "July", "August", "September", "October"}
	shops := []string{"record shop", "plant nursery", "bookshop", "cheese shop", "tattoo studio", "bike repair shop"}
	streets := []string{"Mill Lane", "Carver Street", "the high street", "Dock Road", "Castle Hill"}
	items := []string{"a vintage lamp", "a signed first edition", "a stack of old jazz records", "a wheel of blue cheese", "a monstera cutting", "a pair of brass bells"}
	races := []string{"half marathon", "10k fun run", "open-water swim", "sprint triathlon"}
	results := []string{"one fifty-two", "forty-eight minutes", "just under two hours", "fifty-five minutes"}
	venues := []string{"old corn exchange", "warehouse by the canal", "town hall", "student union"}
	bands := []string{"a brass band from New Orleans", "an Icelandic folk trio", "a Motown covers band", "a Malian guitar group"}

	// single-hop and temporal facts: one line each.
	type single struct {
		text, q, expect, when string
	}
	singles := []func(o person) single{
		func(o person) single {
			a := fresh(animals)
			return single{"We finally adopted a " + a + " from the shelter, she sleeps on my feet every night.",
				"What animal did " + o.first + " adopt from the shelter?", "adopted a " + a, "When did " + o.first + " adopt the " + a + "?"}
		},
		func(o person) single {
			h := fresh(hobbies)
			return single{"I signed up for " + h + " classes at the community centre, Thursday evenings.",
				"What classes did " + o.first + " sign up for at the community centre?", h + " classes", "When did " + o.first + " start " + h + " classes?"}
		},
		func(o person) single {
			c, s := fresh(cities), fresh(sights)
			return single{"We spent a long weekend in " + c + ", the " + s + " was the best part by far.",
				"What was the best part of " + o.first + "'s long weekend away?", "the " + s + " was the best part", "When was " + o.first + "'s long weekend in " + c + "?"}
		},
		func(o person) single {
			c, r := fresh(companies), fresh(roles)
			return single{"I got the job at the " + c + "! I start as " + r + " after the holidays.",
				"What position did " + o.first + " get at the " + c + "?", "start as " + r, "When did " + o.first + " hear about the job at the " + c + "?"}
		},
		func(o person) single {
			d, i := fresh(dishes), pick(ingredients)
			return single{"I tried making " + d + " from scratch and it was a disaster, " + i + " burned.",
				"What went wrong when " + o.first + " cooked " + d + "?", i + " burned", "When did " + o.first + " try making " + d + "?"}
		},
		func(o person) single {
			b, s := fresh(bodyparts), fresh(sports)
			return single{"I twisted my " + b + " playing " + s + " on Saturday, it's the size of a grapefruit.",
				"What did " + o.first + " injure playing " + s + "?", "twisted my " + b, "When did " + o.first + " get hurt playing " + s + "?"}
		},
		func(o person) single {
			v, p := fresh(vehicles), fresh(prices)
			return single{"I bought a second-hand " + v + " off a neighbour for " + p + ".",
				"How much did " + o.first + " pay for the " + v + "?", "for " + p, "When did " + o.first + " buy the " + v + "?"}
		},
		func(o person) single {
			p := fresh(plants)
			return single{"The " + p + " on the balcony finally flowered, after two years of nothing.",
				"Which plant on " + o.first + "'s balcony finally flowered?", "The " + p + " on the balcony", "When did the " + p + " flower?"}
		},
		func(o person) single {
			b, v := fresh(bands), fresh(venues)
			return single{"We saw " + b + " at the " + v + ", my ears are still ringing.",
				"Which band did " + o.first + " see at the " + v + "?", b, "When did " + o.first + " go to the gig at the " + v + "?"}
		},
	}
	slot := func() int { return rng.IntN(sessions) }
	for round := range 2 {
		for i, mk := range singles {
			who := (i + round) % 2
			o := people[who]
			s := mk(o)
			at := slot()
			plan(at, who, s.text)
			qs = append(qs, question{Kind: "single", Q: s.q, Expect: s.expect})
			if (i+round)%3 == 0 {
				qs = append(qs, question{Kind: "temporal", Q: s.when, Expect: s.expect, When: date(at)})
			}
			if (i+round)%4 == 1 {
				// An open question: the line answers it without sharing its words.
				qs = append(qs, question{Kind: "open", Q: "What has been going on in " + o.first + "'s life around " + date(at) + "?", Expect: s.expect, When: date(at)})
			}
		}
	}
	// multi-hop facts: two lines in different sessions, each half of the
	// answer.
	for i := range 8 {
		who := i % 2
		o, other := people[who], people[1-who]
		a := rng.IntN(sessions - 6)
		b := a + 3 + rng.IntN(sessions-a-3)
		switch i % 4 {
		case 0:
			rel, city, month := fresh(relatives), fresh(cities), fresh(months)
			plan(a, who, "My "+rel+" just moved to "+city+" for work, she's living above a bakery.")
			plan(b, who, "I'm flying out to visit my "+rel+" in "+month+", already booked the tickets.")
			qs = append(qs, question{Kind: "multi_hop", Q: "Which city is " + o.first + " flying to in " + month + "?",
				Evidence: []string{"moved to " + city, "visit my " + rel + " in " + month}})
		case 1:
			shop, street, item := fresh(shops), fresh(streets), fresh(items)
			plan(a, who, "An old friend from uni opened a "+shop+" on "+street+", you should pop in.")
			plan(b, who, "I finally went to my friend's "+shop+" and came home with "+item+".")
			qs = append(qs, question{Kind: "multi_hop", Q: "What did " + o.first + " buy at the shop on " + street + "?",
				Evidence: []string{"opened a " + shop + " on " + street, "came home with " + item}})
		case 2:
			race, month, res := fresh(races), fresh(months), fresh(results)
			plan(a, who, "I've entered the "+race+" in "+month+", training starts tomorrow.")
			plan(b, who, "Done it! Crossed the line in "+res+", my legs are jelly.")
			qs = append(qs, question{Kind: "multi_hop", Q: "What time did " + o.first + " finish the race in " + month + " in?",
				Evidence: []string{"entered the " + race + " in " + month, "line in " + res}})
		case 3:
			h := fresh(hobbies)
			plan(a, 1-who, "You should try "+h+", honestly it's the best thing for stress.")
			plan(b, who, "I took your advice and went along, it's much harder than it looks but I loved it.")
			qs = append(qs, question{Kind: "multi_hop", Q: "Which activity did " + o.first + " try on " + other.first + "'s advice?",
				Evidence: []string{"try " + h, "took your advice"}})
		}
	}
	// Filler: small talk that reuses the vocabulary of the facts, so that
	// a shared word alone does not find the answer.
	fillers := []func() string{
		func() string {
			return "My " + pick(relatives) + " keeps sending me videos of " + pick(animals) + "s, it's endless."
		},
		func() string {
			return "Have you ever been to " + pick(cities) + "? Everyone says it's lovely in " + pick(months) + "."
		},
		func() string { return "I keep meaning to try " + pick(hobbies) + " but I never find the time." },
		func() string { return "Work has been mad this week, I barely left my desk." },
		func() string { return "Did you watch the match on Sunday? What a finish." },
		func() string {
			return "The " + pick(shops) + " on " + pick(streets) + " closed down, such a shame."
		},
		func() string { return "I'm so tired, the neighbours had a party until three." },
		func() string { return "We should get dinner sometime, there's a new place doing " + pick(dishes) + "." },
		func() string { return "My " + pick(bodyparts) + " has been aching since the weekend, getting old." },
		func() string { return "It's been raining non-stop, the garden is a swamp." },
		func() string { return "Someone at work is selling a " + pick(vehicles) + ", thinking about it." },
		func() string { return "Ha, that's brilliant." },
		func() string { return "No way! Send me pictures." },
		func() string { return "Honestly same." },
		func() string { return "How's everything with you, anyway?" },
		func() string { return "Oh that reminds me, I saw your " + pick(relatives) + " at the shops." },
		func() string { return "I watched a documentary about " + pick(sights) + "s last night." },
		func() string { return "Are you still doing the " + pick(sports) + " on Tuesdays?" },
		func() string { return "My flat smells of " + pick(ingredients) + " and I don't know why." },
		func() string { return "Let's catch up properly next week, I have to run." },
		func() string { return "I've been reading a lot more, trying to stay off my phone." },
		func() string { return "The " + pick(plants) + " at my mum's is enormous now." },
		func() string { return "Was the " + pick(venues) + " always that cold?" },
		func() string { return "I had the weirdest dream about a " + pick(races) + "." },
	}
	for s := range sessions {
		// Spread the planned lines among filler, in order.
		var ls []line
		fill := perSession - len(planned[s])
		gaps := make([]int, len(planned[s])+1)
		for range fill {
			gaps[rng.IntN(len(gaps))]++
		}
		speaker := rng.IntN(2)
		for i := range gaps {
			for range gaps[i] {
				ls = append(ls, line{speaker, fillers[rng.IntN(len(fillers))]()})
				speaker = 1 - speaker
			}
			if i < len(planned[s]) {
				ls = append(ls, planned[s][i])
				speaker = 1 - planned[s][i].who
			}
		}
		sid := fmt.Sprintf("c%02d", s+1)
		at := start.AddDate(0, 0, 7*s)
		sess := campaignfile.Session{ID: sid, StartedAt: at}
		for i, l := range ls {
			p := people[l.who]
			sess.Entries = append(sess.Entries, campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1),
				SpeakerID: p.user, SpeakerName: p.first, Text: l.text, At: at.Add(time.Duration(20+25*i) * time.Second),
				DurationMS: 4000})
		}
		sess.EndedAt = at.Add(time.Duration(20+25*len(ls)+10) * time.Second)
		f.Sessions = append(f.Sessions, sess)
	}
	return f, qs
}

// genNames writes the name-dense campaign and its questions.
func genNames(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x51ed270b27c3f5a1))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	usedName := map[string]bool{}
	syl := []string{"ka", "ri", "mor", "tha", "vel", "dun", "sa", "lo", "qui", "bren", "ash", "or", "fen", "mi", "zar", "ul", "tes", "gor", "ny", "el"}
	name := func() string {
		for {
			n := pick(syl) + pick(syl)
			if rng.IntN(2) == 0 {
				n += pick(syl)
			}
			n = strings.ToUpper(n[:1]) + n[1:]
			if !usedName[n] && len(n) >= 5 {
				usedName[n] = true
				return n
			}
		}
	}
	f := &campaignfile.File{Campaign: "names-eval"}
	type ent struct{ id, name string }
	var npcs, places, things []ent
	occupations := []string{"smith", "scribe", "herbalist", "guard", "sailor", "merchant", "priest", "hunter", "weaver", "brewer"}
	for i := range 36 {
		e := ent{fmt.Sprintf("npc-%02d", i), name() + " " + name()}
		npcs = append(npcs, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "npc", Name: e.name,
			Aliases: []string{strings.Fields(e.name)[0]}, Attributes: map[string]any{"occupation": pick(occupations)}})
	}
	for i := range 14 {
		e := ent{fmt.Sprintf("place-%02d", i), name() + " " + pick([]string{"Keep", "Hollow", "Market", "Bridge", "Tower", "Mill"})}
		places = append(places, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "location", Name: e.name})
	}
	for i := range 10 {
		e := ent{fmt.Sprintf("item-%02d", i), "the " + name() + " " + pick([]string{"Crown", "Lantern", "Codex", "Chalice", "Dagger", "Map"})}
		things = append(things, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "item", Name: strings.TrimPrefix(e.name, "the ")})
	}
	for _, p := range []ent{{"pc-rook", "Rook"}, {"pc-ivy", "Ivy"}} {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name, Attributes: map[string]any{"player": "u-" + p.name}})
	}
	// Relations between NPCs, each asked about with everyday words rather
	// than the type's own.
	type relKind struct {
		typ   string
		words []string // how a question names the relative: "the sister of X"
	}
	kinds := []relKind{
		{"SIBLING_OF", []string{"sister", "brother", "sibling"}},
		{"MENTOR_OF", []string{"mentor", "teacher"}},
		{"EMPLOYS", []string{"employer", "boss"}},
		{"MARRIED_TO", []string{"spouse", "wife", "husband"}},
		{"RIVAL_OF", []string{"rival"}},
	}
	sess := func(i int) string { return fmt.Sprintf("n%d", i+1) }
	// Each NPC j (odd) relates to NPC j-1 (even): the odd one is the
	// relative the question asks about.
	type pair struct {
		named, rel ent
		kind       relKind
	}
	var pairs []pair
	for j := 1; j < len(npcs); j += 2 {
		k := kinds[(j/2)%len(kinds)]
		src, dst := npcs[j], npcs[j-1]
		f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: src.id, Target: dst.id, Type: k.typ,
			Provenance: campaignfile.Provenance{Session: sess(0)}})
		pairs = append(pairs, pair{named: dst, rel: src, kind: k})
	}
	for i, n := range npcs {
		f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: n.id, Target: places[i%len(places)].id,
			Type: "LOCATED_AT", Provenance: campaignfile.Provenance{Session: sess(0)}})
	}
	const sessions = 8
	start := time.Date(2026, 2, 1, 19, 0, 0, 0, time.UTC)
	type line struct {
		speaker ent // zero for the DM
		text    string
	}
	planned := make([][]line, sessions)
	var qs []question
	claims := []string{"is buried under the old well", "was sold to a smuggler for ninety crowns", "is a forgery made of painted tin",
		"sleeps in the vault behind a false wall", "was last seen on a barge heading north", "burns anyone who lies while holding it",
		"was cursed by a drowned witch", "needs three keys to open", "is hidden inside a hollow statue", "sings when the moon is full",
		"was pawned to pay a gambling debt", "belongs by right to the river folk"}
	usedClaim := 0
	claim := func() string { c := claims[usedClaim%len(claims)]; usedClaim++; return c }
	// single: an NPC states a claim about an item, in its own voice.
	for i := range 12 {
		n, it := npcs[(i*5)%len(npcs)], things[i%len(things)]
		c := claim()
		s := rng.IntN(sessions)
		planned[s] = append(planned[s], line{n, "Listen closely. " + it.name + " " + c + ", I'd stake my life on it."})
		qs = append(qs, question{Kind: "single", Q: "What did " + n.name + " claim about " + it.name + "?", Expect: c})
	}
	// two-hop: the relative of a named NPC speaks about an item without
	// naming the one the question names; other NPCs talk about the same
	// item.
	details := []string{"the guards change at the second bell", "the key is under the blue tile", "the ferryman takes bribes in salt",
		"the archive burned on purpose", "the mayor never sleeps at home", "the bridge toll pays for the cult",
		"the old mill hides a tunnel", "the bell tower is a lookout post", "the priestess owes the smugglers",
		"the lighthouse signals the raiders", "the brewery cellar floods at high tide", "the market scales are rigged",
		"the well water is poisoned", "the tower stairs are trapped", "the north gate is never locked", "the harbour chain is rusted through",
		"the tax rolls are forged", "the chapel bell was stolen"}
	for i, p := range pairs {
		d := details[i%len(details)]
		it := things[(i*3+1)%len(things)]
		s := rng.IntN(sessions)
		planned[s] = append(planned[s], line{p.rel, "About " + it.name + ": " + d + ". Nobody else will tell you that."})
		// a distractor: someone else's word on the same item
		o := npcs[(i*7+3)%len(npcs)]
		if o != p.rel && o != p.named {
			t := rng.IntN(sessions)
			planned[t] = append(planned[t], line{o, "About " + it.name + "? I know nothing, ask at " + choose(rng, places).name + "."})
		}
		w := pick(p.kind.words)
		q := "What did the " + w + " of " + p.named.name + " say about " + it.name + "?"
		if rng.IntN(2) == 0 {
			q = "What did " + strings.Fields(p.named.name)[0] + "'s " + w + " reveal about " + it.name + "?"
		}
		qs = append(qs, question{Kind: "two_hop", Q: q, Expect: d})
	}
	// The DM narrates scenes that name many entities.
	scenes := []func() string{
		func() string {
			return "You reach " + choose(rng, places).name + ". " + choose(rng, npcs).name + " and " + choose(rng, npcs).name + " are arguing by the door."
		},
		func() string {
			return choose(rng, npcs).name + " waves you over and points towards " + choose(rng, places).name + "."
		},
		func() string {
			return "Word is that " + choose(rng, things).name + " changed hands at " + choose(rng, places).name + " last night."
		},
		func() string {
			return choose(rng, npcs).name + " is buying drinks for " + choose(rng, npcs).name + "'s crew."
		},
		func() string { return "The road to " + choose(rng, places).name + " is muddy and slow." },
	}
	players := []ent{{"pc-rook", "Rook"}, {"pc-ivy", "Ivy"}}
	talk := []func() string{
		func() string { return "Can we trust " + strings.Fields(choose(rng, npcs).name)[0] + "?" },
		func() string { return "I search the room for anything about " + choose(rng, things).name + "." },
		func() string { return "Let's head to " + choose(rng, places).name + " before dark." },
		func() string { return "I buy a round and listen for gossip." },
	}
	shape := sessionShape{first: 20 * time.Second, step: 30 * time.Second, durMS: 5000, narratorID: "u-dm", narratorName: "DM"}
	for s := range sessions {
		var ls []line
		gaps := make([]int, len(planned[s])+1)
		for range 30 {
			gaps[rng.IntN(len(gaps))]++
		}
		for i := range gaps {
			for range gaps[i] {
				if rng.IntN(2) == 0 {
					ls = append(ls, line{text: scenes[rng.IntN(len(scenes))]()})
				} else {
					ls = append(ls, line{players[rng.IntN(len(players))], talk[rng.IntN(len(talk))]()})
				}
			}
			if i < len(planned[s]) {
				ls = append(ls, planned[s][i])
			}
		}
		sid := sess(s)
		at := start.AddDate(0, 0, 7*s)
		us := make([]spoken, len(ls))
		for i, l := range ls {
			us[i] = spoken{l.speaker.id, l.speaker.name, l.text}
		}
		f.Sessions = append(f.Sessions, shape.session(sid, at, us))
	}
	return f, qs
}

// choose returns a random element of xs.
func choose[T any](rng *rand.Rand, xs []T) T { return xs[rng.IntN(len(xs))] }

// spoken is one line of a generated session: its speaker's entity id and
// name (both empty for the narrator) and what was said.
type spoken struct{ id, name, text string }

// sessionShape is how a generated corpus lays out its sessions' lines: the
// i-th line is said first+i*step after the session starts and lasts durMS;
// a line with no speaker is the narrator's, who speaks as user narratorID.
type sessionShape struct {
	first, step              time.Duration
	durMS                    int
	narratorID, narratorName string
}

// session builds session sid, starting at at, from its lines in order: the
// narrator's, a player character's ("pc-" entities, spoken by user
// "u-"+name) or an NPC's (any other entity). It ends 10 s after the last
// line's slot.
func (p sessionShape) session(sid string, at time.Time, ls []spoken) campaignfile.Session {
	se := campaignfile.Session{ID: sid, StartedAt: at}
	for i, x := range ls {
		e := campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1), Text: x.text,
			At: at.Add(p.first + time.Duration(i)*p.step), DurationMS: p.durMS}
		switch {
		case x.id == "":
			e.SpeakerID, e.SpeakerName = p.narratorID, p.narratorName
		case strings.HasPrefix(x.id, "pc-"):
			e.SpeakerID, e.SpeakerName = "u-"+x.name, x.name
		default:
			e.SpeakerID, e.SpeakerName, e.NPCID = x.id, x.name, x.id
		}
		se.Entries = append(se.Entries, e)
	}
	se.EndedAt = at.Add(p.first + time.Duration(len(ls))*p.step + 10*time.Second)
	return se
}
