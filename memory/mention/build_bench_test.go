package mention

import (
	"fmt"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

// BenchmarkNewMatcher builds the matcher over 600 entities of two-word
// names with an alias each (a 16k-line campaign's size), as a cold
// `ask` process does.
func BenchmarkNewMatcher(b *testing.B) {
	syll := []string{"ka", "tor", "mi", "lun", "dra", "vel", "os", "thar", "ne", "bri"}
	word := func(i int) string {
		return syll[i%10] + syll[(i/10)%10] + syll[(i/100)%10]
	}
	ents := make([]memory.Entity, 600)
	for i := range ents {
		ents[i] = memory.Entity{ID: fmt.Sprintf("e%04d", i), Name: word(i) + " " + word(i*7+3),
			Aliases: []string{"the " + word(i*13+5)}}
	}
	b.ReportAllocs()
	for b.Loop() {
		if m := NewMatcher(ents); len(m.vocab) == 0 {
			b.Fatal("empty vocabulary")
		}
	}
}
