package scene

import (
	"strings"
	"unicode"

	"github.com/glyphoxa/glyphoxa/correction"
)

// Summary sums up what the table made of a scene's spoken lines.
type Summary struct {
	// Spoken lines were synthesised and recognised (no heard: text).
	Spoken int
	// Words and Errors give the word error rate of recognition over the
	// spoken lines (substitutions, insertions and deletions, against what
	// the script said), after name correction.
	Words, Errors int
	// Names said in the spoken lines, and how many of them the corrected
	// line kept.
	Names, NamesHeard int
	// Addressed lines, and how many an NPC answered.
	Addressed, Answered int
}

// WER is the word error rate.
func (s Summary) WER() float64 {
	if s.Words == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Words)
}

// Summarize sums up a play's lines; names are the campaign's entities.
func Summarize(lines []LineEvent, names []correction.Entity) Summary {
	var s Summary
	for _, l := range lines {
		if l.Addressee != "" {
			s.Addressed++
			if l.Reply != "" {
				s.Answered++
			}
		}
		if !l.Spoken || l.Said == "" {
			continue
		}
		said, got := words(l.Said), words(l.Corrected)
		s.Spoken++
		s.Words += len(said)
		s.Errors += editDistance(said, got)
		gotText := " " + strings.Join(got, " ") + " "
		saidText := " " + strings.Join(said, " ") + " "
		for _, e := range names {
			for _, n := range append([]string{e.Name}, e.Aliases...) {
				w := " " + strings.Join(words(n), " ") + " "
				if len(w) > 2 && strings.Contains(saidText, w) {
					s.Names++
					if strings.Contains(gotText, w) {
						s.NamesHeard++
					}
					break
				}
			}
		}
	}
	return s
}

// words are the lower-case words of s, without punctuation.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
}

// editDistance is the word-level Levenshtein distance.
func editDistance(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
