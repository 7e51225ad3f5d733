package retrieve

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Second round of held-out corpora (issue 27), written after keep, burg
// and heist had been looked at, and scored before the fusion they measure
// was changed (the first scores are in the commit that added them and in
// the README). tide is English, hafen is the same campaign shape in
// German; neither is tuned on.
//
// A trading campaign in a harbour town: a player offers, sells, swaps or
// gives an object to an NPC, and the DM says what the player gets back
// (the answer: "hands you a letter from the governor"). The shapes:
//
//   - the answer inside a long DM turn (1.5 to 5 thousand characters of
//     harbour narration) for half of the events, short interjections
//     around it;
//   - every session but the first opens with a "previously on" recap
//     that restates the last session's events (and two older ones) in the
//     words of the questions (who, what, to whom, where) but without what
//     came back, and players echo an event in the same words ("Wait, Anwen
//     offered the brass chest to Captain Hollis?"): the restatements share
//     more of a question's words than the answer does, and do not answer;
//   - each event is asked as a question ("What did Anwen get from Captain
//     Hollis for the brass chest?"), as a statement, paraphrased (the
//     object by a synonym of its head noun, the NPC by a role, the place
//     by a description) and as an event (what happened with the object at
//     the place: the declaration and the answer);
//   - multi-hop: what a player got turns up sessions later ("Opened at
//     last, the letter from the governor turns out to be …"), and the
//     question names only the player and the object given away.

// tradeLang are the words of one language of the tide/hafen corpora.
type tradeLang struct {
	campaign, language string
	pcs                []string
	// npcs: entity name, as the table calls them, a paraphrase (as the
	// object of "from"/"von").
	npcs [][3]string
	// places: entity name, as "at X" ("an den Möwenstufen"), paraphrased.
	places [][3]string
	// mods and heads make the objects; heads hold [head, synonym].
	mods  []string
	heads [][2]string
	// obj is the object as a direct object, objDat after "with"/"mit".
	obj, objDat func(mod, head string) string
	// acts: declaration (%[1]s object, %[2]s NPC), past participle or
	// past tense.
	acts [][2]string
	// rewards: [indefinite, definite]; from: whose it is.
	rewards   [][2]string
	from      []string
	reveals   []string
	narration []string
	interject []string
	outcome   func(npc, obj, reward string) string
	recapLine func(pc, past, obj, npc, place string) string
	echo      func(pc, past, obj, npc string) string
	reveal    func(rewardDef, what string) string
	revealEv  func(what string) string
	recapOpen string
	scene     func(place string) string
	qQuestion func(pc, npc, obj string) string
	qState    func(pc, past, obj, npc, place string) string
	qPara     func(pc, syn, npcPara, placePara string) string
	qEvent    func(objDat, place string) string
	qMulti    func(pc, obj string) string
	chatter   []func(obj, head string) string
}

