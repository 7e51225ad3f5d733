package correction

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

//go:embed commonwords.txt
var commonWordsText string

//go:embed commonwords_de.txt
var commonWordsGerman string

// dictionaryGerman is the general German word list, written for glyphoxa
// (see README.md): nouns capitalised, every other word in lower case.
//
//go:embed dictwords_de.txt
var dictionaryGerman string

// dictionaryText is a general English word list, one lower-case word a
// line in byte order, inflected forms included (see README.md).
//
//go:embed dictwords.txt
var dictionaryText string

// stopWords are function words. A name window may not begin or end with one
// unless the name itself does ("Tower of Whispers" may contain "of"; "to
// elder nacks" is not a name).
var stopWords = []string{
	"a", "an", "the", "and", "or", "but", "nor", "so", "if", "then", "than", "that", "this", "these", "those",
	"i", "me", "my", "you", "your", "he", "him", "his", "she", "her", "it", "its", "we", "us", "our", "they", "them", "their",
	"to", "of", "in", "on", "at", "by", "for", "with", "from", "into", "onto", "up", "down", "out", "off", "over", "under",
	"is", "are", "was", "were", "be", "been", "am", "do", "does", "did", "have", "has", "had",
	"will", "would", "can", "could", "should", "shall", "may", "might", "must",
	"not", "no", "yes", "what", "who", "where", "when", "why", "how", "which",
	"there", "here", "just", "also", "too", "very", "all", "some", "any", "about", "like", "as",
	"im", "its", "dont", "lets", "thats", "oh", "uh", "um", "okay", "ok", "yeah",
}

// germanStopWords are the German function words.
var germanStopWords = []string{
	"der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines",
	"dies", "diese", "dieser", "dieses", "diesen", "diesem", "kein", "keine", "keinen", "keinem", "keiner",
	"und", "oder", "aber", "denn", "doch", "wenn", "weil", "dass", "ob", "als", "wie", "wo", "wer", "was",
	"ich", "du", "er", "sie", "es", "wir", "ihr", "mich", "dich", "sich", "uns", "euch", "ihn", "ihm", "ihnen", "mir", "dir",
	"mein", "meine", "dein", "deine", "sein", "seine", "unser", "unsere",
	"in", "im", "an", "am", "auf", "aus", "bei", "mit", "nach", "von", "vom", "zu", "zum", "zur", "für", "über", "unter", "vor",
	"ist", "sind", "war", "bin", "bist", "hat", "haben", "hatte", "wird", "kann", "muss", "soll", "will",
	"nicht", "nein", "ja", "auch", "noch", "schon", "nur", "so", "da", "hier", "dort", "mal",
	"alle", "alles", "mehr", "äh", "ähm", "oh", "ach", "okay", "ok",
}

// Language is a campaign's spoken language, as it selects the correction
// word lists.
type Language string

// Languages with word lists.
const (
	English Language = "en"
	German  Language = "de"
)

// ParseLanguage maps a BCP-47 code ("de", "de-AT", "en-US", "") to a
// language with word lists: English for the empty code. Any other language
// is an error naming it.
func ParseLanguage(code string) (Language, error) {
	base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(code)), "-")
	base, _, _ = strings.Cut(base, "_")
	switch base {
	case "", "en":
		return English, nil
	case "de":
		return German, nil
	}
	return "", fmt.Errorf("correction word lists for language %q: %w", code, ErrLanguage)
}

// ErrLanguage is wrapped by the error of a language without word lists.
var ErrLanguage = errors.New("no word lists for this language (have en, de)")

// wordList is the vocabulary the common-word guard consults: the
// hand-written list of everyday and tabletop words (with their regular
// inflections), the general dictionary, and the function words.
type wordList struct {
	lang   Language
	common map[string]bool
	stop   map[string]bool
	// dict is the English dictionary; lex the German one, which tells
	// nouns from other words.
	dict     dictionary
	lex      map[string]lexKind
	suffixes []string
}

// lexKind says what a word of the German dictionary is: a noun (written
// capitalised), another word, or both ("Essen", "essen").
type lexKind uint8

const (
	lexWord lexKind = 1 << iota
	lexNoun
)

// Inflectional endings the common-word lookup strips, per language.
var (
	englishSuffixes = []string{"s", "es", "ed", "d", "ing", "ly", "er", "ers", "est", "y", "ies", "ied"}
	germanSuffixes  = []string{"e", "en", "er", "es", "em", "n", "s", "t", "st", "et", "te", "ten", "test"}
)

// dictionary is a sorted word list, one word a line, searched in place.
type dictionary string

// has reports whether w is a line of d.
func (d dictionary) has(w string) bool {
	lo, hi := 0, len(d)
	for lo < hi {
		mid := lo + (hi-lo)/2
		// The line around mid.
		start := strings.LastIndexByte(string(d[:mid]), '\n') + 1
		end := strings.IndexByte(string(d[mid:]), '\n')
		if end < 0 {
			end = len(d)
		} else {
			end += mid
		}
		switch line := string(d[start:end]); {
		case line == w:
			return true
		case line < w:
			lo = end + 1
		default:
			hi = start
		}
	}
	return false
}

