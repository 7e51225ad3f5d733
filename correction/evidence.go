package correction

import (
	"slices"
	"unicode"
	"unicode/utf8"
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
//     "grim jaw" for Grimjaw) becomes a name only when the name is in play
//     (mentioned recently or present in the scene), a word of it was heard
//     with low confidence or is capitalised; when in-play names are not
//     known (InPlay nil), the thresholds alone decide, as without evidence.
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
// entity id (see Evidence).
func (m *Matcher) evidenced(w *window, t *term, id string, g *guardState) bool {
	if !w.allKnown {
		return true
	}
	content, shared := 0, false
	var low, caps bool
	for k, x := range w.words {
		inf := &w.info[k]
		low = low || (inf.conf >= 0 && inf.conf < g.low)
		caps = caps || inf.caps
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
		// The name as written, in other case: a name that is one ordinary
		// word with function words ("the guild" for the Guild) keeps
		// the speaker's case unless it is in play.
		if content == 0 && countContent(t, m.words) == 1 {
			return false
		}
		return true
	}
	if shared {
		return true
	}
	if content <= 1 {
		return low || caps
	}
	if g.inPlay == nil {
		return true
	}
	return g.inPlay[id] || low || caps
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

// capitalised reports whether the word at byte start of text begins with
// an upper-case letter inside a sentence: not first, nor after ., !, ?, :
// or an opening quote.
func capitalised(text string, start int) bool {
	r, _ := utf8.DecodeRuneInString(text[start:])
	if !unicode.IsUpper(r) {
		return false
	}
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
