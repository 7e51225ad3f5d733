package memory

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
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
// without a leading "the", also spelt with letters a reader takes for
// the Latin ones ([FoldLookalikes]: "DМ" with a Cyrillic М, fullwidth,
// mathematical or enclosed letters, small capitals, accents).
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

// lookalikes are letters of other scripts drawn like Latin letters, as
// Unicode's confusables list them, for the letters a nickname imitates: the
// Cyrillic and Greek ones, Latin small capitals (ᴅᴍ), and the Lisu and
// Cherokee capitals (ꓓꓟ, ᎠᎷ). None of them decomposes under NFKD.
var lookalikes = map[rune]rune{
	'А': 'A', 'В': 'B', 'С': 'C', 'Е': 'E', 'Н': 'H', 'І': 'I', 'Ј': 'J', 'К': 'K', 'М': 'M', 'О': 'O', 'Р': 'P',
	'Ѕ': 'S', 'Т': 'T', 'Х': 'X', 'Ү': 'Y',
	'а': 'a', 'с': 'c', 'е': 'e', 'і': 'i', 'ј': 'j', 'о': 'o', 'р': 'p', 'х': 'x', 'у': 'y', 'м': 'm', 'т': 't',
	'н': 'h', 'г': 'r', 'ԁ': 'd', 'ѕ': 's', 'һ': 'h', 'ԛ': 'q', 'ԝ': 'w',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P',
	'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	'α': 'a', 'ε': 'e', 'ι': 'i', 'ο': 'o', 'υ': 'u', 'ν': 'v', 'ɡ': 'g', 'ց': 'g', 'ո': 'n', 'ս': 'u', 'օ': 'o',
	// Latin small capitals.
	'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k', 'ʟ': 'l',
	'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴠ': 'v', 'ᴡ': 'w', 'ʏ': 'y',
	'ᴢ': 'z',
	// Lisu.
	'ꓐ': 'B', 'ꓑ': 'P', 'ꓓ': 'D', 'ꓔ': 'T', 'ꓖ': 'G', 'ꓗ': 'K', 'ꓙ': 'J', 'ꓚ': 'C', 'ꓜ': 'Z', 'ꓝ': 'F', 'ꓟ': 'M',
	'ꓠ': 'N', 'ꓡ': 'L', 'ꓢ': 'S', 'ꓣ': 'R', 'ꓦ': 'V', 'ꓧ': 'H', 'ꓪ': 'W', 'ꓫ': 'X', 'ꓬ': 'Y', 'ꓮ': 'A', 'ꓰ': 'E',
	'ꓲ': 'I', 'ꓳ': 'O', 'ꓴ': 'U',
	// Cherokee (its small letters are folded to these first).
	'Ꭰ': 'D', 'Ꭺ': 'A', 'Ꭼ': 'E', 'Ꮐ': 'G', 'Ꮋ': 'H', 'Ꮇ': 'M', 'Ꮢ': 'R', 'Ꭲ': 'T', 'Ꮪ': 'S', 'Ꮤ': 'W', 'Ꮯ': 'C',
	'Ꮓ': 'Z', 'Ꮮ': 'L', 'Ꮲ': 'P', 'Ᏼ': 'B', 'Ꮶ': 'K', 'Ꮩ': 'V', 'Ꭻ': 'J', 'Ꮃ': 'W',
}

// FoldLookalikes spells s with Latin letters wherever a reader would read
// Latin ones, for comparing names ("Grimjаw" with a Cyrillic а is
// "Grimjaw"), so that names compared after it cannot be told apart by
// letters a reader does not see. It
//   - applies Unicode's compatibility decomposition (NFKD): fullwidth
//     (ＤＭ), mathematical (𝐃𝐌), enclosed and parenthesized (ⒹⓂ, ⒟⒨),
//     squared (🄳🄼), modifier (ᴰᴹ) and letterlike (ℊℳ) letters and Roman
//     numerals (ⅮⅯ) become the letters they are drawn as;
//   - drops the accents on Latin letters ("Gáme Mäster", "ḊṀ", a combining
//     stroke): a reader takes them for the same name;
//   - spells the letters of other scripts drawn like Latin ones (see
//     lookalikes) and the negative enclosed letters and regional indicator
//     symbols (🅳🅼, 🇩) as those;
//
// and composes the rest again (NFC). Letters of other scripts, and Latin
// letters that are not a base letter with an accent (Ł, Æ, ß), stay as
// they are: "Łukasz", "ガイ" and "김민수" come back unchanged.
func FoldLookalikes(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	latin := false // the last letter written is a Latin one: its accents go
	for _, r := range norm.NFKD.String(s) {
		if latin && unicode.Is(unicode.Mn, r) {
			continue
		}
		r = latinLookalike(r)
		latin = unicode.Is(unicode.Latin, r)
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

// latinLookalike maps a letter or symbol drawn like a Latin letter (see
// lookalikes, and the negative enclosed letters and regional indicators)
// to the Latin letter; other runes are left as they are.
func latinLookalike(r rune) rune {
	switch {
	case r >= 0x1F150 && r <= 0x1F169: // negative circled capital letters
		return r - 0x1F150 + 'A'
	case r >= 0x1F170 && r <= 0x1F189: // negative squared capital letters
		return r - 0x1F170 + 'A'
	case r >= 0x1F1E6 && r <= 0x1F1FF: // regional indicator symbols
		return r - 0x1F1E6 + 'A'
	case r >= 0xAB70 && r <= 0xABBF: // Cherokee small letters
		r = r - 0xAB70 + 0x13A0
	}
	if l, ok := lookalikes[r]; ok {
		return l
	}
	return r
}
