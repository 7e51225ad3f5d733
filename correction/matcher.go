package correction

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/antzucaro/matchr"
)

// Default thresholds of the matcher.
const (
	// DefaultPhoneticThreshold is the Jaro-Winkler similarity a window
	// needs when its Double Metaphone code agrees with a name's.
	DefaultPhoneticThreshold = 0.70
	// DefaultFuzzyThreshold is the similarity a window needs when no code
	// agrees.
	DefaultFuzzyThreshold = 0.85
	// DefaultStrongThreshold is the similarity a window made only of
	// common words needs ("iron hold" → "Ironhold").
	DefaultStrongThreshold = 0.93
	// DefaultEdgeThreshold is the similarity a window that begins or ends
	// with a function word needs ("the linder" → "Thalindra").
	DefaultEdgeThreshold = 0.94
	// DefaultInteriorThreshold is the similarity a window needs when a
	// function word the name lacks sits inside it ("pell in or" →
	// "Pellinore").
	DefaultInteriorThreshold = 0.95
	// DefaultMinLength is the fewest letters a window or name must have.
	DefaultMinLength = 3
)

// maxLengthDiff is how many letters a window may have more or fewer than a
// name of n letters: two, or a quarter of the name.
func maxLengthDiff(n int) int { return max(2, n/4) }

// minWordSimilarity is the Jaro-Winkler similarity each word of a window
// needs with its counterpart in a name of as many words, unless the two
// sound alike.
const minWordSimilarity = 0.6

// extraWords is how many more words than a name a misheard window may have
// ("Eldrinax" → "elder in ax").
const extraWords = 2

// Matcher restores misheard entity names (stage 1). It finds candidate
// names by Double Metaphone codes and ranks them by Jaro-Winkler
// similarity, testing word windows longest first. A Matcher is immutable
// and safe for concurrent use.
type Matcher struct {
	phonetic, fuzzy, strong, edge, interior float64
	minLen                                  int
	lang                                    Language
	extra                                   []string
	words                                   *wordList
	// phon remembers the Double Metaphone codes of the words and
	// windows heard: a table says the same words again and again, and
	// each line is matched several times (correction, addressing, the
	// name index).
	phon *codeCache
}

// codeCache is a bounded memo of Double Metaphone codes, safe for
// concurrent use. When full it starts over.
type codeCache struct {
	mu sync.Mutex
	m  map[string][2]string
}

// maxCachedCodes bounds a codeCache (some 100 kB).
const maxCachedCodes = 4096

// codes returns the Double Metaphone codes of s.
func (c *codeCache) codes(s string) [2]string {
	c.mu.Lock()
	v, ok := c.m[s]
	c.mu.Unlock()
	if ok {
		return v
	}
	v[0], v[1] = matchr.DoubleMetaphone(s)
	c.mu.Lock()
	if len(c.m) >= maxCachedCodes {
		clear(c.m)
	}
	c.m[strings.Clone(s)] = v
	c.mu.Unlock()
	return v
}

// MatcherOption configures a Matcher.
type MatcherOption func(*Matcher)

// WithPhoneticThreshold sets the similarity needed when Double Metaphone
// codes agree (default 0.70).
func WithPhoneticThreshold(t float64) MatcherOption { return func(m *Matcher) { m.phonetic = t } }

// WithFuzzyThreshold sets the similarity needed when no code agrees
// (default 0.85).
func WithFuzzyThreshold(t float64) MatcherOption { return func(m *Matcher) { m.fuzzy = t } }

// WithStrongThreshold sets the similarity needed to turn a phrase made only
// of common English words into a name (default 0.93).
func WithStrongThreshold(t float64) MatcherOption { return func(m *Matcher) { m.strong = t } }

// WithCommonWords adds words the common-word guard treats as ordinary
// speech (a group's own jargon, say).
func WithCommonWords(words ...string) MatcherOption {
	return func(m *Matcher) { m.extra = append(m.extra, words...) }
}

// WithLanguage chooses the word lists of the common-word guard: English
// (the default) or German. The lists decide which words are ordinary
// speech that is never rewritten into a name without evidence.
func WithLanguage(l Language) MatcherOption { return func(m *Matcher) { m.lang = l } }

// ErrThreshold is wrapped by the error of a threshold outside 0..1.
var ErrThreshold = errors.New("threshold must be between 0 and 1")

