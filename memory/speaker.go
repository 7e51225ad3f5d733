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
// any spacing or punctuation ("D.M."), with or without a leading "the".
// A recap takes such a line for the DM's narration and an NPC never
// retells it, so a live table gives such a label to the session's DM
// only: a player whose display name is one of these is labelled
// "<name> (player)".
func IsDMName(name string) bool {
	ws := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(ws) > 1 && ws[0] == "the" {
		ws = ws[1:]
	}
	return dmNames[strings.Join(ws, "")]
}