var tideEnglish = tradeLang{
	campaign: "tide-eval", language: "en",
	pcs: []string{"Anwen", "Roderic", "Sefa", "Tamsin", "Halvard"},
	npcs: [][3]string{{"Hollis", "Captain Hollis", "the ship's master"}, {"Marguerite", "Marguerite the customs officer", "the tax collector"},
		{"Bosk", "old Bosk", "the receiver of stolen goods"}, {"Ysolde", "Mother Ysolde", "the prioress"},
		{"Pell", "Pell the lamplighter", "the lamp man"}, {"Orla", "Orla the net-mender", "the woman who fixes nets"}},
	places: [][3]string{{"Gull Steps", "at the Gull Steps", "on the stairs by the birds"}, {"Tarred Wharf", "on the Tarred Wharf", "on the black pier"},
		{"Lighthouse Yard", "in the Lighthouse Yard", "in the beacon courtyard"}, {"Brine Market", "in the Brine Market", "among the fish stalls"},
		{"Chapel of Tides", "in the Chapel of Tides", "in the sailors' church"}},
	mods: []string{"brass", "coral", "whalebone", "amber", "silk", "pewter", "iron", "glass"},
	heads: [][2]string{{"chest", "box"}, {"chain", "necklace"}, {"lantern", "lamp"}, {"flute", "pipe"}, {"idol", "statuette"},
		{"flask", "bottle"}, {"crown", "circlet"}, {"bell", "chime"}},
	obj:    func(m, h string) string { return "the " + m + " " + h },
	objDat: func(m, h string) string { return "the " + m + " " + h },
	acts: [][2]string{{"I offer %[1]s to %[2]s.", "offered"}, {"I try to sell %[1]s to %[2]s.", "sold"},
		{"I swap %[1]s with %[2]s.", "swapped"}, {"I give %[1]s to %[2]s, as a gift.", "gave"}},
	rewards: [][2]string{{"a letter", "the letter"}, {"a key", "the key"}, {"a pass", "the pass"}, {"a ring", "the ring"},
		{"a compass", "the compass"}, {"a knife", "the knife"}, {"a map", "the map"}, {"a purse", "the purse"}},
	from: []string{"from the governor", "from the harbour master", "from the lighthouse keeper", "from the salt guild",
		"from the smuggler king", "from the night watch", "from the map maker", "from the widow Marsh"},
	reveals: []string{"a forged order to open the sea gate", "a list of bribed harbour guards", "the deed to a sunken ship",
		"a confession signed in blood", "a plan of the smugglers' caves", "a promise of pardon for the whole crew",
		"a ransom note for a merchant's son", "a recipe for black powder", "a chart of the reef passages", "a warrant for a dead man"},
	narration: []string{
		"Gulls scream over the masts, fighting over a fish head someone tossed from a deck.",
		"The tide slaps against the pilings, slow and steady, and the whole pier sways a little with it.",
		"Tar and salt and rotting kelp: the harbour smells the way it always smells.",
		"A bosun shouts at his crew to haul faster, and the rope creaks through the pulley.",
		"Fog rolls in off the water and swallows the far end of the quay.",
		"Somewhere a fiddler plays a sea shanty badly, missing every third note.",
		"Children chase a stray dog between the barrels, shrieking with laughter.",
		"The bell on the harbour chain tolls once, for no reason anyone can see.",
	},
	interject: []string{"Nat one.", "Wait what", "lol", "Is that an insight check?", "I'm rolling.", "Seventeen!",
		"Can I see his hands?", "Hold on, snack break.", "Does he look nervous?", "Ok ok ok.", "Same.", "Huh."},
	outcome: func(npc, obj, reward string) string {
		return fmt.Sprintf("%s turns %s over twice, then nods and hands you %s in return.", npc, obj, reward)
	},
	recapLine: func(pc, past, obj, npc, place string) string {
		return fmt.Sprintf("%s %s %s to %s %s.", pc, past, obj, npc, place)
	},
	echo: func(pc, past, obj, npc string) string {
		return fmt.Sprintf("Wait, %s %s %s to %s?", pc, past, obj, npc)
	},
	reveal:    func(def, what string) string { return fmt.Sprintf("Opened at last, %s turns out to be %s.", def, what) },
	revealEv:  func(what string) string { return "turns out to be " + what },
	scene:     func(place string) string { return "You arrive " + place + "." },
	recapOpen: "Previously, on the Salt Road: the tide was high, the purses were light, and every one of you owed somebody money.",
	qQuestion: func(pc, npc, obj string) string {
		return fmt.Sprintf("What did %s get from %s for %s?", pc, npc, obj)
	},
	qState: func(pc, past, obj, npc, place string) string {
		return fmt.Sprintf("%s %s %s to %s %s and got something back.", pc, past, obj, npc, place)
	},
	qPara: func(pc, syn, npcPara, placePara string) string {
		return fmt.Sprintf("What was %s paid for that %s by %s %s?", pc, syn, npcPara, placePara)
	},
	qEvent: func(objDat, place string) string { return fmt.Sprintf("What happened with %s %s?", objDat, place) },
	qMulti: func(pc, obj string) string {
		return fmt.Sprintf("What did the thing %s received for %s turn out to be?", pc, obj)
	},
	chatter: []func(obj, head string) string{
		func(obj, _ string) string { return "Who is carrying " + obj + " right now?" },
		func(_, head string) string { return "I hold the " + head + " up to the light." },
		func(obj, _ string) string { return "How much do you think " + obj + " is worth?" },
	},
}