// NewMatcher returns a matcher with the given options.
func NewMatcher(opts ...MatcherOption) (*Matcher, error) {
	m := &Matcher{phonetic: DefaultPhoneticThreshold, fuzzy: DefaultFuzzyThreshold,
		strong: DefaultStrongThreshold, edge: DefaultEdgeThreshold, interior: DefaultInteriorThreshold, minLen: DefaultMinLength,
		phon: &codeCache{m: map[string][2]string{}}}
	for _, o := range opts {
		o(m)
	}
	switch m.lang {
	case "":
		m.lang = English
	case English, German:
	default:
		return nil, fmt.Errorf("matcher language %q: %w", m.lang, ErrLanguage)
	}
	m.words = newWordList(m.lang, m.extra)
	for _, t := range []struct {
		name string
		v    float64
	}{{"phonetic", m.phonetic}, {"fuzzy", m.fuzzy}, {"strong", m.strong}} {
		if t.v < 0 || t.v > 1 {
			return nil, fmt.Errorf("%s threshold %v: %w", t.name, t.v, ErrThreshold)
		}
	}
	return m, nil
}

// term is one spelling of an entity (its name or an alias), precomputed.
type term struct {
	entity int
	text   string
	words  []string
	spaced string
	joined string
	codes  [2]string
	// wordCodes are the Double Metaphone codes of each word.
	wordCodes [][2]string
	hist      letterHist
	// common is true when every word of the term is a common word.
	common bool
}

// PreparedEntities holds entity names with their phonetic codes computed
// once, for [Matcher.MatchPrepared]. It is immutable and safe for
// concurrent use.
type PreparedEntities struct {
	entities []Entity
	terms    []term
	// byCode maps a Double Metaphone code to the terms having it.
	byCode map[string][]int32
	// byFold maps a code whose first sound is folded (see foldCode) to
	// the terms whose codes begin with a sound that folds.
	byFold map[string][]int32
	// byFirst maps a first letter to its terms, shortest first (fuzzy
	// fallback).
	byFirst  map[byte][]int32
	maxWords int
	maxLen   int
}

// Entities returns the prepared entities.
func (p *PreparedEntities) Entities() []Entity { return slices.Clone(p.entities) }

// Len is the number of entities.
func (p *PreparedEntities) Len() int { return len(p.entities) }

// ErrNoName is wrapped by the error of an entity without an id or name.
var ErrNoName = errors.New("entity needs an id and a name")

// PrepareEntities precomputes the codes of every name and alias. Names
// shorter than the minimum length are kept out of matching.
func (m *Matcher) PrepareEntities(es []Entity) (*PreparedEntities, error) {
	p := &PreparedEntities{entities: slices.Clone(es), byCode: map[string][]int32{}, byFold: map[string][]int32{}, byFirst: map[byte][]int32{}}
	for i, e := range es {
		if strings.TrimSpace(e.ID) == "" || strings.TrimSpace(e.Name) == "" {
			return nil, fmt.Errorf("entity %d (id %q, name %q): %w", i, e.ID, e.Name, ErrNoName)
		}
		seen := map[string]bool{}
		for _, spelling := range append([]string{e.Name}, e.Aliases...) {
			words := splitWords(spelling)
			joined := strings.Join(words, "")
			if len(joined) < m.minLen || seen[joined] {
				continue
			}
			seen[joined] = true
			t := term{entity: i, text: strings.TrimSpace(spelling), words: words,
				spaced: strings.Join(words, " "), joined: joined, hist: histogram(joined), common: true}
			for _, w := range words {
				if !m.words.isCommon(w) {
					t.common = false
				}
			}
			t.codes[0], t.codes[1] = matchr.DoubleMetaphone(joined)
			if len(words) > 1 {
				t.wordCodes = make([][2]string, len(words))
				for k, w := range words {
					t.wordCodes[k][0], t.wordCodes[k][1] = matchr.DoubleMetaphone(w)
				}
			}
			idx := int32(len(p.terms))
			p.terms = append(p.terms, t)
			for k, c := range t.codes {
				if c != "" && (k == 0 || c != t.codes[0]) {
					p.byCode[c] = append(p.byCode[c], idx)
				}
				if f := foldCode(c); f != c || foldsTo(c) {
					if ids := p.byFold[f]; len(ids) == 0 || ids[len(ids)-1] != idx {
						p.byFold[f] = append(ids, idx)
					}
				}
			}
			p.byFirst[joined[0]] = append(p.byFirst[joined[0]], idx)
			p.maxWords = max(p.maxWords, len(words))
			p.maxLen = max(p.maxLen, len(joined))
		}
	}
	for _, ids := range p.byFirst {
		slices.SortFunc(ids, func(a, b int32) int { return cmp.Compare(len(p.terms[a].joined), len(p.terms[b].joined)) })
	}
	return p, nil
}

