package retrieve

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Third round of held-out corpora (issue 27, rank3): written before any
// change to the ranking they measure, in the three shapes that still lose
// to a part on data nobody here sees. Their first scores are in the commit
// that added them.
//
//   - loco: a LoCoMo-like conversation. Two friends chat over 18 sessions
//     at irregular dates; every line is one of theirs, so their names say
//     nothing. Questions paraphrase the line (other words for the thing
//     said), ask when something happened, or need two turns of different
//     sessions (a plan and how it turned out), or the reply to a question
//     the other asked.
//   - feud: a multi-hop campaign in another style than heist. Kinship and
//     service are stated in the GM's narration ("Holt, Brenna's father,
//     ...") or by the relative in dialogue ("Brenna? She's my daughter."),
//     or only as facts. The answer is said by the relative in another
//     session and refers to the object by another word than the question's
//     (the question asks about "the tithe", the answer says "the coins"),
//     while the named NPC and others talk about the object by its name.
//   - saga: real-table style. Players speak as themselves (the speaker is
//     the player, not the character), with dice talk, rules talk and
//     crosstalk; the DM resolves in short lines or inside long monologues
//     (1.5–5k characters); each session opens with a "previously on"
//     recap told in the note-taker's own style (third person, past tense),
//     and a long ritual narration names everyone. Queries are event
//     descriptions written as a note-taker would: third person, past
//     tense, the character's name, none of the table's words quoted.

