package witness

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/glyphoxa/glyphoxa/memory/embed"
)

// conceptGroups are words of the table's everyday vocabulary that mean
// nearly the same thing, so that a question asked in other words ("which
// vessel…?") finds the line that used the first ones ("…captains the Grey
// Heron, a boat…") without an embedding model. Each group becomes one
// extra token of a line's stems. The list is English; it is a floor under
// Config.Embedder, not a replacement for it.
var conceptGroups = []string{
	"money coin coins gold silver copper payment pay paid price cost sum fee toll wage wages purse reward bounty",
	"boat ship vessel barge skiff ferry craft galley sloop",
	"moor moored dock docks docked berth anchor anchored pier harbor harbour wharf quay",
	"cousin kinswoman kinsman relative brother sister sibling mother father uncle aunt niece nephew family kin son daughter",
	"bed beds room rooms lodging lodgings quarters",
	"driver coachman wagoner teamster carter",
	"wagon cart carriage coach",
	"drunk drunkard drinks drinking tipsy",
	"cup goblet chalice mug tankard flagon",
	"rim lip edge brim",
	"boy girl lad lass child kid youth",
	"ravine gorge canyon gully",
	"teacher mentor tutor instructor",
	"missing vanished disappeared gone",
	"spear spearhead spearheads pike lance",
	"mercenary sellsword hireling",
	"captain chief leader commander boss",
	"cellar downstairs basement",
	"package parcel crate bundle delivery shipment",
	"steel iron metal ore",
	"smith smiths blacksmith forge",
	"hide hidden hid buried bury stash stashed conceal concealed",
	"cult cultist cultists acolyte acolytes robed",
	"ledger accounts books records",
	"track tracks prints footprints pawprints trail",
	"wolf wolves beast creature",
	"woods forest wood grove",
	"map chart",
	"treasure hoard loot",
	"axe sword blade weapon mace",
	"broke broken crack cracked snapped split",
	"tower spire",
	"collect fetch pickup",
	"guard guards watch watchmen",
	"stranger man fellow",
	"teacher master",
	"promise promised swear swore vow vowed",
	"sick ill fever plague",
	"healer cleric priest physician",
	"letter message note",
	"dead killed slain murdered",
	"thief thieves stole stolen robbed rob",
	"road path trail way",
	"castle keep fortress",
	"king queen crown baron duke lord",
}

// concepts maps a stem to its group's token.
var concepts = func() map[string]string {
	m := map[string]string{}
	for _, g := range conceptGroups {
		ws := strings.Fields(g)
		tok := "~" + ws[0]
		for _, w := range ws {
			if _, ok := m[embed.Stem(w)]; !ok {
				m[embed.Stem(w)] = tok
			}
		}
	}
	return m
}()

// conceptParts are the words of the concept groups long enough to be part
// of a compound, longest first.
var conceptParts = func() []string {
	var out []string
	for w := range concepts {
		if len(w) >= minCompoundPart {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(len(b), len(a)), cmp.Compare(a, b)) })
	return out
}()

// compoundConcepts appends to out the concepts of a compound whose start or
// end is a word of a group ("dockmaster": docks and master), the longest
// part at each end.
func compoundConcepts(out []string, w string) []string {
	var start, end bool
	for _, p := range conceptParts {
		if len(w) < len(p)+minCompoundPart-1 {
			continue
		}
		if !start && strings.HasPrefix(w, p) {
			out, start = append(out, concepts[p]), true
		}
		if !end && strings.HasSuffix(w, p) {
			out, end = append(out, concepts[p]), true
		}
	}
	return out
}

// focusPhrases are question words that say what kind of answer is wanted
// without naming it: "how much…?" asks for a price or a sum, whatever the
// line that holds it calls the money ("forty crowns"). Each adds its
// concept's token to the question's stems. English and German.
var focusPhrases = []struct{ phrase, concept string }{
	{"how much", "~money"},
	{"what price", "~money"},
	{"what does it cost", "~money"},
	{"wie viel", "~money"},
	{"wieviel", "~money"},
	{"was kostet", "~money"},
}

