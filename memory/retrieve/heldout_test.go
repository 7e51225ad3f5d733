package retrieve

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Held-out corpora (issue 27): written after the fusion they measure, in
// the shapes that defeated retrieval on real data, but not the shapes the
// other corpora were tuned on. They were scored before any change to the
// ranking (see the commit that added them).
//
//   - keep (English) and burg (German, the same templates translated, the
//     campaign in German): a table transcript in another style than
//     [genTable]. Half the events are resolved inside a long DM turn of
//     narration (the answer is one sentence of a 1.5–3k character
//     monologue the chunker must split); every session opens with a
//     "previously on" recap that retells the last session's events in the
//     very words of the statements asked about (so the recap matches a
//     statement better than the answer does); short interjections in
//     between. Questions: question form, statement, paraphrase (other
//     verb, other name for the place, the object by its head noun only)
//     and the event (declaration and resolution both).
//   - heist: a multi-hop campaign. Relatives are known either as facts
//     (the campaign file's relationships) or only from the transcript (a
//     line that introduces "Mara's cousin, Teodor"); the answer is said
//     by the relative, in another session, without naming the one the
//     question names. Two-hop questions (relative by fact) count the
//     answer line; multi-hop questions (relative by transcript) count the
//     introducing line and the answer line. Others speak about the same
//     objects, and the named NPCs talk a lot.

// tableLang are the words of one language of the keep/burg corpora.
type tableLang struct {
	campaign, language string
	pcs                []string
	// places: in X (where it happened), in Y (the paraphrase).
	places [][2]string
	// mods and heads make the objects; acc, nom and dat decline them
	// ("the amber key", "den bernsteinfarbenen Schlüssel").
	mods, heads   []string
	acc, nom, dat func(mod, head string) string
	// acts: declaration (first person, %s the object), resolution
	// (second person), participle or past, base, paraphrase.
	acts                       [][5]string
	interjections, narration   []string
	consequences               []string
	declare, resolve, recap    func(pc, place, act, obj string) string
	recapIntro, ritualIntro    string
	qQuestion, qStatement      func(pc, act, obj, place string) string
	qParaphrase, qEvent        func(pc, para, head, place, objDat string) string
	chatterHas, chatterInspect func(obj, head string) string
}

