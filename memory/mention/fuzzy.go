package mention

import (
	"sort"
	"unicode/utf8"

	"github.com/antzucaro/matchr"
)

// fuzzyMin is the Jaro-Winkler similarity from which a question word is a
// near spelling of a name word.
const fuzzyMin = 0.9

// fuzzyMinBytes is the shortest name word (in bytes) that near spellings
// may match.
const fuzzyMinBytes = 5

// fuzzyIndex finds the vocabulary words within Jaro-Winkler fuzzyMin of a
// word without comparing it with the whole vocabulary.
//
// The bounds it relies on: Jaro-Winkler adds to the Jaro similarity J
// l·0.1·(1−J), where l ≤ 4 is the length of the common prefix, so JW ≥ 0.9
// needs J ≥ 5/6, and J ≥ 0.9 when the first letters differ (l = 0). With m
// matching characters between a word of a runes and one of b runes,
// J ≤ (m/a + m/b + 1)/3, so m·2(a+b) ≥ 3ab, or m·10(a+b) ≥ 17ab when the
// first letters differ. The matching characters pair equal runes, so m is
// at most the size of the two words' common rune multiset, and at most
// min(a, b). Hence only some lengths b can qualify, and with m at its
// least value mMin for that length at most a−mMin of the query's runes go
// unmatched: among any a−mMin+1 of its positions one is matched, so a
// qualifying word contains at least one of their runes. The index keeps,
// for each length, the words containing each rune, and the same split by
// first rune; a query reads the lists of its rarest runes, keeps the words
// whose common multiset reaches mMin and computes Jaro-Winkler only for
// those.
type fuzzyIndex struct {
	byLen map[int]*lenBucket
	// first and runes hold, by position in the vocabulary, each indexed
	// word's first rune and the set of its runes (runeBit).
	first []rune
	runes []uint64
}

type lenBucket struct {
	// byRune lists, in vocabulary order, the words containing each rune.
	byRune map[rune][]int32
	// byFirst lists, in vocabulary order, the words starting with a rune
	// (key[0]) that contain another (key[1]).
	byFirst map[[2]rune][]int32
}

func newFuzzyIndex(vocab []wordRef) *fuzzyIndex {
	ix := &fuzzyIndex{byLen: map[int]*lenBucket{}, first: make([]rune, len(vocab)), runes: make([]uint64, len(vocab))}
	for i, ref := range vocab {
		if len(ref.word) < fuzzyMinBytes {
			continue
		}
		n := utf8.RuneCountInString(ref.word)
		bk := ix.byLen[n]
		if bk == nil {
			bk = &lenBucket{byRune: map[rune][]int32{}, byFirst: map[[2]rune][]int32{}}
			ix.byLen[n] = bk
		}
		first, _ := utf8.DecodeRuneInString(ref.word)
		ix.first[i] = first
		var seen []rune
		for _, r := range ref.word {
			if containsRune(seen, r) {
				continue
			}
			seen = append(seen, r)
			ix.runes[i] |= runeBit(r)
			bk.byRune[r] = append(bk.byRune[r], int32(i))
			k := [2]rune{first, r}
			bk.byFirst[k] = append(bk.byFirst[k], int32(i))
		}
	}
	return ix
}

// runeBit is r's bit in a set of runes: one bit per letter a–z, the other
// runes sharing the rest, so that a set holds a superset of its runes.
func runeBit(r rune) uint64 {
	if r >= 'a' && r <= 'z' {
		return 1 << (r - 'a')
	}
	return 1 << (26 + uint(r)%38)
}

func containsRune(rs []rune, r rune) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// minMatches is the least number of matching characters with which a word
// of a runes and one of b runes can reach Jaro-Winkler fuzzyMin, or 0 when
// no number can. sameFirst says whether their first runes are equal.
func minMatches(a, b int, sameFirst bool) int {
	// Smallest m with m·2(a+b) ≥ 3ab (J ≥ 5/6), or m·10(a+b) ≥ 17ab
	// (J ≥ 0.9).
	num, den := 3*a*b, 2*(a+b)
	if !sameFirst {
		num, den = 17*a*b, 10*(a+b)
	}
	m := (num + den - 1) / den
	if m > min(a, b) {
		return 0
	}
	return m
}

