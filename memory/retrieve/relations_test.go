package retrieve

import "testing"

func TestRelationAsked(t *testing.T) {
	cases := []struct {
		question, relType string
		want              bool
	}{
		{"Who is the employer of Hale?", "EMPLOYS", true},
		{"Who hosted the ball?", "HOSTS", true},
		{"Where is Grimjaw located?", "LOCATED_AT", true},
		{"Who is the harbourmaster's sister?", "SIBLING_OF", false}, // no synonym table
		{"What did the captain say?", "CAPTAIN_OF", true},
		{"Is the art good?", "PART_OF", false}, // stems of under four letters do not match
	}
	for _, c := range cases {
		if got := relationAsked(c.relType, askedRelations(c.question)); got != c.want {
			t.Errorf("%q asks about %s: %v, want %v", c.question, c.relType, got, c.want)
		}
	}
}

func TestAsksOf(t *testing.T) {
	for q, want := range map[string]bool{
		"Who is the harbourmaster's sister?":     true,
		"What is the hilt of the Ember Blade?":   true,
		"What did Hadrik\u2019s apprentice say?": true,
		"Where is the forge?":                    false,
		"Officers said so":                       false,
	} {
		if got := asksOf(q); got != want {
			t.Errorf("asksOf(%q) = %v, want %v", q, got, want)
		}
	}
}