var hafenGerman = tradeLang{
	campaign: "hafen-eval", language: "de",
	pcs: []string{"Wiebke", "Arne", "Svea", "Mattis", "Hanne"},
	npcs: [][3]string{{"Hollis", "Kapitän Hollis", "dem Schiffsführer"}, {"Margarete", "Zöllnerin Margarete", "der Steuereintreiberin"},
		{"Bosk", "Hehler Bosk", "dem Händler für Diebesgut"}, {"Ysolde", "Mutter Ysolde", "der Priorin"},
		{"Pell", "Laternenanzünder Pell", "dem Lampenmann"}, {"Orla", "Netzflickerin Orla", "der Frau, die Netze repariert"}},
	places: [][3]string{{"Möwenstufen", "an den Möwenstufen", "auf der Treppe bei den Vögeln"}, {"Teerkai", "am Teerkai", "am schwarzen Steg"},
		{"Leuchtturmhof", "im Leuchtturmhof", "im Hof des Leuchtfeuers"}, {"Salzmarkt", "auf dem Salzmarkt", "zwischen den Fischständen"},
		{"Gezeitenkapelle", "in der Gezeitenkapelle", "in der Kirche der Seeleute"}},
	// Feminine compounds only: die Messingtruhe, mit der Messingtruhe.
	mods: []string{"Messing", "Korallen", "Walbein", "Bernstein", "Seiden", "Zinn", "Eisen", "Glas"},
	heads: [][2]string{{"truhe", "Kiste"}, {"kette", "Halsschnur"}, {"laterne", "Lampe"}, {"flöte", "Pfeife"}, {"figur", "Statuette"},
		{"flasche", "Karaffe"}, {"krone", "Tiara"}, {"glocke", "Schelle"}},
	obj:    func(m, h string) string { return "die " + m + h },
	objDat: func(m, h string) string { return "der " + m + h },
	acts: [][2]string{{"Ich biete %[2]s %[1]s an.", "angeboten"}, {"Ich versuche, %[2]s %[1]s zu verkaufen.", "verkauft"},
		{"Ich tausche %[1]s mit %[2]s.", "getauscht"}, {"Ich schenke %[2]s %[1]s.", "geschenkt"}},
	rewards: [][2]string{{"einen Brief", "der Brief"}, {"einen Schlüssel", "der Schlüssel"}, {"einen Passierschein", "der Passierschein"},
		{"einen Ring", "der Ring"}, {"einen Kompass", "der Kompass"}, {"einen Dolch", "der Dolch"}, {"einen Plan", "der Plan"},
		{"einen Geldbeutel", "der Geldbeutel"}},
	from: []string{"vom Gouverneur", "vom Hafenmeister", "vom Leuchtturmwärter", "von der Salzgilde", "vom Schmugglerkönig",
		"von der Nachtwache", "vom Kartenmacher", "von der Witwe Marsch"},
	reveals: []string{"gefälschter Befehl, das Seetor zu öffnen", "Liste bestochener Hafenwachen", "Urkunde über ein gesunkenes Schiff",
		"mit Blut unterschriebenes Geständnis", "Plan der Schmugglerhöhlen", "Gnadenversprechen für die ganze Mannschaft",
		"Lösegeldforderung für den Sohn eines Händlers", "Rezept für Schwarzpulver", "Karte der Riffdurchfahrten", "Haftbefehl gegen einen Toten"},
	narration: []string{
		"Möwen kreischen über den Masten und streiten sich um einen Fischkopf, den jemand von Deck geworfen hat.",
		"Die Flut klatscht gegen die Pfähle, langsam und stetig, und der ganze Steg schwankt ein wenig mit.",
		"Teer, Salz und faulender Tang: Der Hafen riecht, wie er immer riecht.",
		"Ein Bootsmann brüllt seine Leute an, schneller zu ziehen, und das Tau knarrt durch die Rolle.",
		"Nebel zieht vom Wasser herein und verschluckt das ferne Ende der Mole.",
		"Irgendwo spielt ein Geiger schlecht ein Seemannslied und verfehlt jeden dritten Ton.",
		"Kinder jagen einen streunenden Hund zwischen den Fässern hindurch und kreischen vor Lachen.",
		"Die Glocke an der Hafenkette schlägt einmal, ohne dass jemand einen Grund erkennt.",
	},
	interject: []string{"Eine Eins.", "Warte was", "lol", "Ist das ein Motiv-Wurf?", "Ich würfle.", "Siebzehn!",
		"Sehe ich seine Hände?", "Moment, Snackpause.", "Wirkt er nervös?", "Okay okay okay.", "Dito.", "Hä."},
	outcome: func(npc, obj, reward string) string {
		return fmt.Sprintf("%s dreht %s zweimal um, nickt dann und gibt dir dafür %s.", npc, obj, reward)
	},
	recapLine: func(pc, past, obj, npc, place string) string {
		return fmt.Sprintf("%s hat %s %s %s %s.", pc, npc, obj, place, past)
	},
	echo: func(pc, past, obj, npc string) string {
		return fmt.Sprintf("Moment, %s hat %s %s %s?", pc, npc, obj, past)
	},
	reveal: func(def, what string) string {
		return fmt.Sprintf("Endlich geöffnet, entpuppt sich %s als %s.", def, what)
	},
	revealEv:  func(what string) string { return "als " + what },
	scene:     func(place string) string { return "Ihr kommt " + place + " an." },
	recapOpen: "Bisher auf der Salzstraße: Die Flut stand hoch, die Geldbeutel waren leicht, und jeder von euch schuldete irgendwem Geld.",
	qQuestion: func(pc, npc, obj string) string {
		return fmt.Sprintf("Was hat %s von %s für %s bekommen?", pc, npc, obj)
	},
	qState: func(pc, past, obj, npc, place string) string {
		return fmt.Sprintf("%s hat %s %s %s %s und etwas dafür bekommen.", pc, npc, obj, place, past)
	},
	qPara: func(pc, syn, npcPara, placePara string) string {
		return fmt.Sprintf("Womit hat man %s für jene %s bezahlt, bei %s %s?", pc, syn, npcPara, placePara)
	},
	qEvent: func(objDat, place string) string { return fmt.Sprintf("Was ist mit %s %s geschehen?", objDat, place) },
	qMulti: func(pc, obj string) string {
		return fmt.Sprintf("Als was hat sich das entpuppt, was %s für %s bekommen hat?", pc, obj)
	},
	chatter: []func(obj, head string) string{
		func(obj, _ string) string { return "Wer trägt gerade " + obj + "?" },
		func(_, head string) string {
			return "Ich halte das Ding ins Licht, diese " + strings.ToUpper(head[:1]) + head[1:] + "."
		},
		func(obj, _ string) string { return "Was ist " + obj + " wohl wert?" },
	},
}