var keepEnglish = tableLang{
	campaign: "keep-eval", language: "en",
	pcs: []string{"Mira", "Bram", "Tess", "Oskar", "Lio"},
	places: [][2]string{{"the Salt Mill", "the grinding house"}, {"the Lantern Bridge", "the river crossing"},
		{"the Widow's Inn", "the tavern"}, {"the Bell Abbey", "the monastery"}, {"the Red Quarry", "the stone pit"},
		{"the Fen Gate", "the marsh entrance"}},
	mods:  []string{"amber", "copper", "ivory", "pewter", "onyx", "scarlet", "oaken", "frosted", "tarnished", "gilt"},
	heads: []string{"key", "ring", "compass", "goblet", "dagger", "helm", "mirror", "staff", "shield", "chalice"},
	acc:   func(m, h string) string { return "the " + m + " " + h },
	nom:   func(m, h string) string { return "the " + m + " " + h },
	dat:   func(m, h string) string { return "the " + m + " " + h },
	acts: [][5]string{
		{"swipe %s", "you swipe %s while the guard looks away", "swiped", "swipe", "nick"},
		{"smash %s", "you smash %s against the wall", "smashed", "smash", "wreck"},
		{"bury %s", "you bury %s under the old oak", "buried", "bury", "put underground"},
		{"sell %s", "you sell %s to a fence for thirty gold", "sold", "sell", "flog"},
		{"hide %s", "you hide %s under a loose board", "hid", "hide", "stash"},
		{"bless %s", "you lay your holy symbol on %s and it glows", "blessed", "bless", "consecrate"},
		{"polish %s", "you polish %s until it gleams", "polished", "polish", "buff up"},
		{"toss %s down the well", "you toss %s down the well and it splashes far below", "tossed", "toss", "drop down the shaft"},
	},
	interjections: []string{"Crit!", "Hang on.", "Do I see it?", "haha", "I'm out of spell slots.", "Whose turn is it?",
		"Brb, pizza.", "Should I roll for it?", "Sneak attack!", "Fine.", "Ugh.", "Can I help?", "Wait, seriously?",
		"I drink a potion.", "That's a twelve.", "Do we get advantage?"},
	narration: []string{
		"Rain hammers on the shutters, and somewhere a dog barks twice and falls silent.",
		"The fire has burned low, and the shadows of the rafters stretch across the floor like fingers.",
		"A cart rattles past outside, its lantern swinging, and the driver curses at his mule.",
		"The smell of wet wool and cheap ale hangs in the air, thick enough to chew.",
		"Far away, thunder rolls over the hills, patient and heavy.",
		"The old boards creak under your boots, and a draught tugs at the candle flames.",
		"Voices rise and fall in the next room, too muffled to make out a single word.",
		"A moth circles the lamp, again and again, never quite touching the glass.",
	},
	consequences: []string{"the candles flicker", "a door slams somewhere upstairs", "the room goes very quiet",
		"a crow caws outside", "nobody seems to notice", "the floorboards groan"},
	declare: func(pc, place, act, obj string) string {
		return fmt.Sprintf("Right, while we're in %s I %s.", place, fmt.Sprintf(act, obj))
	},
	resolve: func(pc, place, act, obj string) string { return pc + ", " + fmt.Sprintf(act, obj) },
	recap: func(pc, place, past, obj string) string {
		return fmt.Sprintf("In %s, %s %s %s.", place, pc, past, obj)
	},
	recapIntro:  "Last time on our adventure: the five of you left the keep at dawn and walked into trouble, as always.",
	ritualIntro: "The storm breaks over the keep. The old priest raises his hands, and every relic you have carried hums.",
	qQuestion: func(pc, base, obj, _ string) string {
		return fmt.Sprintf("When did %s %s %s?", pc, base, obj)
	},
	qStatement: func(pc, past, obj, place string) string {
		return fmt.Sprintf("%s %s %s in %s.", pc, past, obj, place)
	},
	qParaphrase: func(pc, para, head, place, _ string) string {
		return fmt.Sprintf("Didn't %s %s some %s at %s?", pc, para, head, place)
	},
	qEvent: func(_, _, _, place, objDat string) string {
		return fmt.Sprintf("What happened to %s in %s?", objDat, place)
	},
	chatterHas:     func(obj, _ string) string { return fmt.Sprintf("Who has %s now?", obj) },
	chatterInspect: func(_, head string) string { return fmt.Sprintf("I check the %s for traps.", head) },
}

