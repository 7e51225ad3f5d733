package retrieve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Sixth round of held-out corpora (issue 27, rank6): written before any
// change to the ranking it measures, never tuned on; its first score is in
// the commit that added it.
//
//   - abbey: a snowbound mountain abbey, in a fifth multi-hop style (after
//     heist, feud, wharf and circus). The GM speaks in long monologues
//     (1.5–3k characters, a dozen sentences naming half the house) next to
//     the players' short interjections ("wait", "ha", "roll?"); each
//     session opens with a player's "previously on" recap repeating the
//     earlier sessions' events in a few words each, the things and people
//     by name. Ties between the brothers and sisters are shown only inside
//     a monologue, by two people doing something together with no
//     relationship word ("it is Wendeline who hears Anselm's confession
//     tonight"), told by the related one in a short line ("I keep Oswy's
//     keys when he sleeps"), or stated only as facts. The answer is said by
//     the related one in a later session, in words the question does not
//     use ("the chalice" is "the gilt cup"). Two questions ask for a detail
//     of an event that the recaps repeat without it; the paraphrase
//     questions share at most a name with the line that answers them.
func genAbbey(seed uint64) (*campaignfile.File, []question) {
	rng := rand.New(rand.NewPCG(seed, seed^0x3c6ef372fe94f82b))
	f := &campaignfile.File{Campaign: "abbey-eval"}
	type ent struct{ id, name, first, title string }
	var npcs []ent
	// Sisters and brothers: S and B.
	for i, n := range []string{"S Wendeline Ashcombe", "B Anselm Tovey", "B Oswy Fenwick", "S Agathe Rook", "S Maud Grell",
		"B Tobiah Marsh", "S Isolde Crane", "B Cedric Lowe", "B Pim Harrow", "S Ysolde Beck", "B Jory Flint", "B Hugh Mallory",
		"S Edda Quarrie", "B Lorcan Pike", "S Benedikta Vane", "B Godric Sallow"} {
		sex, n, _ := strings.Cut(n, " ")
		first, _, _ := strings.Cut(n, " ")
		title := "Brother"
		if sex == "S" {
			title = "Sister"
		}
		e := ent{fmt.Sprintf("anpc-%02d", i), n, first, title}
		npcs = append(npcs, e)
		f.Entities = append(f.Entities, campaignfile.Entity{ID: e.id, Type: "npc", Name: n, Aliases: []string{first}})
	}
	rooms := []string{"the scriptorium", "the calefactory", "the bell tower", "the infirmary", "the cellarium", "the cloister garth"}
	for i, r := range rooms {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: fmt.Sprintf("aloc-%d", i), Type: "location", Name: r[len("the "):]})
	}
	type pc struct{ id, name string }
	pcs := []pc{{"pc-kestrel", "Kestrel"}, {"pc-dobbin", "Dobbin"}, {"pc-sable", "Sable"}}
	for _, p := range pcs {
		f.Entities = append(f.Entities, campaignfile.Entity{ID: p.id, Type: "player", Name: p.name, Attributes: map[string]any{"player": "u-" + p.name}})
	}
	const sessions = 6
	type line struct {
		speaker string // an npc's id, a pc's id, or "" for the GM
		text    string
	}
	// Sentences the GM weaves into the session's monologue, and the short
	// lines of the session, planned before the filler.
	monologue := make([][]string, sessions)
	planned := make([][]line, sessions)
	// events are what the recaps repeat, per session, in a few words.
	events := make([][]string, sessions)
	var qs []question
	type pair struct {
		named, other ent
		how          string // "monologue", "says" or "fact"
		typ          string // the fact's type, for "fact"
		tie          string // %[1]s the named one's first name, %[2]s the other's
		q            string // %[1]s the named one's first name
		thing, alias string
		fate         string
	}
	pairs := []pair{
		{npcs[1], npcs[0], "monologue", "", "In the dark of the side chapel it is %[2]s who hears %[1]s's confession, her head bowed behind the lattice, until the candle gutters.",
			"What does the nun who hears %[1]s's confession know about the missing chalice?", "the missing chalice", "the gilt cup",
			"was melted down by a tinker in Hobb's Ford"},
		{npcs[2], npcs[3], "says", "", "I keep %[1]s's keys on my belt while he sleeps; he never asks for them back.",
			"What did the keeper of %[1]s's keys say about the psalter with the torn page?", "the psalter with the torn page", "the little prayer book",
			"is wedged behind the organ pipes"},
		{npcs[4], npcs[5], "fact", "NURSED_BY", "",
			"According to the brother who nursed %[1]s through the fever, where did the abbot's ring go?", "the abbot's ring", "the amethyst band",
			"was dropped down the well in the cloister garth"},
		{npcs[7], npcs[6], "monologue", "", "Out on the frozen pond %[2]s and %[1]s cut the ice together, saw and pole, as they have every morning since Candlemas.",
			"What did the woman who cuts the ice with %[1]s each morning reveal about the sealed letter?", "the sealed letter", "that folded parchment with the wax",
			"was burned in the bakehouse oven unread"},
		{npcs[9], npcs[8], "says", "", "Sister %[1]s taught me my letters, every one of them, with a switch and a candle.",
			"What did the novice %[1]s taught to read claim about the ledger pages?", "the ledger pages", "the cut-out quire",
			"is sewn into the lining of a pilgrim's cloak"},
		{npcs[10], npcs[11], "fact", "CELLARER_FOR", "",
			"What did the cellarer who serves %[1]s let slip about the spoiled wine?", "the spoiled wine", "the sour cask",
			"was poured into the snow behind the stables"},
	}
	for _, p := range pairs {
		sa := 2 + rng.IntN(sessions-2)
		planned[sa] = append(planned[sa], line{p.other.id, fmt.Sprintf("%s? Between us: it %s.", capFirst(p.alias), p.fate)})
		// The named one and the others name the thing, in short lines and
		// in the monologues and recaps.
		s := rng.IntN(sessions)
		planned[s] = append(planned[s], line{p.named.id,
			fmt.Sprintf(choose(rng, []string{"I know nothing of %s.", "Who told you about %s?", "Leave %s to the prior."}), p.thing)})
		s = rng.IntN(sessions)
		monologue[s] = append(monologue[s],
			fmt.Sprintf("%s %s frets aloud about %s in %s.", p.named.title, p.named.first, p.thing, choose(rng, rooms)))
		s = rng.IntN(sessions)
		events[s] = append(events[s], fmt.Sprintf("%s was asked about %s", p.named.first, p.thing))
		q := fmt.Sprintf(p.q, p.named.first)
		switch p.how {
		case "fact":
			f.Relationships = append(f.Relationships, campaignfile.Relationship{Source: p.other.id, Target: p.named.id, Type: p.typ,
				Provenance: campaignfile.Provenance{Session: "a1"}})
			qs = append(qs, question{Kind: "two_hop", Q: q, Expect: p.fate})
		case "monologue":
			tie := fmt.Sprintf(p.tie, p.named.first, p.other.first)
			st := rng.IntN(sa)
			monologue[st] = append(monologue[st], tie)
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{tie[:strings.Index(tie, ",")], p.fate}})
		default: // says
			tie := fmt.Sprintf(p.tie, p.named.first, p.other.first)
			st := rng.IntN(sa)
			planned[st] = append(planned[st], line{p.other.id, tie})
			qs = append(qs, question{Kind: "multi_hop", Q: q, Evidence: []string{tie, p.fate}})
		}
	}
	// Details the recaps repeat without: the event in full, once; later
	// recaps say it in a few words.
	details := []struct {
		speaker, text, recap, ev, q string
		kind                        string
	}{
		{pcs[1].id, "I hide the stolen reliquary under the third yew by the north wall, roots and all, and stamp the snow flat.",
			"Dobbin hid the reliquary outside", "third yew by the north wall", "Where exactly did Dobbin bury the reliquary?", "single"},
		{"", "The bell tower's rope snaps at the second peal and the bronze bell drops a full storey, cracking the lip on the landing stone.",
			"the bell fell in the tower", "cracking the lip on the landing stone", "What damage did the bell take when it fell?", "single"},
	}
	for _, d := range details {
		s := rng.IntN(sessions - 2)
		planned[s] = append(planned[s], line{d.speaker, d.text})
		for t := s + 1; t < sessions; t++ {
			events[t] = append(events[t], d.recap)
		}
		qs = append(qs, question{Kind: d.kind, Q: d.q, Expect: d.ev})
	}
	// Paraphrases: the line, its evidence, a question in other words.
	paras := []struct {
		speaker, text, ev, q string
	}{
		{npcs[12].id, "I've been boiling willow bark for the old ones whose knuckles ache in the frost.", "willow bark",
			"What remedy does Edda prepare for the elderly monks' stiff joints?"},
		{npcs[13].id, "The goats ate every last cabbage in the walled plot while I was at vespers.", "ate every last cabbage",
			"What happened to Lorcan's vegetable garden during evening prayers?"},
		{pcs[2].id, "I trade my good boots to the charcoal burner for a map of the goat paths over the pass.", "map of the goat paths",
			"What did Sable get in exchange for her footwear?"},
		{npcs[14].id, "Snow's drifted to the lintel of the gatehouse; nobody leaves until the thaw, not even the bishop's man.", "drifted to the lintel",
			"Why is Benedikta sure the visitors are trapped here?"},
	}
	for _, p := range paras {
		s := rng.IntN(sessions)
		planned[s] = append(planned[s], line{p.speaker, p.text})
		qs = append(qs, question{Kind: "paraphrase", Q: p.q, Expect: p.ev})
	}
	filler := []func() string{
		func() string {
			return fmt.Sprintf("Wind moans through %s and the candles lean with it.", choose(rng, rooms))
		},
		func() string {
			a, b := choose(rng, npcs), choose(rng, npcs)
			return fmt.Sprintf("%s %s passes %s %s in the corridor without a word.", a.title, a.first, b.title, b.first)
		},
		func() string {
			return fmt.Sprintf("The bell for %s rings thin and cold, and the brothers and sisters file past you in their grey habits.",
				choose(rng, []string{"lauds", "terce", "sext", "none", "vespers", "compline"}))
		},
		func() string {
			n := choose(rng, npcs)
			return fmt.Sprintf("%s %s is copying in %s, ink stiff with cold, and looks up only when your shadow falls on the page.",
				n.title, n.first, choose(rng, rooms))
		},
		func() string {
			return fmt.Sprintf("Someone has scratched a cross into the door of %s, fresh, the splinters still pale.", choose(rng, rooms))
		},
		func() string {
			n := choose(rng, npcs)
			return fmt.Sprintf("Rumour in %s has it that %s %s knows more about %s than anyone lets on.", choose(rng, rooms), n.title, n.first, choose(rng, pairs).thing)
		},
		func() string {
			return "Snow keeps falling, soft and endless, and the world beyond the wall is only white."
		},
	}
	interject := []func() string{
		func() string { return "wait, what?" },
		func() string { return "ha" },
		func() string { return "roll? sixteen." },
		func() string { return "I follow " + choose(rng, npcs).first + "." },
		func() string { return "Do I know " + choose(rng, npcs).first + "?" },
		func() string { return "brb, tea" },
		func() string { return "Insight check... eleven." },
		func() string { return "I go sit by the fire in " + choose(rng, rooms) + "." },
	}
	start := time.Date(2026, 1, 9, 20, 0, 0, 0, time.UTC)
	for s := range sessions {
		var ls []line
		if s > 0 {
			var b strings.Builder
			b.WriteString("Previously on Snowbound: ")
			for t := range s {
				a, c := choose(rng, npcs), choose(rng, npcs)
				fmt.Fprintf(&b, "session %d, %s %s %s and %s %s in %s", t+1, choose(rng, []string{"we met", "we talked to", "we spied on"}),
					a.title, a.first, c.title, c.first, choose(rng, rooms))
				for _, ev := range events[t] {
					b.WriteString("; " + ev)
				}
				b.WriteString(". ")
			}
			ls = append(ls, line{pcs[0].id, strings.TrimSpace(b.String())})
		}
		// The GM's monologue: the planned sentences among a dozen of filler.
		sents := make([]string, 0, 24)
		for range 14 + rng.IntN(9) {
			sents = append(sents, filler[rng.IntN(len(filler))]())
		}
		for _, m := range monologue[s] {
			i := rng.IntN(len(sents) + 1)
			sents = slices.Insert(sents, i, m)
		}
		ls = append(ls, line{"", strings.Join(sents, " ")})
		gaps := make([]int, len(planned[s])+1)
		for range 18 {
			gaps[rng.IntN(len(gaps))]++
		}
		for i := range gaps {
			for range gaps[i] {
				if rng.IntN(3) == 0 {
					ls = append(ls, line{"", filler[rng.IntN(len(filler))]()})
				} else {
					ls = append(ls, line{choose(rng, pcs).id, interject[rng.IntN(len(interject))]()})
				}
			}
			if i < len(planned[s]) {
				ls = append(ls, planned[s][i])
			}
		}
		sid := fmt.Sprintf("a%d", s+1)
		at := start.AddDate(0, 0, 7*s)
		se := campaignfile.Session{ID: sid, StartedAt: at}
		for i, x := range ls {
			e := campaignfile.Entry{ID: fmt.Sprintf("%s-%03d", sid, i+1), Text: x.text,
				At: at.Add(time.Duration(15+25*i) * time.Second), DurationMS: 2500}
			switch {
			case x.speaker == "":
				e.SpeakerID, e.SpeakerName = "u-gm", "GM"
			case strings.HasPrefix(x.speaker, "pc-"):
				name := strings.ToUpper(x.speaker[3:4]) + x.speaker[4:]
				e.SpeakerID, e.SpeakerName = "u-"+name, name
			default:
				for _, n := range npcs {
					if n.id == x.speaker {
						e.SpeakerID, e.SpeakerName, e.NPCID = n.id, n.name, n.id
					}
				}
			}
			se.Entries = append(se.Entries, e)
		}
		se.EndedAt = at.Add(time.Duration(15+25*len(ls)+10) * time.Second)
		f.Sessions = append(f.Sessions, se)
	}
	return f, qs
}
