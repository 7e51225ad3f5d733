package witness

import (
	"cmp"
	"slices"
	"strings"

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
