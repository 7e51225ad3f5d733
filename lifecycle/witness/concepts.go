package witness

import (
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