// genLoco writes the LoCoMo-like conversation.
func genLoco(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x3c6ef372fe94f82b))
	type person struct{ id, user, first, full string }
	people := []person{{"p-ava", "u-ava", "Ava", "Ava Brennan"}, {"p-jun", "u-jun", "Jun", "Jun Park"}}
	f := &campaignfile.File{Campaign: "loco-eval"}
	for _, p := range people {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.full,
			Aliases: []string{p.first}, Attributes: map[string]any{"player": p.user}})
	}
	const sessions, perSession = 18, 30
	type line struct {
		who  int
		text string
	}
	planned := make([][]line, sessions)
	plan := func(s, who int, text string) { planned[s] = append(planned[s], line{who, text}) }
	var qs []question
	// Single lines: session, speaker, line, evidence, question, kind.
	type one struct {
		s, who         int
		text, ev, q, k string
	}
	const ava, jun = 0, 1
	singles := []one{
		{1, ava, "Guess what, we finally brought home a rescue greyhound last weekend, she's called Pepper.", "she's called Pepper",
			"What name did Ava give the dog she adopted?", "paraphrase"},
		{2, jun, "I signed up for evening classes in glassblowing at the community college.", "glassblowing",
			"What craft did Jun start studying at night?", "paraphrase"},
		{3, ava, "My sister Keira is moving to Vancouver for a nursing job.", "Vancouver for a nursing job",
			"Where is Ava's sister relocating for work?", "paraphrase"},
		{4, jun, "The landlord finally fixed the boiler, only took him six weeks.", "fixed the boiler",
			"What did Jun's landlord eventually repair?", "paraphrase"},
		{5, ava, "We went camping at Loch Tay, the midges nearly ate us alive.", "Loch Tay",
			"Where did Ava go on the outdoor trip where the bugs were a problem?", "paraphrase"},
		{6, jun, "My grandmother turned ninety, we threw her a party in the garden with a ceilidh band.", "ceilidh band",
			"How did Jun's family celebrate the old lady's birthday?", "paraphrase"},
		{7, ava, "I've started volunteering at the food bank on Thursdays.", "food bank on Thursdays",
			"What charity work does Ava do every week?", "paraphrase"},
		{8, jun, "I broke my collarbone falling off the climbing wall.", "broke my collarbone",
			"What injury did Jun get at the gym?", "paraphrase"},
		{9, ava, "Our book club picked that novel about the lighthouse keeper, I hated it.", "lighthouse keeper",
			"Which story did Ava's reading group choose that she disliked?", "paraphrase"},
		{10, ava, "I got the promotion! I'm head of the paediatric ward now.", "head of the paediatric ward",
			"What new position did Ava get at the hospital?", "paraphrase"},
		{11, jun, "Sold my old motorbike to a student for nine hundred pounds.", "nine hundred pounds",
			"How much money did Jun get for his bike?", "single"},
		{12, ava, "Mum's been diagnosed with diabetes, so we're all learning to cook without sugar.", "diagnosed with diabetes",
			"What health news did Ava's mother receive?", "paraphrase"},
		{13, jun, "I'm learning to play the banjo, the neighbours are thrilled.", "play the banjo",
			"What instrument is Jun practising?", "paraphrase"},
		{14, ava, "Pepper ate an entire birthday cake off the counter yesterday.", "entire birthday cake",
			"What did Ava's dog steal from the kitchen?", "paraphrase"},
		{15, jun, "I painted the spare room a dark green, it looks like a forest now.", "dark green",
			"What colour did Jun choose for the extra bedroom?", "paraphrase"},
		{16, ava, "We adopted a second dog, a scruffy terrier called Moss.", "terrier called Moss",
			"What is the name of Ava's second pet?", "single"},
		{3, jun, "Moved into the new flat by the canal this weekend, boxes everywhere.", "new flat by the canal",
			"When did Jun change homes?", "temporal"},
		{6, ava, "Passed my driving test on the third attempt, finally!", "Passed my driving test",
			"When did Ava get her licence?", "temporal"},
		{9, jun, "Proposed to Mina at the top of Arthur's Seat, she said yes!", "Proposed to Mina",
			"When did Jun get engaged?", "temporal"},
		{12, ava, "Had my wisdom teeth out this morning, I look like a hamster.", "wisdom teeth out",
			"When did Ava have dental surgery?", "temporal"},
		{14, jun, "I handed in my notice at the bank on Friday and I feel amazing.", "handed in my notice",
			"When did Jun quit his job?", "temporal"},
		{17, ava, "Ran my first half marathon on Sunday, two hours and eleven minutes!", "two hours and eleven minutes",
			"How long did Ava take to finish her first long race?", "paraphrase"},
	}
	for _, x := range singles {
		plan(x.s, x.who, x.text)
		qs = append(qs, question{Kind: x.k, Q: x.q, Expect: x.ev})
	}
	// Replies: the other asks, the answer is in the reply.
	type reply struct {
		s, who       int // who replies
		ask, ans, ev string
		q            string
	}
	replies := []reply{
		{4, jun, "How did the audition for the orchestra go?", "They want me as second viola, rehearsals start in spring.", "second viola",
			"What part was Jun offered after trying out?"},
		{8, ava, "What did the vet say about Pepper's paw?", "Just a sprain, she has to wear a little boot for a fortnight.", "little boot for a fortnight",
			"How was the greyhound's foot treated?"},
		{11, ava, "So what did you end up naming the boat?", "We went with Selkie, Keira painted the letters.", "went with Selkie",
			"What is Ava's boat called?"},
		{15, jun, "Did the bank give you a leaving present?", "A fountain pen and a card signed by the whole floor.", "fountain pen",
			"What gift did Jun receive when he left his employer?"},
	}
	for _, x := range replies {
		planned[x.s] = append(planned[x.s], line{1 - x.who, x.ask}, line{x.who, x.ans})
		qs = append(qs, question{Kind: "question", Q: x.q, Expect: x.ev})
	}
	// Two turns in different sessions: a plan, then how it went.
	type two struct {
		s1, s2, who int
		l1, l2      string
		ev1, ev2, q string
	}
	twos := []two{
		{1, 9, jun, "I'm going to try growing tomatoes on the balcony this summer.", "The balcony harvest was a disaster, pigeons got every single one.",
			"growing tomatoes on the balcony", "pigeons got every single one", "How did Jun's plan for home-grown vegetables turn out?"},
		{2, 12, ava, "Applying for a master's in public health, fingers crossed.", "I got into Glasgow! The course starts in January.",
			"master's in public health", "I got into Glasgow", "Which university accepted Ava, and for what degree?"},
		{5, 14, ava, "My brother Rory is opening a café in Leith.", "Rory's place finally opened, the cinnamon buns sell out by ten.",
			"opening a café in Leith", "cinnamon buns sell out by ten", "How is the business Ava's brother started doing?"},
		{6, 15, jun, "Mina and I are thinking about getting a cat.", "Meet Noodle, the kitten we picked up from the shelter.",
			"getting a cat", "Meet Noodle", "Did Jun and his fiancée end up with a pet, and what is it called?"},
		{0, 17, ava, "Training for the half marathon is killing my knees.", "Crossed the line at last, my knees survived.",
			"Training for the half marathon", "my knees survived", "Did Ava's race preparation pay off?"},
		{7, 16, jun, "We booked flights to Hanoi for October, my first time in Vietnam.", "Vietnam was incredible, the street food alone was worth the flight.",
			"flights to Hanoi", "street food alone was worth", "Where did Jun travel in the autumn and how was it?"},
	}
	for _, x := range twos {
		plan(x.s1, x.who, x.l1)
		plan(x.s2, x.who, x.l2)
		qs = append(qs, question{Kind: "multi_hop", Q: x.q, Evidence: []string{x.ev1, x.ev2}})
	}
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	pets := []string{"dog", "cat", "puppy", "kitten"}
	jobs := []string{"job", "boss", "shift", "team", "office", "manager"}
	trips := []string{"trip", "holiday", "weekend away", "flight", "train"}
	homes := []string{"flat", "kitchen", "garden", "balcony", "spare room", "landlord"}
	family := []string{"sister", "brother", "mum", "dad", "gran", "cousin"}
	fillers := []func() string{
		func() string { return "Hey! Long time, how have you been?" },
		func() string { return "Ha, that's brilliant." },
		func() string { return "No way! Send me pictures." },
		func() string { return "Honestly same." },
		func() string { return "Oh nice, tell me more." },
		func() string { return "That sounds exhausting, you should take a break." },
		func() string { return "My " + pick(family) + " says hi, by the way." },
		func() string { return "Work has been mad, my " + pick(jobs) + " keeps changing everything." },
		func() string { return "Did you see the " + pick(pets) + " video I sent? I can't stop watching it." },
		func() string { return "We should plan a " + pick(trips) + " together at some point." },
		func() string { return "The " + pick(homes) + " is a mess again, I need a whole day to sort it out." },
		func() string { return "I'm so tired, I slept badly all week." },
		func() string { return "How's your " + pick(family) + " doing?" },
		func() string { return "Let's talk properly at the weekend, I have to run." },
		func() string { return "I tried a new recipe last night, it was edible, just about." },
		func() string { return "The weather has been awful, rain every single day." },
		func() string { return "Any plans for the " + pick(trips) + "?" },
		func() string { return "I've been reading a lot more, trying to stay off my phone." },
		func() string { return "Running late, the " + pick(trips) + " was delayed again." },
		func() string {
			return "That reminds me, my " + pick(family) + " wants to get a " + pick(pets) + " too."
		},
	}
	start := time.Date(2024, 5, 8, 19, 0, 0, 0, time.UTC)
	at := start
	for s := range sessions {
		var ls []line
		gaps := make([]int, len(planned[s])+1)
		for range perSession - len(planned[s]) {
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
		sid := fmt.Sprintf("l%02d", s+1)
		sess := campaignfile.Session{ID: sid, StartedAt: at}
		for i, l := range ls {
			p := people[l.who]
			sess.Entries = append(sess.Entries, campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1),
				SpeakerID: p.user, SpeakerName: p.first, Text: l.text, At: at.Add(time.Duration(15+20*i) * time.Second),
				DurationMS: 3000})
		}
		sess.EndedAt = at.Add(time.Duration(15+20*len(ls)+10) * time.Second)
		f.Sessions = append(f.Sessions, sess)
		at = at.AddDate(0, 0, 3+rng.IntN(18))
	}
	return f, qs
}

