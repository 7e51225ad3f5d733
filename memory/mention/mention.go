// Package mention finds the knowledge-graph entities a text talks about.
//
// A [Matcher] is built once from a campaign's entities. [Matcher.Find]
// recognises full names and aliases, and the distinctive words of longer
// names when they are written as proper nouns ("Mirabel" for "Queen
// Mirabel"); chunking uses it to link transcript spans to entities.
// [Matcher.Seeds] is looser, for questions typed or spoken by players: it
// also accepts lower-case name words, spellings that sound alike (Double
// Metaphone) and near misses (Jaro-Winkler), each with a lower score.
package mention

import (
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/antzucaro/matchr"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Scores of the ways a query can name an entity.
const (
	ScoreExact    = 1.0
	ScorePartial  = 0.7
	ScorePhonetic = 0.6
	ScoreFuzzy    = 0.5
)

// Match is an entity named in a text.
type Match struct {
	EntityID string
	// Score is 1 for a full name or alias, lower for looser matches.
	Score float64
}

type name struct {
	entity string
	tokens []string
}

// Matcher recognises the entities of one campaign in text. It is immutable
// and safe for concurrent use.
type Matcher struct {
	byFirst map[string][]name // full names and aliases by first token
	// words maps a distinctive word of a multi-word name to its entity.
	words map[string]string
	// heads are the distinctive last words of multi-word names ("manor"
	// of "Corwen Manor").
	heads map[string]bool
	// phon maps the Double Metaphone codes of single name words (at least
	// four letters) to their entities and spellings.
	phon  map[string][]wordRef
	vocab []wordRef
	// fuzzy indexes vocab for near spellings.
	fuzzy *fuzzyIndex
}

type wordRef struct {
	entity, word string
}

// genericWords never identify an entity on their own, even inside a name.
var genericWords = map[string]bool{
	"the": true, "of": true, "a": true, "an": true, "and": true, "old": true, "new": true, "great": true,
	"lord": true, "lady": true, "king": true, "queen": true, "sir": true, "master": true, "mistress": true,
	"captain": true, "brother": true, "sister": true, "father": true, "mother": true, "saint": true,
	"house": true, "clan": true, "guild": true, "order": true, "tower": true, "inn": true, "tavern": true,
	"city": true, "town": true, "village": true, "temple": true, "north": true, "south": true, "east": true,
	"west": true, "black": true, "red": true, "white": true, "little": true, "big": true, "young": true,
}

// NewMatcher builds a matcher over entities' names and aliases.
func NewMatcher(entities []memory.Entity) *Matcher {
	size := len(entities)
	m := &Matcher{byFirst: make(map[string][]name, size), words: make(map[string]string, size),
		heads: map[string]bool{}, phon: make(map[string][]wordRef, 2*size)}
	// wordOwners maps each name word to the one entity whose names use it,
	// or to manyOwners when several do.
	const manyOwners = "\x00many"
	wordOwners := make(map[string]string, 2*size)
	for _, e := range entities {
		for _, n := range append([]string{e.Name}, e.Aliases...) {
			toks := lowerTokens(n)
			if len(toks) == 0 {
				continue
			}
			m.byFirst[toks[0]] = append(m.byFirst[toks[0]], name{entity: e.ID, tokens: toks})
			if len(toks) > 1 {
				m.heads[toks[len(toks)-1]] = true
			}
			for _, t := range toks {
				if o, ok := wordOwners[t]; !ok {
					wordOwners[t] = e.ID
				} else if o != e.ID {
					wordOwners[t] = manyOwners
				}
			}
		}
	}
	for w, id := range wordOwners {
		if id == manyOwners || genericWords[w] || utf8.RuneCountInString(w) < 3 {
			continue
		}
		m.words[w] = id
		m.vocab = append(m.vocab, wordRef{entity: id, word: w})
		if utf8.RuneCountInString(w) >= 4 {
			p1, p2 := matchr.DoubleMetaphone(w)
			for _, p := range []string{p1, p2} {
				if p != "" {
					m.phon[p] = append(m.phon[p], wordRef{entity: id, word: w})
				}
			}
		}
	}
	sort.Slice(m.vocab, func(i, j int) bool { return m.vocab[i].word < m.vocab[j].word })
	m.fuzzy = newFuzzyIndex(m.vocab)
	// Longest names first, so "Old Tom Bombadil" wins over "Tom".
	for k, ns := range m.byFirst {
		sort.SliceStable(ns, func(i, j int) bool { return len(ns[i].tokens) > len(ns[j].tokens) })
		m.byFirst[k] = ns
	}
	return m
}

type token struct {
	lower   string
	capital bool
}

func tokens(text string) []token {
	var out []token
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		r := []rune(f)
		out = append(out, token{lower: strings.ToLower(f), capital: unicode.IsUpper(r[0])})
	}
	return out
}

