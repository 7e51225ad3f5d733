package memory

import (
	"strings"
	"unicode"
)

// DMSpeaker is the speaker name of the DM's lines. A live table labels
// the lines of the session's DM with it and never a player's, whatever
// their display name (see [IsDMName]); a campaign file's lines by "DM"
// are the DM's own.
const DMSpeaker = "DM"

// dmNames are the speaker names read as the game master's, as [IsDMName]
// compares them.
var dmNames = map[string]bool{"dm": true, "gm": true, "gamemaster": true, "dungeonmaster": true, "narrator": true}

// IsDMName reports whether a speaker name is the game master's: "DM",
// "GM", "Game Master", "Dungeon Master" or "Narrator", in any case, with
// any spacing, punctuation or invisible characters ("D.M."), with or
// without a leading "the", also spelt with fullwidth letters or the
// Cyrillic and Greek letters that look like the Latin ones ("DМ" with a
// Cyrillic М), which a reader cannot tell apart.
// A recap takes such a line for the DM's narration and an NPC never
// retells it, so a live table gives such a label to the session's DM
// only: a player whose display name is one of these is labelled
// "<name> (player)".
func IsDMName(name string) bool {
	ws := strings.FieldsFunc(strings.ToLower(FoldLookalikes(name)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(ws) > 1 && ws[0] == "the" {
		ws = ws[1:]
	}
	return dmNames[strings.Join(ws, "")]
}

// lookalikes are Cyrillic and Greek letters drawn like the Latin letters
// of the game master's names.
var lookalikes = map[rune]rune{
	'А': 'A', 'Е': 'E', 'М': 'M', 'Н': 'H', 'О': 'O', 'Т': 'T', 'Ѕ': 'S',
	'а': 'a', 'е': 'e', 'о': 'o', 'м': 'm', 'т': 't', 'н': 'h', 'г': 'r', 'ԁ': 'd', 'ѕ': 's',
	'Α': 'A', 'Ε': 'E', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Τ': 'T', 'Η': 'H',
	'α': 'a', 'ε': 'e', 'ο': 'o', 'υ': 'u', 'ɡ': 'g', 'ց': 'g',
}

// FoldLookalikes spells s with Latin letters where it has fullwidth ones
// or Cyrillic and Greek letters drawn like them ("Grimjаw" with a Cyrillic
// а is "Grimjaw"): names compared after it cannot be told apart by letters
// a reader does not see.
func FoldLookalikes(s string) string { return strings.Map(latinLookalike, s) }

// latinLookalike maps a fullwidth Latin letter or a lookalike of a Latin
// letter (see lookalikes) to the Latin letter; other runes are left as
// they are.
func latinLookalike(r rune) rune {
	switch {
	case r >= 'Ａ' && r <= 'Ｚ':
		return r - 'Ａ' + 'A'
	case r >= 'ａ' && r <= 'ｚ':
		return r - 'ａ' + 'a'
	}
	if l, ok := lookalikes[r]; ok {
		return l
	}
	return r
}
