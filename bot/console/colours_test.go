package console_test

import (
	"regexp"
	"testing"
)

var whoRE = regexp.MustCompile(`class="who (spk\d+)">([^<]+)<`)

// On a session's page every speaker has one colour, and no two speakers
// share one (the sample's six speakers collided under a name hash).
func TestSessionSpeakersHaveDistinctColours(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	_, body := b.get("/sessions/s1")
	byName, byClass := map[string]string{}, map[string]string{}
	for _, m := range whoRE.FindAllStringSubmatch(body, -1) {
		class, name := m[1], m[2]
		if c, ok := byName[name]; ok && c != class {
			t.Errorf("%s has two colours: %s and %s", name, c, class)
		}
		if n, ok := byClass[class]; ok && n != name {
			t.Errorf("%s and %s share %s", n, name, class)
		}
		byName[name], byClass[class] = class, name
	}
	if len(byName) < 5 {
		t.Fatalf("only %d speakers on the page: %v", len(byName), byName)
	}
}