var burgGerman = func() tableLang {
	// Weak adjective declension after the definite article, masculine
	// nouns only: der kupferne Ring, den kupfernen Ring, dem kupfernen Ring.
	return tableLang{
		campaign: "burg-eval", language: "de",
		pcs: []string{"Kira", "Jonas", "Lene", "Falk", "Ida"},
		places: [][2]string{{"der Salzmühle", "dem Mahlhaus"}, {"der Laternenbrücke", "dem Flussübergang"},
			{"der Witwenschenke", "dem Wirtshaus"}, {"der Glockenabtei", "dem Kloster"}, {"dem Roten Steinbruch", "der Steingrube"},
			{"dem Moortor", "dem Sumpfeingang"}},
		mods:  []string{"kupfern", "silbern", "golden", "eisern", "gläsern", "hölzern", "steinern", "rostig", "schwarz", "verzaubert"},
		heads: []string{"Schlüssel", "Ring", "Kompass", "Becher", "Dolch", "Helm", "Spiegel", "Stab", "Schild", "Kelch"},
		acc:   func(m, h string) string { return "den " + m + "en " + h },
		nom:   func(m, h string) string { return "der " + m + "e " + h },
		dat:   func(m, h string) string { return "dem " + m + "en " + h },
		acts: [][5]string{
			{"schnappe ich mir %s", "du schnappst dir %s, während die Wache wegschaut", "geschnappt", "schnappen", "gemopst"},
			{"zerschlage ich %s", "du zerschlägst %s an der Wand", "zerschlagen", "zerschlagen", "kaputt gemacht"},
			{"vergrabe ich %s", "du vergräbst %s unter der alten Eiche", "vergraben", "vergraben", "eingebuddelt"},
			{"verkaufe ich %s", "du verkaufst %s an einen Hehler für dreißig Gold", "verkauft", "verkaufen", "verscherbelt"},
			{"verstecke ich %s", "du versteckst %s unter einem losen Brett", "versteckt", "verstecken", "verborgen"},
			{"segne ich %s", "du legst dein heiliges Symbol auf %s und er leuchtet", "gesegnet", "segnen", "geweiht"},
			{"poliere ich %s", "du polierst %s, bis er glänzt", "poliert", "polieren", "geputzt"},
			{"werfe ich %s in den Brunnen", "du wirfst %s in den Brunnen, und tief unten platscht es", "geworfen", "werfen", "versenkt"},
		},
		interjections: []string{"Krit!", "Moment mal.", "Sehe ich das?", "haha", "Ich habe keine Zauberplätze mehr.", "Wer ist dran?",
			"Bin kurz weg, Pizza.", "Soll ich dafür würfeln?", "Hinterhältiger Angriff!", "Na gut.", "Oh Mann.", "Kann ich helfen?",
			"Echt jetzt?", "Ich trinke einen Trank.", "Das ist eine Zwölf.", "Haben wir Vorteil?"},
		narration: []string{
			"Regen prasselt gegen die Fensterläden, irgendwo bellt ein Hund zweimal und verstummt.",
			"Das Feuer ist heruntergebrannt, und die Schatten der Balken strecken sich wie Finger über den Boden.",
			"Draußen rattert ein Karren vorbei, seine Laterne schwingt, und der Kutscher flucht über sein Maultier.",
			"Der Geruch von nasser Wolle und billigem Bier hängt so dick in der Luft, dass man ihn kauen könnte.",
			"In der Ferne rollt Donner über die Hügel, geduldig und schwer.",
			"Die alten Dielen knarren unter euren Stiefeln, und ein Luftzug zerrt an den Kerzenflammen.",
			"Im Nebenraum heben und senken sich Stimmen, zu gedämpft, um ein einziges Wort zu verstehen.",
			"Eine Motte umkreist die Lampe, wieder und wieder, ohne das Glas je zu berühren.",
		},
		consequences: []string{"die Kerzen flackern", "oben knallt eine Tür", "im Raum wird es sehr still",
			"draußen krächzt eine Krähe", "niemand scheint es zu bemerken", "die Dielen ächzen"},
		declare: func(pc, place, act, obj string) string {
			return fmt.Sprintf("Okay, während wir in %s sind, %s.", place, fmt.Sprintf(act, obj))
		},
		resolve: func(pc, place, act, obj string) string { return pc + ", " + fmt.Sprintf(act, obj) },
		recap: func(pc, place, part, obj string) string {
			return fmt.Sprintf("In %s hat %s %s %s.", place, pc, obj, part)
		},
		recapIntro:  "Was bisher geschah: Ihr fünf habt die Burg im Morgengrauen verlassen und seid, wie immer, in Schwierigkeiten geraten.",
		ritualIntro: "Das Gewitter bricht über der Burg los. Der alte Priester hebt die Hände, und jedes Relikt, das ihr getragen habt, summt.",
		qQuestion: func(pc, part, obj, _ string) string {
			return fmt.Sprintf("Wann hat %s %s %s?", pc, obj, part)
		},
		qStatement: func(pc, part, obj, place string) string {
			return fmt.Sprintf("%s hat %s in %s %s.", pc, obj, place, part)
		},
		qParaphrase: func(pc, para, head, place, _ string) string {
			return fmt.Sprintf("Hat %s nicht irgendeinen %s in %s %s?", pc, head, place, para)
		},
		qEvent: func(_, _, _, place, objDat string) string {
			return fmt.Sprintf("Was ist in %s mit %s passiert?", place, objDat)
		},
		chatterHas:     func(obj, _ string) string { return fmt.Sprintf("Wer hat jetzt %s?", obj) },
		chatterInspect: func(_, head string) string { return fmt.Sprintf("Ich untersuche den %s auf Fallen.", head) },
	}
}()

func genKeep(seed uint64) (*campaignfile.File, []question) {
	return genTableLang(seed, keepEnglish, 12)
}
func genBurg(seed uint64) (*campaignfile.File, []question) { return genTableLang(seed, burgGerman, 12) }