// Match corrects text against entities, preparing them first. Prefer
// [Matcher.PrepareEntities] and [Matcher.MatchPrepared] when matching many
// utterances.
func (m *Matcher) Match(text string, es []Entity) (Result, error) {
	p, err := m.PrepareEntities(es)
	if err != nil {
		return Result{Text: text, RawText: text}, err
	}
	return m.MatchPrepared(text, p), nil
}

// match is one candidate replacement of the tokens [i, j).
type match struct {
	i, j   int
	wlen   int  // letters in the window
	edge   bool // the window begins or ends with a function word the name lacks
	term   int32
	score  float64
	method string
}

// MatchPrepared corrects text against prepared entities, knowing nothing
// of the utterance beyond its words (see [Matcher.MatchEvidence]).
func (m *Matcher) MatchPrepared(text string, p *PreparedEntities) Result {
	return m.MatchEvidence(text, p, nil)
}

// MatchEvidence corrects text against prepared entities, weighing ev (nil
// for none) when ordinary words sit near a name: see [Evidence].
func (m *Matcher) MatchEvidence(text string, p *PreparedEntities, ev *Evidence) Result {
	res := Result{Text: text, RawText: text}
	if p == nil || len(p.terms) == 0 {
		return res
	}
	toks := tokenize(text)
	info := make([]wordInfo, len(toks))
	confs := ev != nil && len(ev.Confidences) == len(toks)
	for k, t := range toks {
		info[k] = wordInfo{common: m.words.isCommon(t.norm), stop: m.words.isStop(t.norm), conf: -1}
		mid := midSentence(text, t.start)
		r, _ := utf8.DecodeRuneInString(text[t.start:])
		info[k].known = info[k].common || m.words.isKnown(t.norm, !mid || unicode.IsUpper(r))
		info[k].codes = m.phon.codes(t.norm)
		if confs {
			info[k].conf = ev.Confidences[k]
		}
		caps := !info[k].stop && mid && unicode.IsUpper(r)
		info[k].caps = m.lang == English && caps
		info[k].noun = m.lang == German && caps
	}
	var g guardState
	if ev != nil {
		g.inPlay = ev.InPlay
		g.low = ev.LowConfidence
		if g.low == 0 {
			g.low = DefaultLowConfidence
		}
	}
	var cands []match
	var w window
	for i := range toks {
		// The longest window starting at i: names plus extra words, not
		// across punctuation or a possessive.
		maxJ := i + 1
		for maxJ < len(toks) && maxJ-i < p.maxWords+extraWords &&
			!toks[maxJ-1].possessive && joinable(text[toks[maxJ-1].suffixEnd:toks[maxJ].start]) {
			maxJ++
		}
		for j := maxJ; j > i; j-- {
			if !w.set(m, toks[i:j], info[i:j], p.maxLen) {
				continue
			}
			w.before = ""
			if i > 0 && joinable(text[toks[i-1].suffixEnd:toks[i].start]) {
				w.before = toks[i-1].norm
			}
			cands = m.candidates(cands, &w, i, j, p, &g)
		}
	}
	if len(cands) == 0 {
		return res
	}
	cands = dropOutfitted(cands, p)
	slices.SortStableFunc(cands, func(a, b match) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.j-b.i, a.j-a.i); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	taken := make([]bool, len(toks))
	var chosen []match
	for _, c := range cands {
		if slices.Contains(taken[c.i:c.j], true) {
			continue
		}
		for k := c.i; k < c.j; k++ {
			taken[k] = true
		}
		chosen = append(chosen, c)
	}
	slices.SortFunc(chosen, func(a, b match) int { return cmp.Compare(a.i, b.i) })
	var b strings.Builder
	last := 0
	for _, c := range chosen {
		t := &p.terms[c.term]
		start, end := toks[c.i].start, toks[c.j-1].end
		if text[start:end] == t.text {
			continue // already right
		}
		b.WriteString(text[last:start])
		b.WriteString(t.text)
		last = end
		res.Substitutions = append(res.Substitutions, Substitution{Start: start, End: end,
			Original: text[start:end], Replacement: t.text, EntityID: p.entities[t.entity].ID,
			Score: c.score, Stage: StagePhonetic, Method: c.method})
	}
	if len(res.Substitutions) > 0 {
		b.WriteString(text[last:])
		res.Text = b.String()
	}
	return res
}

// Slack of the choice between overlapping matches of one entity.
const (
	// nestedSlack is how much lower a longer spelling's score may be and
	// still win over a shorter spelling inside it.
	nestedSlack = 0.1
	// fitSlack is how much lower a match that fits the name's length
	// better may score and still win.
	fitSlack = 0.05
)

// fit is how many letters the window of c has more or fewer than its name.
func (c match) fit(p *PreparedEntities) int {
	d := c.wlen - len(p.terms[c.term].joined)
	return max(d, -d)
}

