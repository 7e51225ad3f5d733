package npc

import (
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

// FuzzFallbackQuestion feeds what speech-to-text may produce to the
// fallback's question reading and sentence choice: no panic, content words
// only, a short answer, and never a secret.
func FuzzFallbackQuestion(f *testing.F) {
	for _, s := range []string{"Grimjaw, where is Elara?", "", "   ", "who made the vault key", "¿Dónde está Élara?",
		"Brannoc guild do you know two hundred gold", "'s 's ''", "the the the", strings.Repeat("Vault ", 200),
		"How are you, Grimjaw?", "what's new with you", "how are things with Elara?", "Good day!"} {
		f.Add(s)
	}
	p := Persona{ID: "grimjaw", Name: "Grimjaw", Aliases: []string{"Grim"}}
	ents := []memory.Entity{
		{ID: "grimjaw", Name: "Grimjaw", Attributes: map[string]any{memory.AttrSecretKnowledge: "the hooded stranger"}},
		{ID: "elara", Name: "Elara Moonwhisper", Aliases: []string{"Elara"}, Attributes: map[string]any{"occupation": "court mage"}},
		{ID: "vault-key", Name: "Vault Key", Attributes: map[string]any{"properties": "iron key"}},
	}
	rels := []memory.Relationship{
		{SourceID: "grimjaw", TargetID: "elara", Type: "KNOWS"},
		{SourceID: "grimjaw", TargetID: "vault-key", Type: "FORGED", Attributes: map[string]any{memory.AttrSecret: true}},
	}
	f.Fuzz(func(t *testing.T, text string) {
		q := parseQuestion(text, p)
		for _, w := range q.terms {
			if w != strings.ToLower(w) || stopWords[w] || len(w) < 3 {
				t.Errorf("term %q of %q is not a content word", w, text)
			}
		}
		best := pick(knownSentences(p, q, ents, rels))
		if len(best) > FallbackMaxSentences-1 {
			t.Errorf("%d sentences for %q", len(best), text)
		}
		for _, s := range best {
			if strings.Contains(s, "forged") || strings.Contains(s, "hooded") {
				t.Errorf("%q tells a secret: %q", text, s)
			}
		}
		// A greeting, thanks, small talk: answered with a word back that
		// tells nothing, only when the line holds nothing else (no other
		// name, no question about the world).
		if k := socialKindOf(text, p); k != notSocial {
			low := strings.ToLower(text)
			if r := socialReply(p, k, text); r == "" {
				t.Errorf("no reply to the social line %q", text)
			}
			for _, w := range []string{"elara", "vault", "where", "who made"} {
				if strings.Contains(low, w) {
					t.Errorf("%q is taken for small talk (kind %d), but it says %q", text, k, w)
				}
			}
		}
		for n := range uint32(4) {
			if d := dontKnow(p, q, text, n); q.overlap(d) > 0 || d == "" {
				t.Errorf("the don't-know %q to %q repeats its words", d, text)
			}
		}
	})
}
