package postsession

import (
	"strings"
	"unicode"

	"github.com/antzucaro/matchr"

	"github.com/glyphoxa/glyphoxa/memory"
)

// minPhoneticSimilarity is the Jaro-Winkler similarity two spellings with
// the same Double Metaphone code must also reach to be taken for the same
// name: sounding alike alone matches too much ("Mira" and "Marrow").
const minPhoneticSimilarity = 0.8

// Resolver maps the names an extraction uses to known entities: by name or
// alias (ignoring case and punctuation), then by sound (word by word Double
// Metaphone, backed by Jaro-Winkler similarity of the whole name), so that "Grimjah" in a transcript
// finds the existing "Grimjaw" instead of creating a second one.
type Resolver struct {
	entities []memory.Entity
	exact    map[string]int // normalised name or alias -> index
	ids      map[string]bool
}

// NewResolver returns a resolver over es.
func NewResolver(es []memory.Entity) *Resolver {
	r := &Resolver{exact: map[string]int{}, ids: map[string]bool{}}
	for _, e := range es {
		r.Add(e)
	}
	return r
}

// Add makes e known.
func (r *Resolver) Add(e memory.Entity) {
	i := len(r.entities)
	r.entities = append(r.entities, e)
	r.ids[e.ID] = true
	for _, n := range append([]string{e.Name}, e.Aliases...) {
		if k := normalise(n); k != "" {
			if _, taken := r.exact[k]; !taken {
				r.exact[k] = i
			}
		}
	}
}

// How a name was resolved.
const (
	MatchNone     = ""
	MatchExact    = "exact"
	MatchPhonetic = "phonetic"
)

// Resolve returns the entity named name (or one of aliases), and how it was
// found; ok is false when no known entity matches.
func (r *Resolver) Resolve(name string, aliases ...string) (e memory.Entity, how string, ok bool) {
	for _, n := range append([]string{name}, aliases...) {
		if i, found := r.exact[normalise(n)]; found {
			return r.entities[i], MatchExact, true
		}
	}
	best, bestScore := -1, 0.0
	for _, n := range append([]string{name}, aliases...) {
		k := normalise(n)
		if len(k) < 4 {
			continue // short names sound alike too easily
		}
		for i, e := range r.entities {
			for _, cand := range append([]string{e.Name}, e.Aliases...) {
				c := normalise(cand)
				if len(c) < 4 || !wordsSoundAlike(k, c) {
					continue
				}
				if s := matchr.JaroWinkler(k, c, false); s >= minPhoneticSimilarity && s > bestScore {
					best, bestScore = i, s
				}
			}
		}
	}
	if best >= 0 {
		return r.entities[best], MatchPhonetic, true
	}
	return memory.Entity{}, MatchNone, false
}

// wordsSoundAlike reports whether two normalised names have as many words
// and each pair of words is equal or sounds alike. Words with digits and
// words of less than three letters must be equal: "Relic 1" is not "Relic
// 2", and "Ed" is not "Edd".
func wordsSoundAlike(a, b string) bool {
	wa, wb := strings.Fields(a), strings.Fields(b)
	if len(wa) != len(wb) {
		return false
	}
	for i := range wa {
		x, y := wa[i], wb[i]
		if x == y {
			continue
		}
		if len(x) < 3 || len(y) < 3 || strings.ContainsFunc(x+y, unicode.IsDigit) {
			return false
		}
		p1, p2 := matchr.DoubleMetaphone(x)
		q1, q2 := matchr.DoubleMetaphone(y)
		if !soundAlike(p1, p2, q1, q2) {
			return false
		}
	}
	return true
}

func soundAlike(p1, p2, q1, q2 string) bool {
	for _, a := range []string{p1, p2} {
		for _, b := range []string{q1, q2} {
			if a != "" && a == b {
				return true
			}
		}
	}
	return false
}

// NewID returns an unused entity id derived from name ("Queen Mirabel" ->
// "queen-mirabel", then "queen-mirabel-2", …).
func (r *Resolver) NewID(name string) string {
	base := slug(name)
	if base == "" {
		base = "entity"
	}
	id := base
	for n := 2; r.ids[id]; n++ {
		id = base + "-" + itoa(n)
	}
	return id
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// normalise lower-cases s and keeps letters and digits, single-spaced.
func normalise(s string) string {
	var b strings.Builder
	space := false
	for _, c := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(c) || unicode.IsDigit(c):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(c)
		default:
			space = true
		}
	}
	return b.String()
}

func slug(s string) string { return strings.ReplaceAll(normalise(s), " ", "-") }