// overlaps reports whether two matches share a word.
func (c match) overlaps(d match) bool { return c.i < d.j && d.i < c.j }

// dropOutfitted removes a match when an overlapping match of the same
// entity explains the words better:
//   - a longer spelling around it, of the right length ("sir aldous ven" is
//     Ser Aldous Venn, even though "aldous" alone spells the alias), or
//   - a window of the same spelling closer to the name's length, scoring
//     about as well and not padded with a function word ("quen bee" is
//     Quenby; "quen" alone only looks closer because Jaro-Winkler rewards
//     the shared start).
func dropOutfitted(cands []match, p *PreparedEntities) []match {
	out := cands[:0]
	for _, c := range cands {
		tc := &p.terms[c.term]
		worse := false
		for _, d := range cands {
			td := &p.terms[d.term]
			if td.entity != tc.entity || !d.overlaps(c) {
				continue
			}
			nested := d.i <= c.i && d.j >= c.j && d.j-d.i > c.j-c.i && len(td.words) > len(tc.words) &&
				d.score >= c.score-nestedSlack && d.fit(p) <= maxLengthDiff(len(td.joined))/2
			better := d.term == c.term && !d.edge && d.fit(p) < c.fit(p) && d.score >= c.score-fitSlack &&
				!(c.edge && c.i <= d.i && c.j >= d.j)
			// A function word at the edge that carries a sound of the
			// name belongs to it ("vhal more a" is Vhalmora).
			voiced := d.term == c.term && d.edge && d.i <= c.i && d.j >= c.j && d.j-d.i > c.j-c.i && d.score >= c.score-fitSlack
			if nested || better || voiced {
				worse = true
				break
			}
		}
		if !worse {
			out = append(out, c)
		}
	}
	return out
}

// wordInfo is what the guard knows of one word of an utterance.
type wordInfo struct {
	// common: an everyday word; known: any English word, common or
	// rare; stop: a function word.
	common, known, stop bool
	codes               [2]string
	// conf is the recogniser's confidence in the word, -1 when unknown;
	// caps is true when the word is capitalised inside a sentence.
	conf float64
	caps bool
	// noun is true when the word is capitalised inside a German
	// sentence: German writes its nouns so, and a recogniser that split
	// a name into words wrote this one as the noun it heard ("Korb in").
	noun bool
}

// window is the words [i, j) of an utterance in the forms the scores use.
type window struct {
	words          []string
	info           []wordInfo
	joined, spaced string
	// codes are the Double Metaphone codes of joined, plus those of joined
	// with a final "er" read as a schwa ("vexer" → "vexa").
	codes     [4]string
	hist      letterHist
	phon      []int32
	allCommon bool
	anyCommon bool
	// anyKnown is true when a word of the window is an English word,
	// allKnown when all are.
	anyKnown, allKnown bool
	// before is the word just before the window in the same phrase
	// (normalized), "" at the start or after punctuation.
	before    string
	codeMemo  *codeCache
	firstStop bool
	lastStop  bool
}

// set fills w for toks and reports whether the window is worth matching.
func (w *window) set(m *Matcher, toks []token, info []wordInfo, maxLen int) bool {
	w.words = w.words[:0]
	n := 0
	for _, t := range toks {
		w.words = append(w.words, t.norm)
		n += len(t.norm)
	}
	if n < m.minLen || n > maxLen+maxLen/2+2 {
		return false
	}
	w.info = info
	w.allCommon, w.anyCommon, w.anyKnown, w.allKnown = true, false, false, true
	allStop := true
	for _, x := range info {
		// A German noun among several words is a word of the
		// language; alone, it may be a name the recogniser wrote
		// capitalised ("Holga").
		known := x.known || (x.noun && len(info) > 1)
		w.anyKnown = w.anyKnown || known
		w.allKnown = w.allKnown && known
		if x.common {
			w.anyCommon = true
		} else {
			w.allCommon = false
		}
		if !x.stop {
			allStop = false
		}
	}
	if allStop {
		return false
	}
	w.firstStop = info[0].stop
	w.lastStop = info[len(info)-1].stop
	w.joined = strings.Join(w.words, "")
	w.spaced = strings.Join(w.words, " ")
	w.codeMemo = m.phon
	c := m.phon.codes(w.joined)
	w.codes[0], w.codes[1] = c[0], c[1]
	w.codes[2], w.codes[3] = "", ""
	if stem, ok := strings.CutSuffix(w.joined, "er"); ok && len(stem) >= 2 {
		c = m.phon.codes(stem + "a")
		w.codes[2], w.codes[3] = c[0], c[1]
	}
	w.hist = histogram(w.joined)
	return true
}

