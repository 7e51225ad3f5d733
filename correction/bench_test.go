package correction

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/stt"
)

// benchEntities invents n distinct names from syllables, a fifth of them of
// two words, with a fixed seed.
func benchEntities(n int) []Entity {
	r := rand.New(rand.NewPCG(1, 2))
	syl := []string{"al", "dra", "th", "mor", "ven", "ka", "el", "ith", "gor", "zun", "bri", "nax", "qui", "lo",
		"ra", "sha", "dun", "fel", "ix", "or", "wyn", "ta", "rok", "mir", "ash", "bel", "cor", "dal", "eth", "fin"}
	word := func() string {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		s := b.String()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	seen := map[string]bool{}
	var out []Entity
	for len(out) < n {
		name := word()
		if r.IntN(5) == 0 {
			name += " " + word()
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, Entity{ID: strings.ToLower(strings.ReplaceAll(name, " ", "-")), Name: name})
	}
	return out
}

// benchUtterance has 20 words, two of them a misheard name.
const benchUtterance = "okay so we follow the river north until we reach the mill and ask elder nacks about the missing caravan"

func benchSetup(b *testing.B) (*Matcher, []Entity) {
	m := mustMatcher(b)
	es := append(benchEntities(999), Entity{ID: "eldrinax", Name: "Eldrinax"})
	if n := len(strings.Fields(benchUtterance)); n != 20 {
		b.Fatalf("utterance has %d words", n)
	}
	return m, es
}

// BenchmarkMatchPrepared is stage 1 on a 20-word utterance against 1,000
// prepared entities (target: under 1 ms).
func BenchmarkMatchPrepared(b *testing.B) {
	m, es := benchSetup(b)
	p := mustPrepare(b, m, es)
	if res := m.MatchPrepared(benchUtterance, p); !strings.Contains(res.Text, "Eldrinax") {
		b.Fatalf("name not restored: %q", res.Text)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.MatchPrepared(benchUtterance, p)
	}
}

// BenchmarkMatchUnprepared is the same, computing every name's codes per
// call.
func BenchmarkMatchUnprepared(b *testing.B) {
	m, es := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Match(benchUtterance, es); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareEntities is the one-off cost of preparing 1,000 entities.
func BenchmarkPrepareEntities(b *testing.B) {
	m, es := benchSetup(b)
	b.ReportAllocs()
	for b.Loop() {
		mustPrepare(b, m, es)
	}
}

// benchWords are the recogniser's words of benchUtterance: sure of every
// word but the misheard name's.
func benchWords() []stt.Word {
	var ws []stt.Word
	for _, w := range strings.Fields(benchUtterance) {
		c := 0.95
		if w == "elder" || w == "nacks" {
			c = 0.4
		}
		ws = append(ws, stt.Word{Text: w, Confidence: c})
	}
	return ws
}

// BenchmarkPipelineCorrect is the correction of one utterance as the table
// runs it (stage 1 with the recogniser's word confidences) against 1,000
// entities.
func BenchmarkPipelineCorrect(b *testing.B) {
	_, es := benchSetup(b)
	p, err := NewPipeline(WithEntities(es))
	if err != nil {
		b.Fatal(err)
	}
	u := Utterance{Text: benchUtterance, Words: benchWords()}
	if res := p.Correct(u); !strings.Contains(res.Text, "Eldrinax") {
		b.Fatalf("name not restored: %q", res.Text)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Correct(u)
	}
}

// BenchmarkPipelineCorrectInPlay is BenchmarkPipelineCorrect with the
// names in play (the scene's NPCs and the last minutes' mentions).
func BenchmarkPipelineCorrectInPlay(b *testing.B) {
	_, es := benchSetup(b)
	p, err := NewPipeline(WithEntities(es))
	if err != nil {
		b.Fatal(err)
	}
	inPlay := map[string]bool{"eldrinax": true}
	for _, e := range es[:10] {
		inPlay[e.ID] = true
	}
	u := Utterance{Text: benchUtterance, Words: benchWords(), InPlay: inPlay}
	if res := p.Correct(u); !strings.Contains(res.Text, "Eldrinax") {
		b.Fatalf("name not restored: %q", res.Text)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Correct(u)
	}
}
