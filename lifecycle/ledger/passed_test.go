package ledger

import "testing"

// TestPassedOn: an item handed on is shown with whoever holds it now,
// following it from hand to hand; other items and other kinds are left
// alone.
func TestPassedOn(t *testing.T) {
	tests := []struct {
		name  string
		items []Item
		want  []string // NowWith of each item
	}{
		{"passed on once", []Item{
			{Kind: Handover, From: "Thorin", To: "Lyra", What: "the lantern"},
			{Kind: Handover, From: "Lyra", To: "Kael", What: "lantern"},
		}, []string{"Kael", ""}},
		{"around the table", []Item{
			{Kind: Handover, From: "Mother Ysolde", To: "Borin", What: "a sealed letter"},
			{Kind: Handover, From: "Borin", To: "Sela", What: "the letter"},
			{Kind: Handover, From: "Sela", To: "Wick", What: "her letter"},
		}, []string{"Wick", "Wick", ""}},
		{"another item", []Item{
			{Kind: Handover, From: "Thorin", To: "Lyra", What: "the lantern"},
			{Kind: Handover, From: "Lyra", To: "Kael", What: "spare dagger"},
		}, []string{"", ""}},
		{"not by its holder", []Item{
			{Kind: Handover, From: "Thorin", To: "Lyra", What: "the lantern"},
			{Kind: Handover, From: "Grimjaw", To: "Kael", What: "a lantern"},
		}, []string{"", ""}},
		{"a debt is no handover", []Item{
			{Kind: Handover, From: "Thorin", To: "Lyra", What: "the map"},
			{Kind: Debt, From: "Lyra", To: "Kael", What: "the map"},
		}, []string{"", ""}},
		{"given back", []Item{
			{Kind: Handover, From: "Thorin", To: "Lyra", What: "the axe"},
			{Kind: Handover, From: "Lyra", To: "Thorin", What: "the axe"},
		}, []string{"Thorin", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			passedOn(tt.items)
			for i, it := range tt.items {
				if it.NowWith != tt.want[i] {
					t.Errorf("item %d (%s %s→%s %q): now with %q; want %q", i, it.Kind, it.From, it.To, it.What, it.NowWith, tt.want[i])
				}
			}
		})
	}
}

func TestSimilar(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"fifty gold for the map, and don't forget it", "fifty gold", true},
		{"the lantern", "my lantern", true},
		{"brother's ring", "the ring", true},
		{"the ring", "a ring", true},
		{"ten silver", "a healing potion", false},
		{"the", "the", false},
	}
	for _, tt := range tests {
		if got := Similar(tt.a, tt.b); got != tt.want {
			t.Errorf("Similar(%q, %q) = %v; want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