// candidates appends the names window w (tokens [i, j)) may be. A name
// whose Double Metaphone code agrees with the window's needs the phonetic
// threshold; any other name with the same first letter and a similar length
// needs the fuzzy threshold.
func (m *Matcher) candidates(out []match, w *window, i, j int, p *PreparedEntities, g *guardState) []match {
	phon := w.phon[:0]
	for _, c := range w.codes {
		if c == "" {
			continue
		}
		for _, ti := range p.byCode[c] {
			if slices.Contains(phon, ti) {
				continue
			}
			phon = append(phon, ti)
			if out2, ok := m.try(out, w, i, j, ti, p, m.phonetic, g); ok {
				out = out2
			}
		}
	}
	// A first sound heard as its neighbour ("barrow gate" for
	// Varrowgate, "shallow" for Sallow).
	for _, c := range w.codes {
		if c == "" {
			continue
		}
		for _, ti := range p.byFold[foldCode(c)] {
			if slices.Contains(phon, ti) {
				continue
			}
			phon = append(phon, ti)
			if out2, ok := m.tryFolded(out, w, i, j, ti, p, g); ok {
				out = out2
			}
		}
	}
	w.phon = phon
	ids := p.byFirst[w.joined[0]]
	lo := len(w.joined) * 7 / 10
	hi := len(w.joined)*10/7 + 1
	from, _ := slices.BinarySearchFunc(ids, lo, func(ti int32, n int) int { return cmp.Compare(len(p.terms[ti].joined), n) })
	for _, ti := range ids[from:] {
		if len(p.terms[ti].joined) > hi {
			break
		}
		if slices.Contains(phon, ti) || len(p.terms[ti].joined) <= shortName {
			continue
		}
		if out2, ok := m.try(out, w, i, j, ti, p, m.fuzzy, g); ok {
			out = out2
		}
	}
	return out
}

// foldPenalty is what a first sound heard as its neighbour costs the
// score.
const foldPenalty = 0.05

// foldCode folds the first sound of a Double Metaphone code into its class
// of sounds speech recognisers confuse: labials (P for b and p, F for f, v
// and ph) and sibilants (S for s, z and soft c, X for sh, 0 for th).
func foldCode(c string) string {
	if c == "" {
		return c
	}
	switch c[0] {
	case 'F':
		return "P" + c[1:]
	case 'X', '0':
		return "S" + c[1:]
	}
	return c
}

// foldsTo reports whether c begins with the sound a class folds into.
func foldsTo(c string) bool { return c != "" && (c[0] == 'P' || c[0] == 'S') }

// onsetClass is the class of a written first sound, or "" if it has none.
func onsetClass(o string) string {
	switch o {
	case "b", "p", "f", "v", "ph":
		return "labial"
	case "s", "z", "c", "x", "sh", "th":
		return "sibilant"
	}
	return ""
}

// tryFolded tries window w as term ti with the window's first sound
// replaced by the name's, when the two sounds are neighbours. The match
// needs the phonetic threshold, raised by the guard, after foldPenalty.
func (m *Matcher) tryFolded(out []match, w *window, i, j int, ti int32, p *PreparedEntities, g *guardState) ([]match, bool) {
	t := &p.terms[ti]
	wo, to := onset(w.joined), onset(t.joined)
	if wo == to || len(wo) > len(w.words[0]) || onsetClass(wo) == "" || onsetClass(wo) != onsetClass(to) {
		return out, false
	}
	need := m.required(w, t, m.phonetic, m.strong)
	if need > 1 {
		return out, false
	}
	words := slices.Clone(w.words)
	words[0] = to + words[0][len(wo):]
	s := scoreWords(words, t) - foldPenalty
	if s < need {
		return out, false
	}
	if len(w.words) > len(t.words) && w.anyKnown && !piecewise(w, t, false) {
		return out, false
	}
	if !w.edgesSound(t) || !m.evidenced(w, t, &p.entities[t.entity], g) {
		return out, false
	}
	return append(out, match{i: i, j: j, wlen: len(w.joined), edge: w.edgeStop(t), term: ti, score: s, method: MethodPhonetic}), true
}

// shortName is the length up to which a name must agree phonetically:
// short words sit too close together for spelling similarity alone.
const shortName = 5

