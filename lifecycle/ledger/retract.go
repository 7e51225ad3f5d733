package ledger

import (
	"regexp"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
)

// reRetract finds a retraction: the table taking back what was just said
// ("no wait", "scratch that", "actually he didn't", "Thorin never gave",
// the DM's "retcon:"), of the speaker's own words or, the DM's, of
// anyone's (mayRetract). What follows it in its line still counts ("scratch
// that, take the rope instead"); what came before it does not.
var reRetract = regexp.MustCompile(`\b(?:(?i:no,?\s+wait|scratch\s+that|strike\s+that|forget\s+(?:that|i\s+said\s+that)|retcon\b\s*:?)|` +
	`(?i:actually),?\s+((?i:he|she|they|i|we|it)|\p{Lu}[\p{L}']*)\s+(?i:didn't|did\s+not|never|doesn't|does\s+not|won't|wasn't|kept|keeps|still\s+has)|` +
	`((?i:he|she|they)|I|\p{Lu}[\p{L}']*)\s+(?i:never\s+(?:gave|handed|passed|promised|swore|vowed|owed|made))\b)`)

// retraction is where line text takes back what was said, or -1. "You
// never gave me the money" is a complaint, not a retraction.
func retraction(text string) int {
	for _, m := range reRetract.FindAllStringSubmatchIndex(text, -1) {
		subject := ""
		for g := 1; g <= 2; g++ {
			if m[2*g] >= 0 {
				subject = strings.ToLower(text[m[2*g]:m[2*g+1]])
			}
		}
		if subject != "you" && subject != "you'd" {
			return m[0]
		}
	}
	return -1
}

// retractWindow is how many lines back a retraction reaches.
const retractWindow = 4

// notReferring are the words a retraction shares with an entry's what
// without naming it ("I'll keep it", "he never gave you anything").
var notReferring = map[string]bool{
	"i": true, "he": true, "she": true, "they": true, "we": true, "i'll": true, "he's": true, "she's": true,
	"will": true, "be": true, "is": true, "was": true, "not": true, "no": true, "just": true, "only": true,
	"all": true, "so": true, "then": true, "what": true, "at": true, "on": true, "in": true, "wait": true,
	"actually": true, "never": true, "that": true, "anything": true, "still": true, "has": true, "have": true,
}

// refers reports whether a retraction's text names what an entry is about.
func refers(text, what string) bool {
	in := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !isWord(r) }) {
		if !fillers[w] && !notReferring[w] {
			in[strings.TrimSuffix(w, "'s")] = true
		}
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(what), func(r rune) bool { return !isWord(r) }) {
		if !fillers[w] && !notReferring[w] && in[strings.TrimSuffix(w, "'s")] {
			return true
		}
	}
	return false
}

// retract takes back, from found (the entries of the lines before line i,
// in order), those the retraction in text refers to among the ones it may
// take back (may): the entries of the last retractWindow lines whose what
// it names, else those of the nearest line before it that has any. It
// returns what is kept and what was taken back.
func retract(found []Entry, i int, text string, may func(Entry) bool) (kept, taken []Entry) {
	reach := func(e Entry) bool { return e.Line >= i-retractWindow && may(e) }
	named := false
	for _, e := range found {
		if reach(e) && refers(text, e.What) {
			named = true
			break
		}
	}
	last := -1
	if !named {
		for _, e := range found {
			if reach(e) && e.Line > last {
				last = e.Line
			}
		}
	}
	for _, e := range found {
		switch {
		case !reach(e):
			kept = append(kept, e)
		case named && refers(text, e.What), !named && e.Line == last:
			taken = append(taken, e)
		default:
			kept = append(kept, e)
		}
	}
	return kept, taken
}

// mayRetract reports whether line by may take back what line of said: the
// DM's may take back anything, anyone else only their own words. A player
// saying "scratch that" after an NPC's "you owe me ten gold" does not wipe
// the debt.
func mayRetract(by, of memory.TranscriptEntry) bool {
	if memory.IsDMName(by.SpeakerName) {
		return true
	}
	if by.NPCID != "" || of.NPCID != "" {
		return by.NPCID == of.NPCID
	}
	if by.SpeakerID != "" && of.SpeakerID != "" {
		return by.SpeakerID == of.SpeakerID
	}
	return strings.EqualFold(by.SpeakerName, of.SpeakerName)
}