func genTide(seed uint64) (*campaignfile.File, []question)  { return genTrade(seed, tideEnglish, 10) }
func genHafen(seed uint64) (*campaignfile.File, []question) { return genTrade(seed, hafenGerman, 10) }

// genTrade writes a tide/hafen corpus in language l (see above).
func genTrade(seed uint64, l tradeLang, sessions int) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x3c6ef372fe94f82b))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	f := &campaignfile.File{Campaign: l.campaign, Language: l.language}
	user := func(pc string) string { return "u-" + strings.ToLower(pc) }
	for _, p := range l.pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: "pc-" + strings.ToLower(p), Type: "player", Name: p,
			Attributes: map[string]any{"player": user(p)}})
	}
	for i, n := range l.npcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("npc-%d", i), Type: "npc", Name: n[0]})
	}
	for i, p := range l.places {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("loc-%d", i), Type: "location", Name: p[0]})
	}
	const perSession = 5
	type event struct {
		s                     int
		pc                    string
		npc, place            [3]string
		mod                   string
		head                  [2]string
		act                   [2]string
		declare, resolve, rew string
		rewDef                string
		inMonologue           bool
		reveal                int // index into l.reveals, -1 for none
	}
	usedObj, usedRew := map[string]bool{}, map[string]bool{}
	var events []event
	for s := range sessions {
		for range perSession {
			e := event{s: s, pc: pick(l.pcs), npc: l.npcs[rng.IntN(len(l.npcs))], place: l.places[rng.IntN(len(l.places))],
				act: l.acts[rng.IntN(len(l.acts))], inMonologue: rng.IntN(2) == 0, reveal: -1}
			for range 200 {
				e.mod, e.head = pick(l.mods), l.heads[rng.IntN(len(l.heads))]
				if !usedObj[e.mod+e.head[0]] {
					usedObj[e.mod+e.head[0]] = true
					break
				}
			}
			var r [2]string
			var from string
			for range 200 {
				r, from = l.rewards[rng.IntN(len(l.rewards))], pick(l.from)
				if !usedRew[r[0]+from] {
					usedRew[r[0]+from] = true
					break
				}
			}
			e.rew, e.rewDef = r[0]+" "+from, r[1]+" "+from
			obj := l.obj(e.mod, e.head[0])
			e.declare = fmt.Sprintf(e.act[0], obj, e.npc[1])
			e.resolve = l.outcome(e.npc[0], obj, e.rew)
			events = append(events, e)
		}
	}
	// Multi-hop: the rewards of some events of the first sessions are
	// opened sessions later.
	reveal := map[int][]int{} // session → events revealed in it
	for i, n := 0, 0; i < len(events) && n < len(l.reveals); i += 3 {
		if events[i].s+2 >= sessions {
			break
		}
		events[i].reveal = n
		at := events[i].s + 2 + rng.IntN(sessions-events[i].s-2)
		reveal[at] = append(reveal[at], i)
		n++
	}
	var qs []question
	for _, e := range events {
		obj := l.obj(e.mod, e.head[0])
		qs = append(qs,
			question{Kind: "question", Q: l.qQuestion(e.pc, e.npc[1], obj), Expect: e.rew},
			question{Kind: "statement", Q: l.qState(e.pc, e.act[1], obj, e.npc[1], e.place[1]), Expect: e.rew},
			question{Kind: "paraphrase", Q: l.qPara(e.pc, e.head[1], e.npc[2], e.place[2]), Expect: e.rew},
			question{Kind: "event", Q: l.qEvent(l.objDat(e.mod, e.head[0]), e.place[1]), Evidence: []string{e.declare, e.rew}},
		)
		if e.reveal >= 0 {
			qs = append(qs, question{Kind: "multi_hop", Q: l.qMulti(e.pc, obj),
				Evidence: []string{e.rew, l.revealEv(l.reveals[e.reveal])}})
		}
	}
	narrate := func(b *strings.Builder, chars int) {
		for n := b.Len() + chars; b.Len() < n; {
			if b.Len() > 0 {
				b.WriteString(" ")
			}
			b.WriteString(pick(l.narration))
		}
	}
	start := time.Date(2026, 2, 6, 19, 0, 0, 0, time.UTC)
	for s := range sessions {
		sid := fmt.Sprintf("%s-%02d", l.campaign[:4], s+1)
		at := start.AddDate(0, 0, 7*s)
		sess := campaignfile.Session{ID: sid, StartedAt: at}
		type line struct{ user, name, text string }
		var ls []line
		dm := func(t string) line { return line{"u-dm", "DM", t} }
		if s > 0 {
			var b strings.Builder
			b.WriteString(l.recapOpen)
			var told []event
			for _, e := range events {
				if e.s == s-1 {
					told = append(told, e)
				}
			}
			if s > 1 {
				for range 2 {
					told = append(told, events[rng.IntN((s-1)*perSession)])
				}
			}
			for _, e := range told {
				b.WriteString(" " + l.recapLine(e.pc, e.act[1], l.obj(e.mod, e.head[0]), e.npc[1], e.place[1]))
				narrate(&b, 100+rng.IntN(300))
			}
			narrate(&b, 500+rng.IntN(1500))
			ls = append(ls, dm(b.String()))
		}
		for _, i := range reveal[s] {
			e := events[i]
			ls = append(ls, dm(l.reveal(e.rewDef, l.reveals[e.reveal])))
		}
		for _, e := range events {
			if e.s != s {
				continue
			}
			for range 1 + rng.IntN(4) {
				p := pick(l.pcs)
				o := events[rng.IntN(len(events))]
				if rng.IntN(3) == 0 {
					ls = append(ls, line{user(p), p, l.chatter[rng.IntN(len(l.chatter))](l.obj(o.mod, o.head[0]), o.head[0])})
				} else {
					ls = append(ls, line{user(p), p, pick(l.interject)})
				}
			}
			ls = append(ls, dm(l.scene(e.place[1])), line{user(e.pc), e.pc, e.declare})
			if e.inMonologue {
				var b strings.Builder
				narrate(&b, 700+rng.IntN(1800))
				b.WriteString(" " + e.resolve)
				narrate(&b, 700+rng.IntN(1800))
				ls = append(ls, dm(b.String()))
			} else {
				ls = append(ls, dm(e.resolve))
			}
			if p := pick(l.pcs); p != e.pc && rng.IntN(2) == 0 {
				ls = append(ls, line{user(p), p, l.echo(e.pc, e.act[1], l.obj(e.mod, e.head[0]), e.npc[1])})
			}
			ls = append(ls, line{user(e.pc), e.pc, pick(l.interject)})
		}
		for i, x := range ls {
			sess.Entries = append(sess.Entries, campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1),
				SpeakerID: x.user, SpeakerName: x.name, Text: x.text, At: at.Add(time.Duration(15*i) * time.Second),
				DurationMS: 3000})
		}
		sess.EndedAt = at.Add(time.Duration(15*len(ls)+10) * time.Second)
		f.Sessions = append(f.Sessions, sess)
	}
	return f, qs
}