// try scores window w against term ti and appends the match if it clears
// base as raised by the guard.
func (m *Matcher) try(out []match, w *window, i, j int, ti int32, p *PreparedEntities, base float64, g *guardState) ([]match, bool) {
	t := &p.terms[ti]
	if base == m.fuzzy && len(w.words) > len(t.words)+1 {
		// Without phonetic agreement, a name is not heard as many words.
		return out, false
	}
	need := m.required(w, t, base, m.strong)
	if need > 1 {
		return out, false
	}
	// Common words that each sound like their piece of the name need no
	// more than other words ("grub knock" is Grubnok).
	low := need
	if w.anyCommon && len(w.words) > 1 && len(w.words) >= len(t.words) {
		low = m.required(w, t, base, base)
	}
	if bound(w, t) < low {
		return out, false
	}
	s := score(w, t)
	if s < low || (s < need && !soundsPiecewise(w, t)) {
		return out, false
	}
	if len(w.words) > len(t.words) && w.anyKnown && !piecewise(w, t, false) {
		return out, false
	}
	if !w.edgesSound(t) || !m.evidenced(w, t, &p.entities[t.entity], g) {
		return out, false
	}
	method := MethodFuzzy
	switch {
	case w.joined == t.joined:
		method = MethodExact
	case base == m.phonetic:
		method = MethodPhonetic
	}
	return append(out, match{i: i, j: j, wlen: len(w.joined), edge: w.edgeStop(t), term: ti, score: s, method: method}), true
}

// required is the similarity window w needs to become term t: base, raised
// by the common-word guard. A value above 1 rules the pair out.
func (m *Matcher) required(w *window, t *term, base, strong float64) float64 {
	need := base
	if len(w.words) == 1 && w.joined != t.joined && w.info[0].known {
		// A single English word, however rare, is never a misheard
		// name: the recogniser wrote what it heard.
		return 2
	}
	if w.allCommon {
		if w.joined == t.joined && t.common && len(t.words) == 1 {
			// The name is itself an ordinary word ("the Hollow"):
			// only the speaker's casing could change, and that is
			// theirs. A phrase of several ("lantern court") is the
			// name.
			return 2
		}
		need = max(need, strong)
	}
	if w.edgeStop(t) && w.allKnown {
		// A function word joined to English words is most likely
		// ordinary speech ("the mail is late"); joined to a word that
		// is none, it may be a syllable of the name ("is mira").
		need = max(need, m.edge)
	}
	if len(w.words) > len(t.words)+extraWords {
		return 2
	}
	// A function word inside the window that the name lacks is strong
	// evidence of ordinary speech ("the queen is old").
	for k := 1; k < len(w.words)-1; k++ {
		if x := w.words[k]; w.info[k].stop && !slices.Contains(t.words, x) {
			need = max(need, m.interior)
			break
		}
	}
	// Lengths far apart are different words, whatever the score says
	// (Jaro-Winkler forgives trailing letters: "solen sings" is not
	// "Solenne"); and a window that is the start of a name with three or
	// more letters missing is a word in its own right ("marrow").
	a, b := len(w.joined), len(t.joined)
	if d := a - b; d > maxLengthDiff(b) || -d > maxLengthDiff(b) {
		return 2
	}
	if b-a >= 3 && strings.HasPrefix(t.joined, w.joined) {
		return 2
	}
	// Word for word, an ordinary word may stand for a word of the name only
	// if it sounds like it or inflects it ("old man" is not "Old Mab";
	// "captain rock" may be "Captain Rook", "keeps" "Keep"); function words
	// stand for one another ("tower a whispers").
	// And no word may be unlike its counterpart: one shared word does not
	// make "gilded mirror" "Gilded Hand".
	if len(w.words) > 1 && len(w.words) == len(t.words) {
		for k, x := range w.words {
			y := t.words[k]
			if x == y || (w.info[k].stop && m.words.isStop(y)) {
				continue
			}
			agree := soundsAlike(w.info[k].codes, t.wordCodes[k])
			if !agree && jw(x, y) < minWordSimilarity {
				return 2
			}
			if w.info[k].common && !agree && !strings.HasPrefix(x, y) && !strings.HasPrefix(y, x) {
				return 2
			}
		}
	}
	// Without phonetic agreement, a window holding ordinary words needs
	// strong evidence ("hollow log" is not "Hollowmere").
	if base == m.fuzzy && w.anyCommon {
		need = max(need, strong)
	}
	return need
}

// edgesSound reports whether each function word at an edge of w that t
// lacks carries the sound t begins or ends with, which the rest of the
// window lacks: "on dry a" may be Ondraya (without "on" the name's first
// sound is missing, without "a" its last), "ondria a" may not (the "a" is
// already there), nor "belisandra is" (the name does not end in s).
func (w *window) edgesSound(t *term) bool {
	n := len(w.words)
	if n < 2 {
		return true
	}
	if w.firstStop && w.words[0] != t.words[0] &&
		(sameOnset(onset(w.words[1]), onset(t.joined)) || !sameOnset(onset(w.words[0]), onset(t.joined))) {
		return false
	}
	if w.lastStop && w.words[n-1] != t.words[len(t.words)-1] &&
		(coda(w.words[n-2]) == coda(t.joined) || coda(w.words[n-1]) != coda(t.joined)) {
		return false
	}
	return true
}