// genFeud writes the multi-hop campaign in narration-and-dialogue style.
func genFeud(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0xa54ff53a5f1d36f1))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	f := &campaignfile.File{Campaign: "feud-eval"}
	type ent struct{ id, name, first string }
	first := []string{"Brenna", "Holt", "Aldric", "Sefa", "Morwen", "Tobin", "Isolde", "Garrick", "Ysolt", "Perrin",
		"Delphine", "Osric", "Rhiannon", "Cade", "Liesl", "Varro", "Esme", "Halvard", "Tamsin", "Corbin",
		"Wilhelmina", "Ansel", "Greta", "Lucan"}
	last := []string{"Varga", "Ashby", "Crane", "Dunmore", "Fairweather", "Grise", "Hollins", "Kettering", "Lark", "Mordaunt", "Pike", "Rook"}
	var npcs []ent
	for i, fn := range first {
		e := ent{fmt.Sprintf("fnpc-%02d", i), fn + " " + last[(i*5)%len(last)], fn}
		npcs = append(npcs, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "npc", Name: e.name, Aliases: []string{fn}})
	}
	places := []string{"Ferrow Mill", "the Gull Island chapel", "Kestrel Bridge", "the tannery", "the Duke's granary", "Saltmarsh Lane"}
	for i, p := range places {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("floc-%d", i), Type: "location", Name: strings.TrimPrefix(p, "the ")})
	}
	players := []ent{{"pc-ash", "Ash", "Ash"}, {"pc-wick", "Wick", "Wick"}, {"pc-rue", "Rue", "Rue"}}
	for _, p := range players {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name, Attributes: map[string]any{"player": "u-" + p.name}})
	}
	// Relations: the question's word for the relative; how the GM narrates
	// it (%[1]s the named, %[2]s the relative's full name); how the
	// relative says it (%[1]s the named).
	type rel struct {
		typ, word, narrate, says string
	}
	rels := []rel{
		{"PARENT_OF", "father", "%[2]s limps in from the rain; everyone in the valley knows he raised %[1]s alone after the flood.", "%[1]s? She's my daughter, stubborn as her mother was."},
		{"EMPLOYS", "employer", "%[2]s counts coins at the back table; %[1]s has drawn his wages for six winters now.", "%[1]s works for me, and I pay on time, whatever they say."},
		{"MENTOR_OF", "teacher", "Years ago %[2]s took %[1]s in as an apprentice and taught the trade by hand.", "I taught %[1]s everything, the good habits and the bad."},
		{"SIBLING_OF", "sister", "%[2]s and %[1]s share their dead mother's grey eyes and nothing else.", "%[1]s is my brother, more's the pity."},
		{"SWORN_TO", "liege", "%[1]s knelt to %[2]s on the bridge and swore the old oath.", "%[1]s swore to me on Kestrel Bridge; I hold that oath."},
		{"UNCLE_OF", "uncle", "%[2]s, uncle to %[1]s on the mother's side, keeps to himself.", "My nephew %[1]s never visits, but I look out for him."},
	}
	// Objects: the question's word, the answer's word.
	type obj struct{ name, other string }
	objs := []obj{{"the tithe", "the coins"}, {"the stolen mare", "the grey horse"}, {"the baron's letter", "that sealed paper"},
		{"the missing map", "the vellum"}, {"the poisoned wine", "that bottle"}, {"the saint's relic", "the finger bone"},
		{"the mill ledger", "the account book"}, {"the forged deed", "the false title"}, {"the ransom", "the silver"},
		{"the smuggled salt", "the sacks"}, {"the witch's doll", "the straw figure"}, {"the bell clapper", "the iron tongue"}}
	whereabouts := []string{"rowed out to the chapel on Gull Island before dawn", "went to a drover heading south", "sits in the hollow of the boundary oak",
		"was buried under the third flagstone of the tannery", "got traded for passage on a salt barge", "lies at the bottom of the mill race",
		"is sewn into a priest's cassock", "went up in smoke in the kiln", "is kept behind the altar rail", "was handed to a girl in a blue shawl",
		"went into the well behind the granary", "is wrapped in oilcloth under the bridge"}
	const sessions = 8
	type line struct {
		speaker ent
		text    string
	}
	planned := make([][]line, sessions)
	var qs []question
	for j := 0; j+1 < len(npcs); j += 2 {
		named, relv := npcs[j], npcs[j+1]
		r := rels[(j/2)%len(rels)]
		o := objs[(j/2)%len(objs)]
		where := whereabouts[(j/2)%len(whereabouts)]
		sa := 2 + rng.IntN(sessions-2)
		answer := fmt.Sprintf("You want to know about %s? Fine. It %s, and that's all I'll say.", o.other, where)
		planned[sa] = append(planned[sa], line{relv, answer})
		// The named one and a stranger talk about the object by its name.
		sn := rng.IntN(sessions)
		planned[sn] = append(planned[sn], line{named, fmt.Sprintf("I swear on my name I never laid a finger on %s.", o.name)})
		stranger := npcs[(j*7+5)%len(npcs)]
		if stranger != named && stranger != relv {
			s := rng.IntN(sessions)
			planned[s] = append(planned[s], line{stranger, fmt.Sprintf("Everyone's asking about %s. Ask at %s, not here.", o.name, pick(places))})
		}
		for range 2 {
			s := rng.IntN(sessions)
			planned[s] = append(planned[s], line{named, pick([]string{"Meet me at ", "I'll be at ", "Stay away from "}) + pick(places) + "."})
		}
		var q string
		switch rng.IntN(3) {
		case 0:
			q = fmt.Sprintf("What became of %s, according to %s's %s?", o.name, named.first, r.word)
		case 1:
			q = fmt.Sprintf("What does the %s of %s say happened to %s?", r.word, named.name, o.name)
		default:
			q = fmt.Sprintf("Where did %s end up, if %s's %s is to be believed?", o.name, named.first, r.word)
		}
		switch (j / 2) % 3 {
		case 0: // a fact only
			f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: relv.id, Target: named.id, Type: r.typ,
				Provenance: campaignfile.Provenance{Session: "f1"}})
			qs = append(qs, question{Kind: "two_hop", Q: q, Expect: where})
		case 1: // narrated by the GM
			si := rng.IntN(sa)
			intro := fmt.Sprintf(r.narrate, named.first, relv.name)
			planned[si] = append(planned[si], line{text: intro})
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{intro, where}})
		default: // said by the relative
			si := rng.IntN(sa)
			intro := fmt.Sprintf(r.says, named.first)
			planned[si] = append(planned[si], line{relv, intro})
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{intro, where}})
		}
	}
	scenes := []func() string{
		func() string {
			return fmt.Sprintf("%s and %s trade insults outside %s until the watch moves them on.", choose(rng, npcs).name, choose(rng, npcs).name, pick(places))
		},
		func() string {
			return fmt.Sprintf("Smoke hangs low over %s, and the dogs will not stop barking.", pick(places))
		},
		func() string {
			return fmt.Sprintf("%s watches you from across the square and says nothing.", choose(rng, npcs).first)
		},
		func() string {
			return fmt.Sprintf("Word is that %s was seen near %s.", choose(rng, objs).name, pick(places))
		},
	}
	talk := []func() string{
		func() string { return "Do we believe " + choose(rng, npcs).first + "?" },
		func() string { return "I ask around about " + choose(rng, objs).name + "." },
		func() string { return "We should watch " + pick(places) + " tonight." },
		func() string { return "I roll insight." },
		func() string { return "Fourteen." },
		func() string { return "Nope, not going in there." },
	}
	start := time.Date(2026, 1, 10, 19, 0, 0, 0, time.UTC)
	shape := sessionShape{first: 20 * time.Second, step: 30 * time.Second, durMS: 4000, narratorID: "u-gm", narratorName: "GM"}
	for s := range sessions {
		var ls []line
		gaps := make([]int, len(planned[s])+1)
		for range 26 {
			gaps[rng.IntN(len(gaps))]++
		}
		for i := range gaps {
			for range gaps[i] {
				if rng.IntN(2) == 0 {
					ls = append(ls, line{text: scenes[rng.IntN(len(scenes))]()})
				} else {
					ls = append(ls, line{choose(rng, players), talk[rng.IntN(len(talk))]()})
				}
			}
			if i < len(planned[s]) {
				ls = append(ls, planned[s][i])
			}
		}
		sid := fmt.Sprintf("f%d", s+1)
		at := start.AddDate(0, 0, 14*s)
		us := make([]spoken, len(ls))
		for i, x := range ls {
			us[i] = spoken{x.speaker.id, x.speaker.name, x.text}
		}
		f.Sessions = append(f.Sessions, shape.session(sid, at, us))
	}
	return f, qs
}