func lowerTokens(text string) []string {
	var out []string
	for _, t := range tokens(text) {
		out = append(out, t.lower)
	}
	return out
}

// Find returns the ids of the entities text names, in order of first
// mention: full names and aliases in any case, and distinctive words of
// multi-word names when capitalised.
func (m *Matcher) Find(text string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	toks := tokens(text)
	for i := 0; i < len(toks); {
		if n, ok := m.fullAt(toks, i); ok {
			add(n.entity)
			i += len(n.tokens)
			continue
		}
		if id, ok := m.words[toks[i].lower]; ok && toks[i].capital {
			add(id)
		} else if ok && m.heads[toks[i].lower] && i > 0 && toks[i-1].lower == "the" && len(toks[i].lower) >= 5 {
			// "the lighthouse" for Blackreef Lighthouse: the last word of
			// only one entity's name, used as a definite noun.
			add(id)
		}
		i++
	}
	return out
}

func (m *Matcher) fullAt(toks []token, i int) (name, bool) {
	for _, n := range m.byFirst[toks[i].lower] {
		if i+len(n.tokens) > len(toks) {
			continue
		}
		ok := true
		for j, t := range n.tokens {
			if toks[i+j].lower != t {
				ok = false
				break
			}
		}
		if ok {
			return n, true
		}
	}
	return name{}, false
}

// Seeds returns the entities a question names, best first, each with the
// score of its best match: full names and aliases, distinctive name words
// in any case, words that sound like a name word, and near spellings. A
// word that sounds like, or is spelled near, several entities' names gives
// each its share of the score.
func (m *Matcher) Seeds(text string) []Match {
	return m.seeds(text, m.fuzzyIndexed)
}

// seeds is Seeds with near spellings found by fuzzy, which returns the
// positions in m.vocab of the words close to a question word, in order.
func (m *Matcher) seeds(text string, fuzzy func(string) []int) []Match {
	best := map[string]float64{}
	var order []string
	add := func(id string, s float64) {
		if _, ok := best[id]; !ok {
			order = append(order, id)
		}
		if s > best[id] {
			best[id] = s
		}
	}
	toks := tokens(text)
	for i := 0; i < len(toks); i++ {
		if n, ok := m.fullAt(toks, i); ok {
			add(n.entity, ScoreExact)
			i += len(n.tokens) - 1
			continue
		}
		w := strings.TrimSuffix(toks[i].lower, "s")
		if id, ok := m.words[toks[i].lower]; ok {
			add(id, ScorePartial)
			continue
		}
		if id, ok := m.words[w]; ok && len(w) >= 4 {
			add(id, ScorePartial)
			continue
		}
		if len([]rune(toks[i].lower)) < 4 || stop[toks[i].lower] {
			continue
		}
		// A word that only sounds like a name, or is spelled near one,
		// names one entity at most: when it could be several, the belief
		// that it names each is shared among them (a common word such as
		// "dragon" sounding like eighty-five "Drak…" names names none of
		// them with any confidence).
		var loose []string
		p1, p2 := matchr.DoubleMetaphone(toks[i].lower)
		for _, p := range []string{p1, p2} {
			for _, ref := range m.phon[p] {
				if p != "" && matchr.JaroWinkler(toks[i].lower, ref.word, false) >= 0.75 && !slices.Contains(loose, ref.entity) {
					loose = append(loose, ref.entity)
				}
			}
		}
		score := ScorePhonetic
		if len(loose) == 0 {
			score = ScoreFuzzy
			for _, j := range fuzzy(toks[i].lower) {
				if !slices.Contains(loose, m.vocab[j].entity) {
					loose = append(loose, m.vocab[j].entity)
				}
			}
		}
		for _, id := range loose {
			add(id, score/float64(len(loose)))
		}
	}
	out := make([]Match, 0, len(order))
	for _, id := range order {
		out = append(out, Match{EntityID: id, Score: best[id]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

// stop are question words that must not be fuzzily matched to names.
var stop = map[string]bool{
	"what": true, "where": true, "when": true, "which": true, "whom": true, "whose": true, "there": true,
	"they": true, "their": true, "them": true, "that": true, "this": true, "these": true, "those": true,
	"with": true, "from": true, "have": true, "does": true, "did": true, "about": true, "after": true,
	"before": true, "first": true, "last": true, "party": true, "were": true, "been": true, "into": true,
}