// sameOnset reports whether two first sounds are one: the same, or both
// vowels. An unstressed first vowel is heard as any other ("a lara" is
// Elara, the function word "a" carrying the name's "e").
func sameOnset(a, b string) bool {
	return a == b || (len(a) == 1 && len(b) == 1 && isVowel(a[0]) && isVowel(b[0]))
}

// isVowel reports whether c is one of a, e, i, o, u.
func isVowel(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }

// onset is the first sound of a word, roughly: a digraph (th, sh, ch, ph,
// wh) or its first letter, a y before a consonant read as i.
func onset(s string) string {
	if s == "" {
		return ""
	}
	if len(s) >= 2 && s[0] == 'y' && !isVowel(s[1]) {
		return "i"
	}
	if len(s) >= 2 && s[1] == 'h' && strings.IndexByte("tscpw", s[0]) >= 0 {
		return s[:2]
	}
	return s[:1]
}

// coda is the last sound of a word, roughly: its last letter, a silent
// final e dropped ("more" ends in r) and a final y after a consonant read
// as i.
func coda(s string) string {
	n := len(s)
	if n == 0 {
		return ""
	}
	if n > 2 && s[n-1] == 'e' && !isVowel(s[n-2]) {
		return s[n-2 : n-1]
	}
	if n > 1 && s[n-1] == 'y' && !isVowel(s[n-2]) {
		return "i"
	}
	return s[n-1:]
}

// edgeStop reports whether w begins or ends with a function word that t
// does not.
func (w *window) edgeStop(t *term) bool {
	return (w.firstStop && w.words[0] != t.words[0]) || (w.lastStop && w.words[len(w.words)-1] != t.words[len(t.words)-1])
}

// codesAgree reports whether two pairs of Double Metaphone codes share a
// code.
func codesAgree(a, b [2]string) bool {
	for _, c := range b {
		if c != "" && (c == a[0] || c == a[1]) {
			return true
		}
	}
	return false
}

// soundsAlike reports whether two words' codes agree, allowing a first
// sound heard as its neighbour ("born" for "Vorn").
func soundsAlike(a, b [2]string) bool {
	if codesAgree(a, b) {
		return true
	}
	for _, c := range b {
		if c != "" && (foldCode(c) == foldCode(a[0]) || foldCode(c) == foldCode(a[1])) {
			return true
		}
	}
	return false
}

// score is the best of three similarities: the whole window against the
// whole name, both with spaces removed, and (for names of as many words as
// the window) the mean of the word-by-word similarities.
func score(w *window, t *term) float64 {
	if w.joined == t.joined {
		return 1
	}
	return scoreStrings(w.words, w.joined, w.spaced, t)
}

// scoreWords is score for a window of words.
func scoreWords(words []string, t *term) float64 {
	joined := strings.Join(words, "")
	if joined == t.joined {
		return 1
	}
	return scoreStrings(words, joined, strings.Join(words, " "), t)
}

// scoreStrings is score for a window given as its words, joined and spaced.
func scoreStrings(words []string, joined, spaced string, t *term) float64 {
	s := max(jw(spaced, t.spaced), jw(joined, t.joined))
	if len(words) > 1 && len(words) == len(t.words) {
		sum := 0.0
		for k := range words {
			sum += jw(words[k], t.words[k])
		}
		s = max(s, sum/float64(len(words)))
	}
	return s
}

// jw is the Jaro-Winkler similarity of two lower-case strings.
func jw(a, b string) float64 { return matchr.JaroWinkler(a, b, false) }

// letterHist counts letters a–z; index 26 counts anything else.
type letterHist [27]uint8

func histogram(s string) letterHist {
	var h letterHist
	for i := 0; i < len(s); i++ {
		c := s[i]
		k := 26
		if c >= 'a' && c <= 'z' {
			k = int(c - 'a')
		}
		if h[k] < 255 {
			h[k]++
		}
	}
	return h
}

// bound is an upper bound of score(w, t), computed from letter counts: at
// most min(count) letters can match, the Winkler prefix bonus adds at most
// 0.4 of the remaining distance, and spaces can match only spaces. Names of
// as many words as the window are not bounded (the word-by-word mean can
// exceed both whole-string scores).
func bound(w *window, t *term) float64 {
	if len(w.words) > 1 && len(w.words) == len(t.words) {
		return 1
	}
	if w.hist[26] > 0 || t.hist[26] > 0 {
		// Letters beyond a–z: byte counts do not bound rune matches.
		return 1
	}
	common := 0
	for k := range w.hist {
		common += int(min(w.hist[k], t.hist[k]))
	}
	if common == 0 {
		return 0
	}
	la, lb := len(w.joined), len(t.joined)
	joined := jaroBound(common, la, lb)
	sa, sb := len(w.words)-1, len(t.words)-1
	spaced := jaroBound(common+min(sa, sb), la+sa, lb+sb)
	return max(joined, spaced)
}

