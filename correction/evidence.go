package correction

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Evidence is what the caller knows of an utterance beyond its words. The
// common-word guard weighs it when every word of a window is an ordinary
// word of the campaign's language ("the gold", "sell a", "went dry"):
//
//   - a window with no content word of the name heard as such and at most
//     one ordinary content word ("the gold" for "the Guild", "sell a" for
//     Sela) becomes a name only when a word of it was heard with low
//     confidence or is capitalised inside an English sentence ("the Gold");
//   - a window of several ordinary content words ("went dry" for Wendry,
//     "grim jaw" for Grimjaw) becomes a name when a word of it was heard
//     with low confidence or is capitalised; else only when the name is in
//     play (mentioned recently or present in the scene; with InPlay nil,
//     unknown, the thresholds decide) and the words do not read as plain
//     English around them: after a determiner, subject pronoun or
//     auxiliary for a person's name ("open the hall door"), starting with
//     one of the commonest verbs ("went dry", "go rear"), or with an ending
//     the name lacks ("salt reached" for Saltreach);
//   - the name's own words in lower case ("the red lantern"), or with
//     another article or, in German, other endings ("den Kessel"), stay
//     unless a word is capitalised or uncertain.
//
// In German, a capitalised word among several is a noun, an ordinary word
// ("Korb in" is not Korbin). German has no general dictionary, so a window
// with a word its common list lacks becomes a name not in play only when a
// word was heard uncertainly.
//
// A recogniser's high confidence is no evidence against a name: it is as
// sure of "iron" and "hold" when the speaker said Ironhold.
//
// Windows holding a word that is no word of the language ("elder nacks"),
// or a content word of the name itself ("tide cord" for Tide Court), are
// left to the thresholds.
type Evidence struct {
	// InPlay holds the ids of the entities in play: recently mentioned or
	// present in the scene. Nil when unknown.
	InPlay map[string]bool
	// Confidences are the recogniser's confidences, one per word of the
	// text as the matcher splits it, or nil; a list of another length is
	// ignored.
	Confidences []float64
	// LowConfidence is the confidence below which a word counts as
	// uncertain (default DefaultLowConfidence).
	LowConfidence float64
}

// guardState is the evidence of one utterance as the guard reads it.
type guardState struct {
	inPlay map[string]bool
	low    float64
}

// evidenced reports whether the evidence lets window w become term t of
// entity e (see Evidence).
func (m *Matcher) evidenced(w *window, t *term, e *Entity, g *guardState) bool {
	id := e.ID
	content, shared := 0, false
	var low, caps bool
	for k := range w.words {
		inf := &w.info[k]
		low = low || (inf.conf >= 0 && inf.conf < g.low)
		caps = caps || inf.caps
	}
	if articleSwap(w, t, m.words) {
		// The name's words with another article ("den Kessel" for der
		// Kessel): the grammar of the sentence, not a mishearing.
		return low
	}
	if !w.allKnown {
		// A word that is no word of the language may be the name
		// misheard. Only a language with a general dictionary knows
		// that; without one (German), an unknown word may as well be
		// an ordinary word missing from the common list ("Gewinn"),
		// and a name not in play needs a word heard uncertainly.
		if !m.words.hasDictionary() && g.inPlay != nil {
			return g.inPlay[id] || low
		}
		return true
	}
	for k, x := range w.words {
		inf := &w.info[k]
		if inf.stop {
			continue
		}
		if slices.Contains(t.words, x) {
			shared = true
			continue
		}
		content++
	}
	if w.joined == t.joined && slices.Equal(w.words, t.words) {
		// The name's own words, in other case: nothing was misheard.
		// A name that is one ordinary word with function words ("the
		// guild" for the Guild) keeps the speaker's case; a phrase of
		// ordinary words ("the red lantern") does unless a word of it
		// was capitalised or uncertain.
		if content == 0 && countContent(t, m.words) == 1 {
			return false
		}
		return low || caps
	}
	if shared {
		return true
	}
	if content <= 1 {
		return low || caps
	}
	if low || caps {
		return true
	}
	// Several ordinary words and no sign but the name being in play
	// (with no scene set, every name is): the plain reading stands
	// when it reads as English around the window.
	if m.plainReading(w, t, e.Type == memory.EntityNPC || e.Type == memory.EntityPlayer) {
		return false
	}
	if g.inPlay == nil {
		return true
	}
	return g.inPlay[id]
}

// Closed word classes the plain-reading test reads (English).
var (
	// leadsNounPhrase are words after which the next words form a noun
	// phrase or a verb phrase, where a bare name (one without an
	// article of its own) does not stand: determiners, subject pronouns,
	// auxiliaries ("the hall door", "you go rear", "the salt reached").
	// Object pronouns ("tell her") and prepositions ("to") are not
	// among them: a name follows those.
	leadsNounPhrase = wordSet("the", "a", "an", "this", "that", "these", "those", "my", "your", "our", "their",
		"its", "every", "each", "some", "any", "no", "i", "you", "we", "they", "he", "she", "it",
		"will", "would", "can", "could", "shall", "should", "may", "might", "must", "do", "does", "did",
		"is", "are", "was", "were", "am", "be", "been", "have", "has", "had")
	// clauseVerbs are the commonest English verbs: a window that begins
	// with one is a clause ("go rear guard", "went dry") unless the name
	// begins with it.
	clauseVerbs = wordSet("go", "goes", "went", "gone", "get", "gets", "got", "come", "comes", "came",
		"take", "takes", "took", "make", "makes", "made", "give", "gives", "gave", "let", "lets", "put",
		"see", "sees", "saw", "say", "says", "said", "keep", "keeps", "kept", "run", "runs", "ran",
		"is", "are", "was", "were", "be", "been", "have", "has", "had", "do", "does", "did")
	// articles are the words a swap between which is grammar, not
	// mishearing (English and German).
	articles = wordSet("the", "a", "an", "der", "die", "das", "den", "dem", "des",
		"ein", "eine", "einen", "einem", "einer", "eines")
)

