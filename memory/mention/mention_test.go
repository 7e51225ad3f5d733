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

// TestLooseWordSharesItsBelief: a word that only sounds like a name, or is
// spelled near one, may name one entity at most; when it sounds like
// several, each gets its share of the belief, and a common word sounding
// like a crowd of names seeds none of them strongly.
func TestLooseWordSharesItsBelief(t *testing.T) {
	crowd := []memory.Entity{{ID: "mirabel", Name: "Queen Mirabel"}}
	for _, n := range []string{"Drakon", "Draken", "Drakken", "Dracon"} {
		crowd = append(crowd, memory.Entity{ID: n, Name: n})
	}
	m := NewMatcher(crowd)
	tests := []struct {
		text string
		want map[string]float64
	}{
		{"where is the dragon", map[string]float64{"Drakon": ScorePhonetic / 4, "Draken": ScorePhonetic / 4,
			"Drakken": ScorePhonetic / 4, "Dracon": ScorePhonetic / 4}},
		// A full name outweighs any share, and is not shared.
		{"what did mirabel say of drakon", map[string]float64{"mirabel": ScorePartial, "Drakon": ScoreExact}},
	}
	for _, tt := range tests {
		got := map[string]float64{}
		for _, s := range m.Seeds(tt.text) {
			got[s.EntityID] = s.Score
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Seeds(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}