// jaroBound bounds Jaro-Winkler for strings of lengths la and lb sharing at
// most m characters.
func jaroBound(m, la, lb int) float64 {
	f := float64(m)
	j := (min(f/float64(la), 1) + min(f/float64(lb), 1) + 1) / 3
	return j + 0.4*(1-j)
}

// soundSimilarity is the Jaro-Winkler similarity at which a word counts as
// sounding like a piece of a name even when their codes differ ("barrel"
// for "barrow", "her" for "er").
const soundSimilarity = 0.8

// piecewise reports whether the words of w, more than t has, can each stand
// for a piece of t's letters: t is cut into as many pieces as w has words,
// where the word-by-word similarity is highest, and every English word of
// the window must sound like its piece or inflect it ("bramble week" is
// Bramblewick; "ember glows" is not Emberguild), every other word must
// resemble it. When strict, sounding like means agreeing codes or
// inflection, without the similarity fallback.
func piecewise(w *window, t *term, strict bool) bool {
	pieces := bestCut(w, t.joined)
	if pieces == nil {
		return false
	}
	for k, x := range w.words {
		y := pieces[k]
		if x == y {
			continue
		}
		agree := pieceAlike(w.codeMemo, w.info[k].codes, x, y) || (!strict && jw(x, y) >= soundSimilarity)
		if w.info[k].known && !agree {
			return false
		}
		if !agree && jw(x, y) < minWordSimilarity {
			return false
		}
	}
	return true
}

// soundsPiecewise reports whether each word of w sounds like its word of t
// (as many words) or its piece of t (fewer words).
func soundsPiecewise(w *window, t *term) bool {
	if len(w.words) > len(t.words) {
		return piecewise(w, t, true)
	}
	for k, x := range w.words {
		if x != t.words[k] && !pieceAlike(w.codeMemo, w.info[k].codes, x, t.words[k]) {
			return false
		}
	}
	return true
}

// pieceAlike reports whether word x (with codes a) sounds like piece y or
// inflects it.
func pieceAlike(phon *codeCache, a [2]string, x, y string) bool {
	if inflects(x, y) || inflects(y, x) {
		return true
	}
	return soundsAlike(a, phon.codes(y))
}

// inflects reports whether a is b with an ending of at most two letters
// ("keeps" for "keep"), b having three letters or more.
func inflects(a, b string) bool {
	return len(b) >= 3 && len(a)-len(b) <= 2 && strings.HasPrefix(a, b)
}

// maxPieceDiff is how many letters a piece of a name may have more or
// fewer than the word heard for it.
const maxPieceDiff = 3

// bestCut cuts s into as many non-empty pieces as w has words, each within
// maxPieceDiff letters of its word, maximizing the pieces' likeness to the
// words: a piece that sounds like its word counts 1, plus the similarity
// of the two. It returns nil when no such cut exists.
func bestCut(w *window, s string) []string {
	words := w.words
	n, L := len(words), len(s)
	if L < n {
		return nil
	}
	// best[k][e] is the best sum for words[:k] covering s[:e]; from[k][e]
	// the start of the k-th piece.
	best := make([][]float64, n+1)
	from := make([][]int, n+1)
	for k := range best {
		best[k] = make([]float64, L+1)
		from[k] = make([]int, L+1)
		for e := range best[k] {
			best[k][e] = -1
		}
	}
	best[0][0] = 0
	for k := 1; k <= n; k++ {
		for e := k; e <= L-(n-k); e++ {
			for b := k - 1; b < e; b++ {
				// A word stands for a piece of about its length.
				if best[k-1][b] < 0 || e-b > len(words[k-1])+maxPieceDiff || e-b < len(words[k-1])-maxPieceDiff {
					continue
				}
				v := best[k-1][b] + jw(words[k-1], s[b:e])
				if pieceAlike(w.codeMemo, w.info[k-1].codes, words[k-1], s[b:e]) {
					v++
				}
				if v > best[k][e] {
					best[k][e], from[k][e] = v, b
				}
			}
		}
	}
	if best[n][L] < 0 {
		return nil
	}
	out := make([]string, n)
	e := L
	for k := n; k >= 1; k-- {
		b := from[k][e]
		out[k-1] = s[b:e]
		e = b
	}
	return out
}
