package postsession

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

func TestResolve(t *testing.T) {
	r := NewResolver([]memory.Entity{
		{ID: "grimjaw", Name: "Grimjaw", Aliases: []string{"Grim"}},
		{ID: "vaelith", Name: "Vaelith the Grey"},
		{ID: "vaelith-short", Name: "Vaelith"},
		{ID: "ironhold", Name: "Ironhold"},
		{ID: "marrow", Name: "Marrow"},
		{ID: "ed", Name: "Ed"},
		{ID: "relic-1", Name: "Relic 1"},
		{ID: "mirabel", Name: "Queen Mirabel"},
	})
	for _, tc := range []struct {
		name    string
		aliases []string
		want    string
		how     string
	}{
		{"Grimjaw", nil, "grimjaw", MatchExact},
		{"grimjaw!", nil, "grimjaw", MatchExact},
		{"GRIM", nil, "grimjaw", MatchExact},
		{"Grimjah", nil, "grimjaw", MatchPhonetic},
		{"Vaylith", nil, "vaelith-short", MatchPhonetic},
		{"Ironholt", nil, "ironhold", MatchPhonetic},
		{"Old Smith", []string{"Grim"}, "grimjaw", MatchExact},
		{"Mira", nil, "", MatchNone},
		{"Edd", nil, "", MatchNone}, // short names never match by sound
		{"Sunstone", nil, "", MatchNone},
		{"Relic 2", nil, "", MatchNone}, // numbers must agree
		{"relic 1", nil, "relic-1", MatchExact},
		{"Queen Mirabelle", nil, "mirabel", MatchPhonetic},
		{"Queen", nil, "", MatchNone},
		{"Grimjaw Ironhold", nil, "", MatchNone},
	} {
		e, how, ok := r.Resolve(tc.name, tc.aliases...)
		if e.ID != tc.want || how != tc.how || ok != (tc.want != "") {
			t.Errorf("Resolve(%q, %q) = %q, %q, %v; want %q, %q", tc.name, tc.aliases, e.ID, how, ok, tc.want, tc.how)
		}
	}
}

func TestNewID(t *testing.T) {
	r := NewResolver([]memory.Entity{{ID: "queen-mirabel", Name: "Queen Mirabel"}, {ID: "queen-mirabel-2", Name: "x"}})
	for _, tc := range []struct{ name, want string }{
		{"Queen Mirabel", "queen-mirabel-3"},
		{"The Rusty Anchor!", "the-rusty-anchor"},
		{"???", "entity"},
	} {
		if got := r.NewID(tc.name); got != tc.want {
			t.Errorf("NewID(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRelType(t *testing.T) {
	for in, want := range map[string]string{"located at": "LOCATED_AT", "MEMBER_OF": "MEMBER_OF", " owes-money to ": "OWES_MONEY_TO", "": ""} {
		if got := relType(in); got != want {
			t.Errorf("relType(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseExtraction(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
		rels     int
	}{
		{"plain", `{"entities":[{"name":"A","type":"npc"}],"relationships":[{"source":"A","target":"B","type":"KNOWS","confidence":0.9,"basis":"stated"}]}`, true, 1},
		{"fenced", "```json\n{\"entities\":[],\"relationships\":[]}\n```", true, 0},
		{"unknown field", `{"entities":[],"relationships":[],"mood":"happy"}`, false, 0},
		{"trailing data", `{"entities":[]} {"entities":[]}`, false, 0},
		{"prose", `Here are the entities: Grimjaw.`, false, 0},
		{"wrong type", `{"entities":"Grimjaw"}`, false, 0},
	} {
		x, err := ParseExtraction(tc.in)
		if (err == nil) != tc.ok || len(x.Relationships) != tc.rels {
			t.Errorf("%s: ParseExtraction = %+v, %v", tc.name, x, err)
		}
	}
}