// whFocus are the question words that ask for a kind of answer the line
// that holds it marks by its shape, not by a word the question repeats:
// "where…?" a place (a line that puts something in, at, behind… something),
// "who…?" a person (a name, a kinsman, someone's thing), "how…?" a way or
// means (through, by way of, with). English and German. "How much…?" is
// the money focus above, not a means.
var whFocus = map[string]string{
	"where": "~place", "wo": "~place", "wohin": "~place", "woher": "~place",
	"who": "~person", "whom": "~person", "whose": "~person",
	"wer": "~person", "wem": "~person", "wen": "~person", "wessen": "~person",
	"how": "~means", "wie": "~means",
}

// placePrepositions put what follows them in a place (English and German).
var placePrepositions = map[string]bool{
	"in": true, "at": true, "on": true, "under": true, "behind": true, "beside": true, "near": true, "inside": true,
	"outside": true, "above": true, "below": true, "beneath": true, "by": true, "into": true, "across": true,
	"im": true, "am": true, "an": true, "auf": true, "unter": true, "hinter": true, "neben": true, "bei": true,
	"beim": true, "zwischen": true, "vor": true,
}

// germanOnly are the place prepositions that are English words of another
// kind ("I am", "an inn"): they put what follows in a place only before a
// capitalised noun ("am Nordtor", "an der Mauer").
var germanOnly = map[string]bool{"am": true, "an": true}

// meansWords say how something was done.
var meansWords = map[string]bool{
	"through": true, "via": true, "using": true, "with": true, "durch": true, "mit": true, "per": true,
}

// personConcepts are the concept groups of people.
var personConcepts = map[string]bool{
	"~cousin": true, "~boy": true, "~driver": true, "~mercenary": true, "~captain": true, "~stranger": true,
	"~guard": true, "~thief": true, "~healer": true, "~king": true, "~teacher": true, "~cult": true, "~smith": true,
}

// appendFocus adds the concept tokens of the focus phrases of question q
// to its stems qs (sorted), keeping them sorted and unique.
func appendFocus(qs []string, q string) []string {
	lq := " " + strings.Join(strings.FieldsFunc(strings.ToLower(q), notWord), " ") + " "
	added := false
	for _, f := range focusPhrases {
		if strings.Contains(lq, " "+f.phrase+" ") && !slices.Contains(qs, f.concept) {
			qs = append(qs, f.concept)
			added = true
		}
	}
	if added {
		slices.Sort(qs)
	}
	return qs
}

// questionFocus returns the focus tokens the question words of q ask for
// (see whFocus); none for a means when a focus phrase asks for money
// ("how much…?").
func questionFocus(q string) []string {
	var out []string
	money := len(appendFocus(nil, q)) > 0
	for _, w := range strings.FieldsFunc(strings.ToLower(q), notWord) {
		if c, ok := whFocus[w]; ok && !(money && c == "~means") {
			out = appendUnique(out, c)
		}
	}
	return out
}

// shapes returns the focus tokens the shape of a line earns (see whFocus):
// ~place for a place preposition before a content word, ~person for a name
// the campaign lacks (proper), a possessive or a word of a people group
// (st are the line's stems), ~means for a means word. They are kept apart
// from the stems: they count only for a question that asks for them.
func shapes(st []string, text string, proper []string) []string {
	fields := strings.FieldsFunc(text, notWord)
	var place, person, means bool
	person = len(proper) > 0
	for i, f := range fields {
		w := strings.ToLower(f)
		if placePrepositions[w] {
			for _, n := range fields[i+1 : min(len(fields), i+3)] {
				if embed.IsStopWord(strings.ToLower(n)) {
					continue
				}
				r, _ := utf8.DecodeRuneInString(n)
				place = place || !germanOnly[w] || unicode.IsUpper(r)
				break
			}
		}
		means = means || meansWords[w]
		if base, ok := strings.CutSuffix(w, "'s"); ok && len(base) > 2 && !embed.IsStopWord(base) {
			person = true
		}
	}
	for _, x := range st {
		person = person || personConcepts[x]
	}
	var out []string
	for _, c := range []struct {
		on  bool
		tok string
	}{{place, "~place"}, {person, "~person"}, {means, "~means"}} {
		if c.on {
			out = append(out, c.tok)
		}
	}
	return out
}