// genSaga writes the real-table-style transcript with note-taker event
// descriptions as queries.
func genSaga(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x510e527fade682d1))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	f := &campaignfile.File{Campaign: "saga-eval"}
	// Players speak; characters are named by the DM and the notes.
	type pc struct{ player, char string }
	pcs := []pc{{"Travis", "Grog"}, {"Laura", "Vex"}, {"Sam", "Scanlan"}, {"Marisha", "Keyleth"}, {"Taliesin", "Percy"}}
	for _, p := range pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: "pc-" + strings.ToLower(p.char), Type: "player", Name: p.char,
			Attributes: map[string]any{"player": "u-" + strings.ToLower(p.player)}})
	}
	places := []string{"the Sunken Chapel", "Greyhollow Market", "the Ashen Tower", "Thornwick Docks", "the Copperbell Inn", "Vellum Pass"}
	for i, p := range places {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("sloc-%d", i), Type: "location", Name: strings.TrimPrefix(p, "the ")})
	}
	mods := []string{"rusted", "silver", "bone", "obsidian", "painted", "cracked", "gilded", "iron", "glass", "wooden", "velvet", "brass"}
	heads := []string{"lantern", "music box", "reliquary", "hourglass", "mask", "idol", "flute", "censer", "lockbox", "crown", "bell", "totem"}
	// Actions: the player's words (%s the object), the DM's resolution
	// (%[1]s the character, %[2]s the object), the note (%[1]s the
	// character, %[2]s the object's head noun, %[3]s the place).
	type act struct{ declare, resolve, note string }
	acts := []act{
		{"can I just, like, grab the %s and yank it?", "%[1]s, you heave, and the %[2]s tears loose from its chain in a shower of rust and pigeon feathers.",
			"%[1]s ripped the %[2]s off its chain at %[3]s"},
		{"I wanna lick the %s. Yes. Lick it.", "Your tongue goes numb, %[1]s; the %[2]s tastes of copper and old prayers, and a voice whispers to you in Infernal.",
			"%[1]s put his tongue on the %[2]s at %[3]s and heard a devil whispering"},
		{"I cast mending on the %s", "The hairline crack in the %[2]s knits shut with a faint chime, and %[1]s feels a warmth in the fingertips.",
			"%[1]s magically fixed the broken %[2]s at %[3]s"},
		{"I'm chucking the %s in the fire", "The %[2]s hisses in the coals, %[1]s, and a thin green smoke curls up the chimney and spells a name.",
			"%[1]s burned the %[2]s in a hearth at %[3]s"},
		{"I pocket the %s when nobody's looking", "Sleight of hand... nobody sees the %[2]s vanish into %[1]s's coat, not even the priest.",
			"%[1]s secretly stole the %[2]s at %[3]s"},
		{"I give the %s to the kid", "The girl's eyes go wide; she clutches the %[2]s to her chest, bows to %[1]s, and bolts into the crowd.",
			"%[1]s handed the %[2]s over to a child at %[3]s"},
		{"I try to open the %s with my thieves' tools", "Click. The lid of the %[2]s swings up, and inside, %[1]s, is a folded note sealed with black wax.",
			"%[1]s picked open the %[2]s at %[3]s and found a sealed note"},
		{"I smash the %s with my hammer", "The %[2]s bursts into a hundred shards under %[1]s's blow and a cold wind howls through the room.",
			"%[1]s destroyed the %[2]s with a hammer at %[3]s"},
		{"I offer the guy twenty gold for the %s", "The merchant spits in his palm, shakes on it, and %[1]s walks away with the %[2]s for twenty-two gold.",
			"%[1]s bought the %[2]s from a trader at %[3]s"},
		{"I bury the %s under that tree", "You dig with bare hands, %[1]s, and the %[2]s disappears among the roots of the old yew.",
			"%[1]s buried the %[2]s beneath a tree at %[3]s"},
	}
	narration := []string{
		"The rain has not stopped for three days, and the gutters run brown with it.",
		"Somewhere below, a cart wheel squeals, and a man shouts at his mule in a language none of you speak.",
		"The torches gutter in a draught that seems to come from nowhere and everywhere at once.",
		"Moss grows thick on the old stones here, and water drips in a slow, patient rhythm.",
		"A bell tolls far off, once, twice, and then the silence comes back heavier than before.",
		"The crowd parts around you like water around a stone, and nobody meets your eyes.",
		"Dust hangs in the slanted light, turning slowly, as if the air itself were thinking.",
		"Smoke from a hundred chimneys smears the sky the colour of a bruise.",
		"Gulls wheel over the rooftops, screaming at each other over scraps of fish.",
		"The wind carries the smell of tar, wet rope and something sweeter, like rotten fruit.",
		"An old woman sweeps the same step over and over, humming a tune with no end.",
		"Your boots sink a little into the mud with every step, and it sucks at your heels.",
	}
	crosstalk := []string{"lol", "wait what's my AC again", "can someone pass the chips", "oh no", "hahaha", "I love this",
		"hold on, bathroom", "is this the same guy from before?", "that's so creepy", "okay okay okay", "I'm scared",
		"did he just wink at me?", "nope", "who has the map?", "we should go", "I'm taking notes, hold on"}
	rules := []string{"does flanking give advantage in this edition?", "is it disadvantage if it's dim light?",
		"wait, can I use my bonus action for that?", "do I add proficiency to this?", "how far is the movement, thirty feet?",
		"is that a concentration spell?", "can I ready an action?", "does that provoke an opportunity attack?"}
	dice := []string{"Seventeen.", "Natural one. Oh no.", "That's a 23 to hit.", "Eight damage, piercing.", "Twelve?", "Dirty twenty!",
		"Nine, plus four, thirteen.", "Does a 15 hit?", "Four. I rolled a four.", "Nat twenty!"}
	checks := []string{"Roll athletics.", "Give me a sleight of hand check.", "Make a dexterity check.", "Roll me a perception.",
		"Arcana check, please.", "Persuasion, go ahead."}
	longNarr := func(minChars int) string {
		var b strings.Builder
		for b.Len() < minChars {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			b.WriteString(pick(narration))
		}
		return b.String()
	}
	const sessions = 8
	type line struct{ who, text string } // who: a player, or "DM"
	type event struct {
		pc      pc
		note    string
		resolve string
	}
	var qs []question
	used := map[string]bool{}
	var sess [][]line
	var byS [][]event
	for s := range sessions {
		var ls []line
		// The recap: last session's events in the notes' own words, inside
		// a long monologue.
		if s > 0 {
			var b strings.Builder
			b.WriteString("Previously on our game: ")
			for _, e := range byS[s-1] {
				b.WriteString(pick(narration) + " ")
				b.WriteString(strings.ToUpper(e.note[:1]) + e.note[1:] + ". ")
			}
			b.WriteString(longNarr(600))
			ls = append(ls, line{"DM", b.String()})
		}
		var evs []event
		for range 7 {
			p := pcs[rng.IntN(len(pcs))]
			var mod, head string
			for {
				mod, head = pick(mods), pick(heads)
				if !used[mod+" "+head] {
					used[mod+" "+head] = true
					break
				}
			}
			obj := mod + " " + head
			a := acts[rng.IntN(len(acts))]
			place := pick(places)
			resolve := fmt.Sprintf(a.resolve, p.char, obj)
			// The note names the object by its head noun, often with another
			// adjective than the table's, and the place where it happened.
			note := fmt.Sprintf(a.note, p.char, head, strings.TrimPrefix(place, "the "))
			evs = append(evs, event{p, note, resolve})
			// Chatter before.
			for range 1 + rng.IntN(4) {
				switch rng.IntN(3) {
				case 0:
					ls = append(ls, line{choose(rng, pcs).player, pick(crosstalk)})
				case 1:
					ls = append(ls, line{choose(rng, pcs).player, pick(rules)})
				default:
					ls = append(ls, line{"DM", longNarr(80)})
				}
			}
			ls = append(ls, line{"DM", fmt.Sprintf("You are in %s. %s", place, pick(narration))})
			ls = append(ls, line{p.player, "Okay. " + fmt.Sprintf(a.declare, obj)})
			if rng.IntN(2) == 0 {
				ls = append(ls, line{"DM", pick(checks)}, line{p.player, pick(dice)})
				ls = append(ls, line{choose(rng, pcs).player, pick(append(crosstalk, rules...))})
			}
			if rng.IntN(2) == 0 {
				ls = append(ls, line{"DM", resolve})
			} else {
				// Inside a long monologue.
				ls = append(ls, line{"DM", longNarr(700+rng.IntN(1500)) + " " + resolve + " " + longNarr(700+rng.IntN(1500))})
			}
			ls = append(ls, line{choose(rng, pcs).player, pick(crosstalk)})
			ls = append(ls, line{choose(rng, pcs).player, pick(dice)})
			q := note + "."
			kind := "event"
			if rng.IntN(4) == 0 {
				q = "When was it that " + note + "?"
				kind = "question"
			}
			// The event is found where the table played it: the
			// declaration or the resolution, both of which name the object
			// whole (the notes and the recaps name it by its head noun).
			qs = append(qs, question{Kind: kind, Q: strings.ToUpper(q[:1]) + q[1:], Expect: obj})
		}
		// A long ritual narration that names everyone and everywhere.
		var b strings.Builder
		b.WriteString("The ritual begins. ")
		for _, p := range pcs {
			b.WriteString(p.char + ", " + pick(narration) + " ")
		}
		for _, pl := range places {
			b.WriteString("The light reaches " + pl + ". " + pick(narration) + " ")
		}
		b.WriteString(longNarr(1500))
		ins := rng.IntN(len(ls) + 1)
		ls = append(ls[:ins], append([]line{{"DM", b.String()}}, ls[ins:]...)...)
		byS = append(byS, evs)
		sess = append(sess, ls)
	}
	start := time.Date(2026, 2, 5, 18, 0, 0, 0, time.UTC)
	for s, ls := range sess {
		sid := fmt.Sprintf("s%d", s+1)
		at := start.AddDate(0, 0, 7*s)
		se := campaignfile.Session{ID: sid, StartedAt: at}
		t := at
		for i, x := range ls {
			e := campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1), Text: x.text, At: t,
				DurationMS: 1000 + 60*len(x.text)}
			if x.who == "DM" {
				e.SpeakerID, e.SpeakerName = "u-dm", "DM"
			} else {
				e.SpeakerID, e.SpeakerName = "u-"+strings.ToLower(x.who), x.who
			}
			se.Entries = append(se.Entries, e)
			t = t.Add(time.Duration(e.DurationMS)*time.Millisecond + 2*time.Second)
		}
		se.EndedAt = t.Add(10 * time.Second)
		f.Sessions = append(f.Sessions, se)
	}
	return f, qs
}
