package correction_test

import (
	"fmt"

	"github.com/glyphoxa/glyphoxa/correction"
)

func Example() {
	m, err := correction.NewMatcher()
	if err != nil {
		panic(err)
	}
	prep, err := m.PrepareEntities([]correction.Entity{
		{ID: "eldrinax", Name: "Eldrinax"},
		{ID: "ironhold", Name: "Ironhold"},
		{ID: "tower", Name: "Tower of Whispers"},
	})
	if err != nil {
		panic(err)
	}
	for _, heard := range []string{
		"did you talk to elder nacks's brother?",
		"we ride back to iron hold, then the tower of whiskers",
		"hold the iron door, the tower is on fire",
	} {
		res := m.MatchPrepared(heard, prep)
		fmt.Println(res.Text)
		for _, s := range res.Substitutions {
			fmt.Printf("  %q → %s (%s, %.2f)\n", s.Original, s.EntityID, s.Method, s.Score)
		}
	}
	// Output:
	// did you talk to Eldrinax's brother?
	//   "elder nacks" → eldrinax (phonetic, 0.85)
	// we ride back to Ironhold, then the Tower of Whispers
	//   "iron hold" → ironhold (exact, 1.00)
	//   "tower of whiskers" → tower (phonetic, 0.98)
	// hold the iron door, the tower is on fire
}

func ExampleRank() {
	es := []correction.Entity{
		{ID: "eldrinax", Name: "Eldrinax", Aliases: []string{"The Ember Wyrm"}},
		{ID: "grimjaw", Name: "Grimjaw"},
		{ID: "ironhold", Name: "Ironhold"},
	}
	r := correction.Rank(es, correction.Salience{Scene: []string{"ironhold"}})
	fmt.Println(correction.DeepgramKeyterms(r, correction.DeepgramKeytermTokens))
	fmt.Println(correction.DeepgramKeywords(r, correction.DeepgramMaxKeywords))
	fmt.Println(correction.WhisperPrompt(r, correction.WhisperPromptTokens))
	// Output:
	// [Ironhold Eldrinax The Ember Wyrm Grimjaw]
	// [Ironhold:3 Eldrinax:1 Wyrm:1 Grimjaw:1]
	// Ironhold, Eldrinax, The Ember Wyrm, Grimjaw.
}

func ExamplePipeline() {
	p, err := correction.NewPipeline(correction.WithEntities([]correction.Entity{{ID: "kelthar", Name: "Kel'thar"}}))
	if err != nil {
		panic(err)
	}
	r := p.Correct(correction.Utterance{Text: "we parley with kel tar's envoy"})
	fmt.Println(r.Text)
	// Stage 2 would follow, in the background, when an LLM is configured:
	// r, err = p.Refine(ctx, u, r)
	// Output:
	// we parley with Kel'thar's envoy
}