func wordSet(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// plainReading reports whether window w, all of whose words are ordinary
// words of an English sentence, reads as ordinary English rather than as
// name t: it follows a determiner, subject pronoun or auxiliary and t is a
// person's name (places, items and factions take articles: "the
// Tideglass"); it begins
// with one of the commonest verbs; or one of its words sounds like its
// piece of the name only with an ending the name lacks ("went dry" for
// Wendry, "salt reached" for Saltreach). A name misheard as ordinary words
// sounds like them piece by piece ("grim jaw", "tie rule").
func (m *Matcher) plainReading(w *window, t *term, person bool) bool {
	if m.lang == German {
		return m.plainGerman(w, t)
	}
	if person && w.before != "" && leadsNounPhrase[w.before] {
		return true
	}
	if clauseVerbs[w.words[0]] && w.words[0] != t.words[0] {
		return true
	}
	pieces, same := namePieces(w, t)
	if same {
		return false
	}
	if pieces == nil {
		return true
	}
	for k, x := range w.words {
		y := pieces[k]
		if x == y {
			continue
		}
		if !soundsAlike(w.info[k].codes, m.phon.codes(y)) {
			return true
		}
	}
	return false
}

// namePieces are the name's pieces, one for each of the window's words
// ("grim jaw" read against Grimjaw's "grim", "jaw"). same reports that the
// window is the name as written; nil pieces otherwise mean no cut of the
// name matches the window's words.
func namePieces(w *window, t *term) (pieces []string, same bool) {
	if w.joined == t.joined {
		return nil, true
	}
	if len(w.words) == len(t.words) {
		return t.words, false
	}
	return bestCut(w, t.joined), false
}

// plainGerman is plainReading for German, whose recognisers write nouns
// capitalised: a window that joins a noun to a lower-case content word
// ("Wald traut" for Waltraud, "Nebel fort" for Nebelfurt) is the sentence's
// noun and the next word, as the recogniser parsed it; and a verb form whose
// personal or past ending the name's piece lacks ("rein holt" for Reinhold,
// as "salt reached" for Saltreach) is the verb. A name misheard as pieces
// comes as pieces of one kind ("raben fels", "Stein Bach") with the name's
// own endings ("rein hold").
func (m *Matcher) plainGerman(w *window, t *term) bool {
	noun, lower := false, false
	for k := range w.words {
		inf := &w.info[k]
		switch {
		case inf.stop:
		case inf.noun:
			noun = true
		default:
			lower = true
		}
	}
	if noun && lower {
		return true
	}
	pieces, same := namePieces(w, t)
	if same {
		return false
	}
	if pieces == nil {
		return true
	}
	for k, x := range w.words {
		if x == pieces[k] || w.info[k].stop {
			continue
		}
		if end, ok := m.words.verbForm(x); ok && !strings.HasSuffix(pieces[k], end) {
			return true
		}
	}
	return false
}

// articleSwap reports whether w is t's words with one article in place of
// another ("den Kessel" for der Kessel, "a lantern" for the Lantern) or, in
// German, with other endings ("schwarze Kessel" for Schwarzer Kessel).
func articleSwap(w *window, t *term, wl *wordList) bool {
	if len(w.words) != len(t.words) || len(t.words) < 2 {
		return false
	}
	swapped, same := false, false
	for k, x := range w.words {
		y := t.words[k]
		switch {
		case x == y:
			same = true
		case articles[x] && articles[y]:
			swapped = true
		case wl.lang == German && (inflects(x, y) || inflects(y, x)):
			// German inflects the adjectives of a name ("im
			// schwarzen Kessel").
			swapped = true
		default:
			return false
		}
	}
	return swapped && same
}

// countContent counts the words of t that are not function words.
func countContent(t *term, wl *wordList) int {
	n := 0
	for _, x := range t.words {
		if !wl.isStop(x) {
			n++
		}
	}
	return n
}

// midSentence reports whether the word at byte start of text stands inside
// a sentence: not first, nor after ., !, ?, : or an opening quote.
func midSentence(text string, start int) bool {
	for i := start; i > 0; {
		p, size := utf8.DecodeLastRuneInString(text[:i])
		i -= size
		if unicode.IsSpace(p) {
			continue
		}
		switch p {
		case '.', '!', '?', ':', '"', '“', '«', '„', '(':
			return false
		}
		return true
	}
	return false
}

// WordSpans returns the byte offsets [start, end) of the words of text as
// the matcher splits them, so that a caller can line up per-word
// confidences ([Evidence.Confidences]).
func WordSpans(text string) [][2]int {
	toks := tokenize(text)
	out := make([][2]int, len(toks))
	for i, t := range toks {
		out[i] = [2]int{t.start, t.suffixEnd}
	}
	return out
}
