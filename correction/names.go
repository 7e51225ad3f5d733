package correction

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"
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
	// A line is searched for names several times in a turn (the
	// witness log, the mentions, addressing, recall); the names are
	// found once for the entities in force.
	key := memoKey{p.entities.Load(), p.names.Load()}
	if ms, ok := p.found.get(key, text); ok {
		return ms
	}
	ms := p.findNames(text, key)
	p.found.put(key, text, ms)
	return slices.Clone(ms)
}

// memoKey is the entities in force: both forms SetEntities stores.
type memoKey struct {
	prep *PreparedEntities
	ix   *nameIndex
}

// nameMemo remembers the names found in the last few texts, for one set of
// prepared entities; safe for concurrent use.
type nameMemo struct {
	mu    sync.Mutex
	key   memoKey
	texts []string
	found [][]Mention
}

// memoTexts is how many texts a nameMemo remembers.
const memoTexts = 16

// get returns a copy of the names found in text with key, if remembered.
func (n *nameMemo) get(key memoKey, text string) ([]Mention, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.key != key {
		return nil, false
	}
	for i, t := range n.texts {
		if t == text {
			return slices.Clone(n.found[i]), true
		}
	}
	return nil, false
}

// put remembers ms as the names of text with key, forgetting the oldest
// text when full and everything when the entities changed.
func (n *nameMemo) put(key memoKey, text string, ms []Mention) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.key != key {
		n.key, n.texts, n.found = key, n.texts[:0], n.found[:0]
	}
	if len(n.texts) == memoTexts {
		n.texts, n.found = slices.Delete(n.texts, 0, 1), slices.Delete(n.found, 0, 1)
	}
	n.texts, n.found = append(n.texts, text), append(n.found, ms)
}

// findNames finds the names of text with the entities of key.
func (p *Pipeline) findNames(text string, key memoKey) []Mention {
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
	if ix := key.ix; ix != nil {
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
	u := Utterance{Text: text}
	for _, sub := range p.matcher.MatchEvidence(text, key.prep, p.evidence(u)).Substitutions {
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