// fuzzyScan compares w with every vocabulary word: the reference the
// index must agree with. It returns the positions in m.vocab of the words
// within fuzzyMin, in vocabulary order.
func (m *Matcher) fuzzyScan(w string) []int {
	var out []int
	for i, ref := range m.vocab {
		if len(ref.word) >= fuzzyMinBytes && matchr.JaroWinkler(w, ref.word, false) >= fuzzyMin {
			out = append(out, i)
		}
	}
	return out
}

// fuzzyIndexed returns what fuzzyScan returns, reading only the index
// lists that can hold a qualifying word.
func (m *Matcher) fuzzyIndexed(w string) []int {
	q := []rune(w)
	a := len(q)
	if a == 0 {
		return nil
	}
	// The query's distinct runes and how often each occurs.
	var qr []rune
	var qn []int
	for _, r := range q {
		found := false
		for j, x := range qr {
			if x == r {
				qn[j]++
				found = true
				break
			}
		}
		if !found {
			qr = append(qr, r)
			qn = append(qn, 1)
		}
	}
	var cand []int32
	used := make([]int, len(qr))
	bits := make([]uint64, len(qr))
	for j, r := range qr {
		bits[j] = runeBit(r)
	}
	seen := make([]uint64, (len(m.vocab)+63)/64)
	pos := make([]int, a)
	for b := (a + 1) / 2; b <= 2*a; b++ {
		bk := m.fuzzy.byLen[b]
		if bk == nil {
			continue
		}
		for _, sameFirst := range []bool{true, false} {
			mMin := minMatches(a, b, sameFirst)
			if mMin == 0 {
				continue
			}
			list := func(r rune) []int32 { return bk.byRune[r] }
			if sameFirst {
				list = func(r rune) []int32 { return bk.byFirst[[2]rune{q[0], r}] }
			}
			// Positions of the query, rarest rune first; any a−mMin+1 of
			// them hold a rune every qualifying word contains.
			for i := range pos {
				pos[i] = i
			}
			sort.SliceStable(pos, func(i, j int) bool { return len(list(q[pos[i]])) < len(list(q[pos[j]])) })
			var lists [][]int32
			var picked []rune
			for _, p := range pos[:a-mMin+1] {
				if !containsRune(picked, q[p]) {
					picked = append(picked, q[p])
					lists = append(lists, list(q[p]))
				}
			}
			for _, l := range lists {
				for _, i := range l {
					if seen[i/64]&(1<<(i%64)) != 0 {
						continue
					}
					seen[i/64] |= 1 << (i % 64)
					if (m.fuzzy.first[i] == q[0]) != sameFirst {
						continue
					}
					// An upper bound of the common multiset from the rune
					// sets, then the multiset itself.
					set, bound := m.fuzzy.runes[i], 0
					for j, bit := range bits {
						if set&bit != 0 {
							bound += qn[j]
						}
					}
					if bound >= mMin && common(qr, qn, used, m.vocab[i].word) >= mMin {
						cand = append(cand, i)
					}
				}
			}
		}
	}
	sort.Slice(cand, func(i, j int) bool { return cand[i] < cand[j] })
	var out []int
	for _, i := range cand {
		if matchr.JaroWinkler(w, m.vocab[i].word, false) >= fuzzyMin {
			out = append(out, int(i))
		}
	}
	return out
}

// common is the size of the common rune multiset of the query (distinct
// runes qr occurring qn times) and w; used is scratch space as long as qr.
func common(qr []rune, qn, used []int, w string) int {
	clear(used)
	c := 0
	for _, r := range w {
		for j, x := range qr {
			if x == r {
				if used[j] < qn[j] {
					used[j]++
					c++
				}
				break
			}
		}
	}
	return c
}
