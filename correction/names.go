package correction

import (
	"context"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Mention is a name found in corrected text: an entity's name or alias,
// or a near miss stage 1 would restore.
type Mention struct {
	EntityID string
	// Start and End are byte offsets of the matched words in the text.
	Start, End int
	Score      float64
}

// nameIndex is the entities' names and aliases, lower-case, longest first,
// for whole-word lookup.
type nameIndex []nameEntry

type nameEntry struct{ id, lower string }

func newNameIndex(es []Entity) nameIndex {
	var ix nameIndex
	for _, e := range es {
		for _, n := range append([]string{e.Name}, e.Aliases...) {
			if strings.TrimSpace(n) != "" {
				ix = append(ix, nameEntry{e.ID, strings.ToLower(n)})
			}
		}
	}
	sort.SliceStable(ix, func(i, j int) bool { return len(ix[i].lower) > len(ix[j].lower) })
	return ix
}

// FindNames finds the pipeline's entities in text: names and aliases as
// whole words (longest first), then the near misses stage 1 would restore.
// Mentions do not overlap and come in text order. It is the one name
// finder of glyphoxa: addressing an NPC, the session's name index and the
// correction of live speech all use it, so they agree on what a name is.
func (p *Pipeline) FindNames(text string) []Mention {
	lower := strings.ToLower(text)
	if len(lower) != len(text) {
		lower = text // offsets must stay those of text
	}
	taken := make([]bool, len(text))
	var out []Mention
	mark := func(s, e int, id string, score float64) {
		for i := s; i < e; i++ {
			if taken[i] {
				return
			}
		}
		for i := s; i < e; i++ {
			taken[i] = true
		}
		out = append(out, Mention{EntityID: id, Start: s, End: e, Score: score})
	}
	if ix := p.names.Load(); ix != nil {
		for _, n := range *ix {
			for from := 0; from < len(lower); {
				k := strings.Index(lower[from:], n.lower)
				if k < 0 {
					break
				}
				s, e := from+k, from+k+len(n.lower)
				from = e
				if wordEdge(lower, s-1) && wordEdge(lower, e) {
					mark(s, e, n.id, 1)
				}
			}
		}
	}
	for _, sub := range p.Correct(Utterance{Text: text}).Substitutions {
		mark(sub.Start, sub.End, sub.EntityID, sub.Score)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// wordEdge reports whether byte i of s is outside a word.
func wordEdge(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r)
}

// CorrectHeard restores the names in what speech-to-text heard: stage 1
// always, stage 2 (bounded by the LLM corrector's timeout) when one is
// configured. When stage 2 fails, stage 1's result stands and the error
// says why.
func (p *Pipeline) CorrectHeard(ctx context.Context, u Utterance) (Result, error) {
	res := p.Correct(u)
	if !p.HasLLM() {
		return res, nil
	}
	return p.Refine(ctx, u, res)
}
