package mention

import (
	"reflect"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

var entities = []memory.Entity{
	{ID: "grimjaw", Name: "Grimjaw", Aliases: []string{"Grim"}},
	{ID: "mirabel", Name: "Queen Mirabel"},
	{ID: "anchor", Name: "The Rusty Anchor"},
	{ID: "vaelith", Name: "Vaelith the Grey"},
	{ID: "ironhold", Name: "Ironhold"},
}

func TestFind(t *testing.T) {
	m := NewMatcher(entities)
	cases := []struct {
		text string
		want []string
	}{
		{"Grimjaw's forge is cold.", []string{"grimjaw"}},
		{"Ask grim, he knows.", []string{"grimjaw"}},
		{"We drank at the rusty anchor in Ironhold", []string{"anchor", "ironhold"}},
		{"Mirabel sent word", []string{"mirabel"}},
		{"the queen is away", nil}, // generic word alone
		{"a rusty old nail", nil},  // lower-case partial
		{"Vaelith and Grimjaw", []string{"vaelith", "grimjaw"}},
	}
	for _, c := range cases {
		if got := m.Find(c.text); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Find(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestSeeds(t *testing.T) {
	m := NewMatcher(entities)
	cases := []struct {
		text  string
		first string
		score float64
	}{
		{"where is grimjaw", "grimjaw", ScoreExact},
		{"what did mirabel say", "mirabel", ScorePartial},
		{"who is vaylith", "vaelith", ScorePhonetic},
		{"the ironholt mines", "ironhold", ScorePhonetic},
	}
	for _, c := range cases {
		got := m.Seeds(c.text)
		if len(got) == 0 || got[0].EntityID != c.first || got[0].Score != c.score {
			t.Errorf("Seeds(%q) = %v, want %s first with score %v", c.text, got, c.first, c.score)
		}
	}
	if got := m.Seeds("where were they before that"); len(got) != 0 {
		t.Errorf("question words matched names: %v", got)
	}
}
