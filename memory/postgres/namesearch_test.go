package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestFindEntitiesByPartOfAName: a name search finds the entities whose
// name or one alias holds the term, in any letter case, the term taken
// literally (LIKE's % and _ and the backslash are letters here), never a
// term spanning a name and an alias; the same entities a check of every
// name and alias finds, on generated names of every length (the trigram
// index finds candidates only for terms of three letters or more).
func TestFindEntitiesByPartOfAName(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "names")
	g := c.Graph()
	fixed := []memory.Entity{
		{ID: "pct", Type: "item", Name: "The 50% Flask"},
		{ID: "pcx", Type: "item", Name: "The 50x Flask"},
		{ID: "und", Type: "location", Name: "Room_5"},
		{ID: "unx", Type: "location", Name: "Roomy5"},
		{ID: "bsl", Type: "concept", Name: `Back\slash`},
		{ID: "umlaut", Type: "npc", Name: "Jörg Übel", Aliases: []string{"Der Schmied"}},
		{ID: "span", Type: "npc", Name: "Tug", Aliases: []string{"afen"}},
	}
	rng := rand.New(rand.NewPCG(35, 8))
	names := madeUpNames{rng}
	word := names.word
	all := slices.Clone(fixed)
	for i := range 300 {
		e := memory.Entity{ID: fmt.Sprintf("g%03d", i), Type: "npc", Name: strings.ToUpper(word()[:1]) + word()}
		for range rng.IntN(3) {
			e.Aliases = append(e.Aliases, word()+" "+word())
		}
		all = append(all, e)
	}
	for _, e := range all {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// truth is every entity whose name or an alias holds term, case aside.
	truth := func(term string) []string {
		l := strings.ToLower(term)
		var out []string
		for _, e := range all {
			hit := strings.Contains(strings.ToLower(e.Name), l)
			for _, a := range e.Aliases {
				hit = hit || strings.Contains(strings.ToLower(a), l)
			}
			if hit {
				out = append(out, e.ID)
			}
		}
		slices.Sort(out)
		return out
	}
	terms := []string{"50%", "0%", "m_5", "_", "%", `k\s`, `\`, "jörg", "ÜBEL", "schmied", "tugafen", "tug\nafen", "g a", "Ka", "vor", "ithmel", "a", "drat", "zzz"}
	for range 40 {
		terms = append(terms, names.part())
	}
	for _, term := range terms {
		got := must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{Name: term}))
		ids := make([]string, len(got))
		for i, e := range got {
			ids[i] = e.ID
		}
		slices.Sort(ids)
		if want := truth(term); !slices.Equal(ids, want) {
			t.Errorf("%q found %v, want %v", term, ids, want)
		}
	}
	for term, want := range map[string]string{"50%": "pct", "m_5": "und", `k\s`: "bsl"} {
		if got := truth(term); len(got) != 1 || got[0] != want {
			t.Fatalf("the corpus gives %q %v, not %s alone: it no longer tells a literal from a pattern", term, got, want)
		}
	}
}