// genTableLang writes a keep/burg corpus in language l with the given
// number of sessions.
func genTableLang(seed uint64, l tableLang, sessions int) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x6a09e667f3bcc909))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	f := &campaignfile.File{Campaign: l.campaign, Language: l.language}
	user := func(pc string) string { return "u-" + strings.ToLower(pc) }
	for _, p := range l.pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: strings.ToLower(p), Type: "player", Name: p,
			Attributes: map[string]any{"player": user(p)}})
	}
	for i, p := range l.places {
		name := p[0]
		for _, art := range []string{"der ", "dem ", "the "} {
			name = strings.TrimPrefix(name, art)
		}
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("place-%d", i), Type: "location", Name: name})
	}
	const perSession = 6
	type event struct {
		s                 int
		pc, place, para   string
		mod, head         string
		act               [5]string
		declare, resolve  string
		recapped          string
		inMonologue       bool
		placeIdx, conseqI int
	}
	used := map[string]bool{}
	var events []event
	for s := range sessions {
		for range perSession {
			var mod, head string
			for range 200 {
				mod, head = pick(l.mods), pick(l.heads)
				if !used[mod+head] {
					used[mod+head] = true
					break
				}
			}
			pi := rng.IntN(len(l.places))
			e := event{s: s, pc: pick(l.pcs), place: l.places[pi][0], para: l.places[pi][1], mod: mod, head: head,
				act: l.acts[rng.IntN(len(l.acts))], inMonologue: rng.IntN(2) == 0, placeIdx: pi}
			e.declare = l.declare(e.pc, e.place, e.act[0], l.acc(mod, head))
			e.resolve = l.resolve(e.pc, e.place, e.act[1], l.acc(mod, head)) + "; " + pick(l.consequences) + "."
			e.recapped = l.recap(e.pc, e.place, e.act[2], l.acc(mod, head))
			events = append(events, e)
		}
	}
	var qs []question
	for _, e := range events {
		obj := l.acc(e.mod, e.head)
		qs = append(qs,
			question{Kind: "question", Q: l.qQuestion(e.pc, pickForm(l, e.act), obj, e.place), Expect: e.resolve},
			question{Kind: "statement", Q: l.qStatement(e.pc, e.act[2], obj, e.place), Expect: e.resolve},
			question{Kind: "paraphrase", Q: l.qParaphrase(e.pc, e.act[4], e.head, e.para, ""), Expect: e.resolve},
			question{Kind: "event", Q: l.qEvent("", "", "", e.place, l.dat(e.mod, e.head)), Evidence: []string{e.declare, e.resolve}},
		)
	}
	monologue := func(intro string, body []string, minChars int) string {
		var b strings.Builder
		b.WriteString(intro)
		i := 0
		for b.Len() < minChars || i < len(body) {
			if i < len(body) {
				b.WriteString(" " + body[i])
			}
			b.WriteString(" " + pick(l.narration))
			i++
		}
		return b.String()
	}
	start := time.Date(2026, 1, 10, 18, 30, 0, 0, time.UTC)
	for s := range sessions {
		sid := fmt.Sprintf("%s-s%02d", l.campaign[:1], s+1)
		at := start.AddDate(0, 0, 14*s)
		sess := campaignfile.Session{ID: sid, StartedAt: at}
		type line struct{ user, name, text string }
		var ls []line
		dm := func(t string) line { return line{"u-gm", "GM", t} }
		if s > 0 {
			var body []string
			for _, e := range events {
				if e.s == s-1 {
					body = append(body, e.recapped)
				}
			}
			ls = append(ls, dm(monologue(l.recapIntro, body, 1500+rng.IntN(2500))))
		}
		if s == sessions/2 {
			var body []string
			for i, e := range events {
				if i%3 == 0 {
					body = append(body, strings.ToUpper(l.nom(e.mod, e.head)[:1])+l.nom(e.mod, e.head)[1:]+".")
				}
			}
			ls = append(ls, dm(monologue(l.ritualIntro, body, 3500)))
		}
		for _, e := range events {
			if e.s != s {
				continue
			}
			for range 2 + rng.IntN(5) {
				p := pick(l.pcs)
				o := events[rng.IntN(len(events))]
				switch rng.IntN(5) {
				case 0:
					ls = append(ls, line{user(p), p, l.chatterHas(l.acc(o.mod, o.head), o.head)})
				case 1:
					ls = append(ls, line{user(p), p, l.chatterInspect(l.acc(o.mod, o.head), o.head)})
				default:
					ls = append(ls, line{user(p), p, pick(l.interjections)})
				}
			}
			ls = append(ls, line{user(e.pc), e.pc, e.declare})
			if e.inMonologue {
				// The answer is one sentence of a long turn.
				var b strings.Builder
				for b.Len() < 600+rng.IntN(900) {
					b.WriteString(pick(l.narration) + " ")
				}
				b.WriteString(e.resolve)
				for n := b.Len() + 600 + rng.IntN(900); b.Len() < n; {
					b.WriteString(" " + pick(l.narration))
				}
				ls = append(ls, dm(b.String()))
			} else {
				ls = append(ls, dm(e.resolve))
			}
		}
		for range 3 {
			p := pick(l.pcs)
			ls = append(ls, line{user(p), p, pick(l.interjections)})
		}
		for i, x := range ls {
			sess.Entries = append(sess.Entries, campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1),
				SpeakerID: x.user, SpeakerName: x.name, Text: x.text, At: at.Add(time.Duration(12*i) * time.Second),
				DurationMS: 2500})
		}
		sess.EndedAt = at.Add(time.Duration(12*len(ls)+10) * time.Second)
		f.Sessions = append(f.Sessions, sess)
	}
	return f, qs
}

