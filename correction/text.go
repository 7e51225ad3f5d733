package correction

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// token is one word of an utterance.
type token struct {
	// start and end are byte offsets of the word in the text, possessive
	// suffix excluded; suffixEnd includes it.
	start, end, suffixEnd int
	// norm is the word lower-cased with apostrophes and hyphens removed.
	norm string
	// possessive is true when the word ended in 's, which is kept out of
	// the match and put back after the replacement.
	possessive bool
}

// isApostrophe reports whether r is a straight or typographic apostrophe.
func isApostrophe(r rune) bool { return r == '\'' || r == '’' || r == 'ʼ' }

// isWordRune reports whether r can start or end a word.
func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// tokenize splits text into words. A word is a run of letters and digits,
// possibly joined by single apostrophes or hyphens ("Kel'thar", "Mor-Duin",
// "don't").
func tokenize(text string) []token {
	var toks []token
	i := 0
	for i < len(text) {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWordRune(r) {
			i += size
			continue
		}
		start := i
		end := i + size
		j := end
		for j < len(text) {
			r, size := utf8.DecodeRuneInString(text[j:])
			if isWordRune(r) {
				j += size
				end = j
				continue
			}
			if isApostrophe(r) || r == '-' {
				// A joiner counts only when a letter follows it.
				r2, size2 := utf8.DecodeRuneInString(text[j+size:])
				if j+size < len(text) && isWordRune(r2) {
					j += size + size2
					end = j
					continue
				}
			}
			break
		}
		toks = append(toks, newToken(text, start, end))
		i = end
	}
	return toks
}

// newToken builds the token for text[start:end], splitting off a
// possessive 's.
func newToken(text string, start, end int) token {
	t := token{start: start, end: end, suffixEnd: end}
	word := text[start:end]
	if n := len(word); n > 2 {
		last := word[n-1]
		if last == 's' || last == 'S' {
			r, size := utf8.DecodeLastRuneInString(word[:n-1])
			if isApostrophe(r) && n-1-size >= 2 {
				t.end = start + n - 1 - size
				t.possessive = true
			}
		}
	}
	t.norm = normalize(text[t.start:t.end])
	return t
}

// normalize lower-cases s and keeps only letters and digits.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if isWordRune(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// splitWords splits a name into normalized words ("Tower of Whispers" →
// tower, of, whispers; "Mor-Duin" → mor, duin).
func splitWords(name string) []string {
	f := strings.FieldsFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r == '-' || r == '_' })
	out := f[:0]
	for _, w := range f {
		if n := normalize(w); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// joinable reports whether the text between two words lets them form one
// name: only spaces and hyphens, no sentence punctuation.
func joinable(between string) bool {
	for _, r := range between {
		if !unicode.IsSpace(r) && r != '-' {
			return false
		}
	}
	return true
}