// newWordList parses the embedded list of common words of lang plus extra,
// and the general dictionary of the language.
func newWordList(lang Language, extra []string) *wordList {
	wl := &wordList{lang: lang, common: map[string]bool{}, stop: map[string]bool{}}
	text, stops := commonWordsText, stopWords
	wl.dict, wl.suffixes = dictionary(dictionaryText), englishSuffixes
	if lang == German {
		text, stops = commonWordsGerman, germanStopWords
		wl.dict, wl.suffixes = "", germanSuffixes
		wl.lex = parseLexicon(dictionaryGerman)
	}
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, w := range strings.Fields(line) {
			wl.common[normalize(w)] = true
		}
	}
	for _, w := range extra {
		if n := normalize(w); n != "" {
			wl.common[n] = true
		}
	}
	for _, w := range stops {
		wl.stop[w] = true
		wl.common[w] = true
	}
	return wl
}

// parseLexicon reads a word list in the common-word style: words separated
// by spaces and lines, '#' to the end of a line a comment; a capitalised
// word is a noun.
func parseLexicon(text string) map[string]lexKind {
	lex := map[string]lexKind{}
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, w := range strings.Fields(line) {
			k := lexWord
			if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
				k = lexNoun
			}
			if n := normalize(w); n != "" {
				lex[n] |= k
			}
		}
	}
	return lex
}

// isKnown reports whether w (normalized) is a word of the language: a
// common one or any word of the dictionary ("glows", "rosin", "bastion").
// In German, a noun counts only where its case allows one (nounCase: the
// word is capitalised or begins the sentence); "rat" inside a sentence is
// not the noun Rat.
func (wl *wordList) isKnown(w string, nounCase bool) bool {
	if wl.isCommon(w) {
		return true
	}
	if wl.lex == nil {
		return wl.dict.has(w)
	}
	k := wl.lexKind(w)
	return k&lexWord != 0 || (nounCase && k&lexNoun != 0)
}

// hasDictionary reports whether the language has a general dictionary, so
// that a word on no list is no word of it.
func (wl *wordList) hasDictionary() bool { return wl.dict != "" || len(wl.lex) > 0 }

// lexKind looks w (normalized) up in the German dictionary, as it stands or
// as a regular inflection of an entry ("Wäldern" of "Wälder", "traut" of
// "trauen").
func (wl *wordList) lexKind(w string) lexKind {
	k := wl.lex[w]
	for _, suf := range wl.suffixes {
		stem, ok := strings.CutSuffix(w, suf)
		if !ok || len(stem) < 3 {
			continue
		}
		k |= wl.lex[stem] | wl.lex[stem+"en"] | wl.lex[stem+"n"]
	}
	// The participle of a regular verb: "gemerkt" of merken.
	if stem, ok := strings.CutPrefix(w, "ge"); ok && len(stem) >= 4 {
		if stem, ok = strings.CutSuffix(stem, "t"); ok {
			k |= wl.lex[stem+"en"] & lexWord
		}
	}
	return k
}

// verbForm reports whether w (normalized) is a German verb form with a
// personal or past ending ("traut" of trauen, "holt" of holen, "wendete")
// and returns the ending.
func (wl *wordList) verbForm(w string) (string, bool) {
	for _, suf := range germanVerbEndings {
		stem, ok := strings.CutSuffix(w, suf)
		if !ok || len(stem) < 2 {
			continue
		}
		if wl.lex[stem+"en"]&lexWord != 0 || wl.lex[stem+"n"]&lexWord != 0 {
			return suf, true
		}
	}
	return "", false
}

// germanVerbEndings are the personal and past endings of German verbs,
// longest first.
var germanVerbEndings = []string{"test", "ten", "tet", "te", "est", "st", "et", "t"}

// isCommon reports whether w (normalized) is a common word or a regular
// inflection of one ("whispering", "goblins", "quickly").
func (wl *wordList) isCommon(w string) bool {
	if wl.common[w] {
		return true
	}
	for _, suf := range wl.suffixes {
		stem, ok := strings.CutSuffix(w, suf)
		if !ok || len(stem) < 3 {
			continue
		}
		if wl.common[stem] {
			return true
		}
		if wl.lang == German {
			// "wendet" → "wenden", "teilte" → "teilen".
			if wl.common[stem+"en"] || wl.common[stem+"n"] {
				return true
			}
			continue
		}
		switch suf {
		case "ed", "ing", "er", "ers", "est":
			// "hoping" → "hope".
			if wl.common[stem+"e"] {
				return true
			}
		case "ies", "ied":
			// "spies" → "spy".
			if wl.common[stem+"y"] {
				return true
			}
		}
		// Doubled consonant: "stopped" → "stop".
		if n := len(stem); n >= 4 && stem[n-1] == stem[n-2] && wl.common[stem[:n-1]] {
			return true
		}
	}
	return false
}

// isStop reports whether w (normalized) is a function word.
func (wl *wordList) isStop(w string) bool { return wl.stop[w] }