// pickForm is the verb form a question-form question uses: the base form
// in English ("When did Mira swipe …"), the participle in German ("Wann
// hat Kira … geschnappt?").
func pickForm(l tableLang, act [5]string) string {
	if l.language == "de" {
		return act[2]
	}
	return act[3]
}

// genHeist writes the multi-hop campaign (see above).
func genHeist(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0xbb67ae8584caa73b))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	first := []string{"Mara", "Teodor", "Ilse", "Corwin", "Petra", "Anselm", "Yara", "Brannoc", "Lisbet", "Orrin",
		"Sabine", "Gideon", "Nella", "Rurik", "Odile", "Fenwick", "Hedda", "Casimir", "Wren", "Ulric",
		"Margit", "Dorian", "Elsa", "Tobiah", "Rosalind", "Emeric", "Jessamy", "Leopold", "Agnes", "Barnaby",
		"Clementine", "Desmond", "Fiora", "Gregor", "Helka", "Ivo"}
	last := []string{"Vask", "Morrow", "Quill", "Hartmann", "Dace", "Ferrant", "Ostry", "Lunde", "Corvo", "Brisk",
		"Pellam", "Sorrel", "Thane", "Ambry", "Greave", "Halloran", "Keswick", "Marlow"}
	f := &campaignfile.File{Campaign: "heist-eval"}
	type ent struct{ id, name, first string }
	var npcs []ent
	for i, fn := range first {
		e := ent{fmt.Sprintf("npc-%02d", i), fn + " " + last[(i*7)%len(last)], fn}
		npcs = append(npcs, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "npc", Name: e.name, Aliases: []string{fn}})
	}
	places := []string{"the Copper Exchange", "the Tallow Yards", "the Saint Orla Orphanage", "the Weir House", "the Glassblowers' Row", "the Customs Tower"}
	for i, p := range places {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("loc-%d", i), Type: "location", Name: strings.TrimPrefix(p, "the ")})
	}
	objects := []string{"the ledger", "the vault plans", "the forged seal", "the guard roster", "the skeleton key", "the harbour charts",
		"the duke's letters", "the poison vial", "the bribe money", "the signet ring", "the tunnel map", "the blackmail file"}
	for _, p := range []ent{{"pc-sly", "Sly", "Sly"}, {"pc-nim", "Nim", "Nim"}} {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name, Attributes: map[string]any{"player": "u-" + p.name}})
	}
	// Relations. words: how a question names the relative.
	type rel struct {
		typ   string
		words []string
		intro string // how the transcript introduces the relative: %[1]s the named, %[2]s the relative
	}
	rels := []rel{
		{"SIBLING_OF", []string{"brother or sister", "sibling"}, "%[1]s's sibling, %[2]s, walks in shaking the rain off a cloak."},
		{"EMPLOYS", []string{"boss", "employer", "the one who pays"}, "%[2]s, who pays %[1]s's wages, nods at you from the bar."},
		{"MENTOR_OF", []string{"old teacher", "mentor"}, "%[2]s taught %[1]s everything about locks, years ago."},
		{"MARRIED_TO", []string{"spouse", "partner"}, "%[2]s is married to %[1]s, and has been for twenty years."},
		{"OWES_MONEY_TO", []string{"creditor", "the one owed money"}, "%[1]s owes %[2]s a small fortune, everyone knows it."},
		{"COUSIN_OF", []string{"cousin"}, "%[1]s's cousin, %[2]s, is the quiet one by the fire."},
	}
	answers := []string{"is sewn into the lining of a red coat", "went north on the salt barge", "sits under the third floorboard from the stove",
		"was swapped for a fake on Tuesday night", "is buried in a flour sack behind the bakery", "is kept in the abbess's prayer book",
		"was burned, but a copy survives", "hangs behind the portrait of the old duke", "was handed to a courier with a green hat",
		"lies at the bottom of the cistern", "is locked in a strongbox with two keyholes", "was traded for a barrel of brandy",
		"is hidden inside a hollow bedpost", "went into the river off the weir", "is in the bell tower, wrapped in oilcloth",
		"is with the pawnbroker on Needle Street"}
	const sessions = 8
	type line struct {
		speaker ent // zero: the GM
		text    string
	}
	planned := make([][]line, sessions)
	var qs []question
	type pair struct{ named, rel ent }
	// Pairs (2j, 2j+1): the even one is named by the question.
	for j := 0; j+1 < len(npcs) && j/2 < 16; j += 2 {
		p := pair{npcs[j], npcs[j+1]}
		r := rels[(j/2)%len(rels)]
		obj := objects[(j/2)%len(objects)]
		ans := answers[(j/2)%len(answers)]
		byFact := (j/2)%2 == 0
		sa := 1 + rng.IntN(sessions-1)
		answer := "Fine, I'll say it once. " + strings.ToUpper(obj[:1]) + obj[1:] + " " + ans + "."
		planned[sa] = append(planned[sa], line{p.rel, answer})
		// Someone else talks about the same object.
		o := npcs[(j*5+7)%len(npcs)]
		if o != p.rel && o != p.named {
			t := rng.IntN(sessions)
			planned[t] = append(planned[t], line{o, "You want " + obj + "? Try " + pick(places) + ", not me."})
		}
		// The named one talks a lot, about other things.
		for range 3 {
			t := rng.IntN(sessions)
			planned[t] = append(planned[t], line{p.named,
				pick([]string{"I was at ", "Meet me tomorrow at ", "Don't trust anyone at "}) + pick(places) + "."})
		}
		w := pick(r.words)
		var q string
		switch rng.IntN(3) {
		case 0:
			q = fmt.Sprintf("What did %s's %s say about %s?", p.named.first, w, obj)
		case 1:
			q = fmt.Sprintf("Where is %s, according to the %s of %s?", obj, w, p.named.name)
		default:
			q = fmt.Sprintf("What does %s's %s know about %s?", p.named.name, w, obj)
		}
		if byFact {
			f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: p.rel.id, Target: p.named.id, Type: r.typ,
				Provenance: campaignfile.Provenance{Session: "h1"}})
			qs = append(qs, question{Kind: "two_hop", Q: q, Expect: ans})
			continue
		}
		si := rng.IntN(sa + 1)
		intro := fmt.Sprintf(r.intro, p.named.first, p.rel.name)
		planned[si] = append([]line{{text: intro}}, planned[si]...)
		qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{intro, ans}})
	}
	scenes := []func() string{
		func() string {
			return fmt.Sprintf("%s and %s are arguing by the door of %s.", choose(rng, npcs).name, choose(rng, npcs).name, pick(places))
		},
		func() string {
			return fmt.Sprintf("%s slips out the back of %s.", choose(rng, npcs).first, pick(places))
		},
		func() string {
			return fmt.Sprintf("Rumour says %s changed hands near %s.", pick(objects), pick(places))
		},
		func() string { return "The bells ring the hour and the street empties fast." },
	}
	players := []ent{{"pc-sly", "Sly", "Sly"}, {"pc-nim", "Nim", "Nim"}}
	talk := []func() string{
		func() string { return "Can we trust " + choose(rng, npcs).first + "?" },
		func() string { return "I look for " + pick(objects) + "." },
		func() string { return "Let's case " + pick(places) + " tonight." },
		func() string { return "I pick the lock." },
		func() string { return "Nope." },
	}
	start := time.Date(2026, 3, 3, 20, 0, 0, 0, time.UTC)
	shape := sessionShape{first: 20 * time.Second, step: 30 * time.Second, durMS: 4000, narratorID: "u-gm", narratorName: "GM"}
	for s := range sessions {
		var ls []line
		gaps := make([]int, len(planned[s])+1)
		for range 28 {
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
		sid := fmt.Sprintf("h%d", s+1)
		at := start.AddDate(0, 0, 7*s)
		us := make([]spoken, len(ls))
		for i, x := range ls {
			us[i] = spoken{x.speaker.id, x.speaker.name, x.text}
		}
		f.Sessions = append(f.Sessions, shape.session(sid, at, us))
	}
	return f, qs
}
