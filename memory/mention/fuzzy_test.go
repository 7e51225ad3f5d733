package mention

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
)

var syllables = []string{"ka", "ri", "mor", "el", "an", "dor", "vae", "lith", "th", "ga", "ru", "sen", "ost", "wyn",
	"bra", "ce", "lo", "mir", "ab", "eth", "quo", "zar", "ul", "fen", "ix", "or", "é", "ya", "hal", "dun"}

// genName makes a name-like word of two to five syllables.
func genName(rng *rand.Rand) string {
	var b strings.Builder
	for range 2 + rng.IntN(4) {
		b.WriteString(syllables[rng.IntN(len(syllables))])
	}
	return b.String()
}

// mishear changes a word the way a transcript or a typing player does:
// one to three letters replaced, dropped, doubled or swapped.
func mishear(rng *rand.Rand, w string) string {
	r := []rune(w)
	for range 1 + rng.IntN(3) {
		if len(r) < 2 {
			break
		}
		i := rng.IntN(len(r))
		switch rng.IntN(4) {
		case 0:
			r[i] = rune('a' + rng.IntN(26))
		case 1:
			r = append(r[:i:i], r[i+1:]...)
		case 2:
			r = append(r[:i+1:i+1], r[i:]...)
		default:
			if i+1 < len(r) {
				r[i], r[i+1] = r[i+1], r[i]
			}
		}
	}
	return string(r)
}

// genCampaign makes n entities with one- or two-word generated names.
func genCampaign(rng *rand.Rand, n int) []memory.Entity {
	ents := make([]memory.Entity, n)
	for i := range ents {
		name := genName(rng)
		if rng.IntN(3) == 0 {
			name += " " + genName(rng)
		}
		ents[i] = memory.Entity{ID: fmt.Sprint("e", i), Name: name}
	}
	return ents
}

func TestSeedIndexMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	m := NewMatcher(genCampaign(rng, 4000))
	if len(m.vocab) < 3000 {
		t.Fatalf("generated vocabulary has only %d words", len(m.vocab))
	}
	// The scan is a pure function of the word (the vocabulary does not
	// change): each word is scanned once, and a question word the loop
	// already compared (its own word, a repeated mishearing) reuses it.
	scanned := map[string][]int{}
	scan := func(w string) []int {
		if r, ok := scanned[w]; ok {
			return r
		}
		r := m.fuzzyScan(w)
		scanned[w] = r
		return r
	}
	hits := 0
	for q := range 900 {
		var w string
		switch q % 3 {
		case 0:
			w = mishear(rng, m.vocab[rng.IntN(len(m.vocab))].word)
		case 1:
			w = m.vocab[rng.IntN(len(m.vocab))].word
		default:
			w = genName(rng)
		}
		want, got := scan(w), m.fuzzyIndexed(w)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("near spellings of %q: index gives %v, scan gives %v", w, got, want)
		}
		if len(want) > 0 {
			hits++
		}
		text := "what about " + w + " and " + mishear(rng, w)
		if got, want := m.Seeds(text), m.seeds(text, scan); !reflect.DeepEqual(got, want) {
			t.Fatalf("Seeds(%q) = %v, with a full scan %v", text, got, want)
		}
	}
	// The comparison means something only if many words have near spellings.
	t.Logf("%d of 900 words had near spellings in a vocabulary of %d words", hits, len(m.vocab))
	if hits < 300 {
		t.Errorf("only %d of 900 generated words had near spellings", hits)
	}
}

func TestSeedMinMatches(t *testing.T) {
	// Same first rune: J ≥ 5/6, m/a + m/b ≥ 1.5; else J ≥ 0.9, m/a + m/b ≥ 1.7.
	for _, c := range []struct {
		a, b      int
		sameFirst bool
		want      int
	}{
		{8, 8, true, 6}, {6, 6, true, 5}, {4, 8, true, 4}, {8, 4, true, 4}, {3, 8, true, 0}, {8, 16, true, 8},
		{8, 17, true, 0}, {10, 10, true, 8},
		{8, 8, false, 7}, {4, 5, false, 4}, {10, 10, false, 9}, {5, 10, false, 0},
	} {
		if got := minMatches(c.a, c.b, c.sameFirst); got != c.want {
			t.Errorf("minMatches(%d, %d, %v) = %d, want %d", c.a, c.b, c.sameFirst, got, c.want)
		}
	}
}

// BenchmarkSeeds times Seeds with the index and with a comparison against
// every vocabulary word, on two vocabularies of about 100k words: "generated"
// (names of varied syllables; the question carries two misheard names
// and four ordinary words, each compared fuzzily) and "bench" (the names
// `glyphoxa bench` writes, from a small set of syllables, and its
// question: one exact name and one ordinary word).
func BenchmarkSeeds(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 5))
	gen := NewMatcher(genCampaign(rng, 141000))
	var genQs []string
	for range 64 {
		w1 := mishear(rng, gen.vocab[rng.IntN(len(gen.vocab))].word)
		w2 := mishear(rng, gen.vocab[rng.IntN(len(gen.vocab))].word)
		genQs = append(genQs, "did "+w1+" ever meet "+w2+" near the harbour")
	}
	ents := make([]memory.Entity, 100000)
	for i := range ents {
		ents[i] = memory.Entity{ID: benchdata.EntityID(i), Name: benchdata.EntityName(i)}
	}
	bench := NewMatcher(ents)
	words := []string{"hammer", "tower", "secret", "gold", "dragon", "guild", "map", "debt"}
	var benchQs []string
	for range 64 {
		benchQs = append(benchQs, "what about "+benchdata.EntityName(rng.IntN(len(ents)))+" and the "+words[rng.IntN(len(words))]+"?")
	}
	for _, c := range []struct {
		name string
		m    *Matcher
		qs   []string
	}{{"generated", gen, genQs}, {"bench", bench, benchQs}} {
		for _, path := range []string{"index", "scan"} {
			fuzzy := c.m.fuzzyIndexed
			if path == "scan" {
				fuzzy = c.m.fuzzyScan
			}
			b.Run(fmt.Sprintf("%s-%dk-words/%s", c.name, len(c.m.vocab)/1000, path), func(b *testing.B) {
				i := 0
				for b.Loop() {
					c.m.seeds(c.qs[i%len(c.qs)], fuzzy)
					i++
				}
			})
		}
	}
}
