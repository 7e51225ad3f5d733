package correction

import (
	"errors"
	"strings"
	"testing"
)

var guardEntities = []Entity{
	{ID: "guild", Name: "Smiths' Guild", Aliases: []string{"the Guild"}},
	{ID: "sela", Name: "Sela"},
	{ID: "wendry", Name: "Wendry"},
	{ID: "eldrinax", Name: "Eldrinax", Aliases: []string{"the Undying"}},
	{ID: "holger", Name: "Holger"},
	{ID: "tyrul", Name: "Tyrul", Type: "npc"},
	{ID: "haldor", Name: "Haldor", Type: "npc"},
	{ID: "kessel", Name: "Schwarzer Kessel", Aliases: []string{"der Kessel"}, Type: "location"},
	{ID: "lantern", Name: "The Red Lantern", Type: "location"},
}

func TestEvidenceGuard(t *testing.T) {
	m := mustMatcher(t)
	p := mustPrepare(t, m, guardEntities)
	inPlay := func(ids ...string) map[string]bool {
		out := map[string]bool{}
		for _, id := range ids {
			out[id] = true
		}
		return out
	}
	// confs gives every word 0.95 but the k-th, 0.3.
	confs := func(n, k int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = 0.95
		}
		out[k] = 0.3
		return out
	}
	for _, tc := range []struct {
		name, text string
		ev         *Evidence
		want       string
	}{
		{"one plain word never becomes a name", "let us split the gold evenly", nil, "let us split the gold evenly"},
		{"not even in play", "let us split the gold evenly", &Evidence{InPlay: inPlay("guild")}, "let us split the gold evenly"},
		{"a word heard with low confidence may", "the gild will pay us", &Evidence{InPlay: inPlay("guild"), Confidences: confs(5, 1)}, "the Guild will pay us"},
		{"a word capitalised inside a sentence may", "we report to the Gild tonight", nil, "we report to the Guild tonight"},
		{"a capital at the start of a sentence is no evidence", "Gold is heavy. Gold is heavy", nil, "Gold is heavy. Gold is heavy"},
		{"a word and a function word", "we could sell a horse", &Evidence{InPlay: inPlay("sela")}, "we could sell a horse"},
		{"plain words, name not in play", "the well went dry", &Evidence{InPlay: inPlay("sela")}, "the well went dry"},
		{"plain words, name in play", "ask tie rule for a lantern", &Evidence{InPlay: inPlay("tyrul")}, "ask Tyrul for a lantern"},
		{"plain words, in play unknown: thresholds decide", "ask tie rule for a lantern", nil, "ask Tyrul for a lantern"},
		{"plain words, name not in play", "ask tie rule for a lantern", &Evidence{InPlay: inPlay()}, "ask tie rule for a lantern"},
		// Issue 26: with every name in play (no scene set), ordinary
		// words that read as English stay.
		{"a clause verb begins the words", "ask went dry for a lantern", &Evidence{InPlay: inPlay("wendry")}, "ask went dry for a lantern"},
		{"an ending the name lacks", "the salt reached the fields", &Evidence{InPlay: inPlay("wendry", "tyrul")}, "the salt reached the fields"},
		{"after an article, not a person", "open the hall door", &Evidence{InPlay: inPlay("haldor")}, "open the hall door"},
		{"after a subject pronoun, not a person", "you go rear and I take the front", nil, "you go rear and I take the front"},
		{"a person's name after a verb", "ask hall door about the key", &Evidence{InPlay: inPlay("haldor")}, "ask Haldor about the key"},
		{"the name's words in lower case stay", "light the red lantern", &Evidence{InPlay: inPlay("lantern")}, "light the red lantern"},
		{"the name's words capitalised are the name", "we meet at the Red lantern", &Evidence{InPlay: inPlay("lantern")}, "we meet at The Red Lantern"},
		{"another article is grammar", "a red lantern hangs there", &Evidence{InPlay: inPlay("lantern")}, "a red lantern hangs there"},
		{"plain words, low confidence", "ask went dry for a lantern", &Evidence{InPlay: inPlay(), Confidences: confs(6, 2)}, "ask Wendry for a lantern"},
		{"an alias of one plain word keeps the speaker's case", "the undying fire", &Evidence{InPlay: inPlay("eldrinax")}, "the undying fire"},
		{"a word that is no English word is left to the thresholds", "I trust elder nacks", &Evidence{InPlay: inPlay()}, "I trust Eldrinax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.MatchEvidence(tc.text, p, tc.ev).Text; got != tc.want {
				t.Errorf("%q → %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestGermanWordLists(t *testing.T) {
	en := mustMatcher(t)
	de := mustMatcher(t, WithLanguage(German))
	pen, pde := mustPrepare(t, en, guardEntities), mustPrepare(t, de, guardEntities)
	for _, tc := range []struct{ text, wantEN, wantDE string }{
		// German words are no English words: the English lists let them
		// become names, the German ones do not.
		{"holt er das Schwert", "Holger das Schwert", "holt er das Schwert"},
		{"frag holga nach dem Weg", "frag Holger nach dem Weg", "frag Holger nach dem Weg"},
		// A capitalised German word among others is a noun ("Korb in"
		// is not Korbin); an article or an ending of the name's words
		// is grammar.
		{"stell den Kessel auf den Herd", "stell den Kessel auf den Herd", "stell den Kessel auf den Herd"},
		{"der schwarze Kessel hängt dort", "der Schwarzer Kessel hängt dort", "der schwarze Kessel hängt dort"},
	} {
		ev := &Evidence{InPlay: map[string]bool{"holger": true, "kessel": true}}
		if got := en.MatchEvidence(tc.text, pen, ev).Text; got != tc.wantEN {
			t.Errorf("en: %q → %q, want %q", tc.text, got, tc.wantEN)
		}
		if got := de.MatchEvidence(tc.text, pde, ev).Text; got != tc.wantDE {
			t.Errorf("de: %q → %q, want %q", tc.text, got, tc.wantDE)
		}
	}
	// With the German dictionary, as in English, a word that is no word
	// of the language may be the name misheard, in play or not.
	if got := de.MatchEvidence("frag holga nach dem Weg", pde, &Evidence{InPlay: map[string]bool{}}).Text; got != "frag Holger nach dem Weg" {
		t.Errorf("de, Holger not in play: %q", got)
	}
	if !de.words.isCommon("wendet") || !de.words.isCommon("teilen") || de.words.isCommon("holger") {
		t.Error("German inflections")
	}
}

// TestGermanGuard holds the German guard to the evidence the English one
// reads: the dictionary knows a noun only where it is written as one, a
// single word of the language is never a name, and a noun joined to a
// lower-case word or a verb form whose ending the name lacks is the
// sentence's grammar, while a name misheard as pieces is restored.
func TestGermanGuard(t *testing.T) {
	de := mustMatcher(t, WithLanguage(German))
	es := []Entity{
		{ID: "meinrad", Name: "Meinrad", Type: "npc"},
		{ID: "waltraud", Name: "Waltraud", Type: "npc"},
		{ID: "reinhold", Name: "Reinhold", Type: "npc"},
		{ID: "nebelfurt", Name: "Nebelfurt", Type: "location"},
		{ID: "frieda", Name: "Frieda", Type: "npc"},
		{ID: "haldis", Name: "Haldis", Type: "npc"},
	}
	p := mustPrepare(t, de, es)
	all := &Evidence{InPlay: map[string]bool{"meinrad": true, "waltraud": true, "reinhold": true, "nebelfurt": true, "frieda": true, "haldis": true}}
	for _, tc := range []struct{ name, text, want string }{
		{"a noun written as one is the noun", "mein Rat ist gut", "mein Rat ist gut"},
		{"a noun in lower case inside a sentence is no noun", "frag mein rat nach dem Boot", "frag Meinrad nach dem Boot"},
		{"a single word of the language stays", "wir wollen Frieden", "wir wollen Frieden"},
		{"a single unknown word is the name misheard", "wo ist frida", "wo ist Frieda"},
		{"a noun and a lower-case word", "in den Wald traut sich keiner", "in den Wald traut sich keiner"},
		{"a noun and an adverb", "der Wind trägt den Nebel fort", "der Wind trägt den Nebel fort"},
		{"a verb ending the name lacks", "kommt rein holt euch Suppe", "kommt rein holt euch Suppe"},
		{"the name's pieces", "rein hold, zeig uns die Karte", "Reinhold, zeig uns die Karte"},
		{"pieces of one kind in lower case", "wir reiten nach nebel furt", "wir reiten nach Nebelfurt"},
		{"a window may not end in a demonstrative", "halt dies mal fest", "halt dies mal fest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := de.MatchEvidence(tc.text, p, all).Text; got != tc.want {
				t.Errorf("%q → %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		w        string
		nounCase bool
		want     bool
	}{
		{"rat", true, true}, {"rat", false, false}, {"wäldern", true, true}, {"traut", false, true},
		{"gemerkt", false, true}, {"geholfen", false, true}, {"waltraud", true, false}, {"gerwinn", true, false},
	} {
		if got := de.words.isKnown(tc.w, tc.nounCase); got != tc.want {
			t.Errorf("isKnown(%q, %v) = %v, want %v", tc.w, tc.nounCase, got, tc.want)
		}
	}
	// Odd input: nothing to restore, nothing changed, no panic.
	for _, text := range []string{"", "!!!", "Ä", "ÄÖÜ äöü ß", strings.Repeat("Wald traut ", 500), "ge", "get", "gt"} {
		if got := de.MatchEvidence(text, p, all).Text; got != text {
			t.Errorf("%.40q → %.40q", text, got)
		}
	}
	if end, ok := de.words.verbForm("holt"); !ok || end != "t" {
		t.Errorf("verbForm(holt) = %q, %v", end, ok)
	}
	if _, ok := de.words.verbForm("hold"); ok {
		t.Error("verbForm(hold) is a verb form")
	}
}

func TestParseLanguage(t *testing.T) {
	for _, tc := range []struct {
		code string
		want Language
	}{{"", English}, {"en", English}, {"en-US", English}, {"de", German}, {"de-AT", German}, {"DE_ch", German}} {
		if got, err := ParseLanguage(tc.code); err != nil || got != tc.want {
			t.Errorf("ParseLanguage(%q) = %q, %v; want %q", tc.code, got, err, tc.want)
		}
	}
	if _, err := ParseLanguage("fr"); !errors.Is(err, ErrLanguage) {
		t.Errorf("ParseLanguage(fr): %v, want ErrLanguage", err)
	}
	if _, err := NewMatcher(WithLanguage("xx")); !errors.Is(err, ErrLanguage) {
		t.Errorf("NewMatcher(WithLanguage(xx)): %v, want ErrLanguage", err)
	}
}
