package campaignfile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// A misspelt key is named with the file, its line, the key meant and the
// valid keys, never as a Go type, by Parse and by the streaming Check
// alike.
func TestUnknownKeysNameTheKeyMeant(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"entity", "campaign: c\nentities:\n  - {id: a, type: npc, name: A, aliasses: [x]}\n",
			[]string{`f.yaml: line 3: invalid campaign file: `, `unknown key "aliasses"; did you mean "aliases"? (valid keys here: id, type, name, aliases, attributes)`}},
		{"entity in block style", "campaign: c\nentities:\n  - id: a\n    type: npc\n    name: A\n    atributes: {x: 1}\n",
			[]string{`line 6`, `unknown key "atributes"; did you mean "attributes"?`}},
		{"relationship", "campaign: c\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n  - {source: a, target: a, typ: KNOWS}\n",
			[]string{`line 5`, `unknown key "typ"; did you mean "type"?`, "source, target, type, attributes, provenance"}},
		{"provenance", "campaign: c\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n  - {source: a, target: a, type: KNOWS, provenance: {confidnce: 0.5}}\n",
			[]string{`line 5`, `provenance: unknown key "confidnce"; did you mean "confidence"?`}},
		{"calendar month", "campaign: c\ncalendar:\n  months:\n    - {name: Frostfall, dayz: 30}\n",
			[]string{`line 4`, `unknown key "dayz"; did you mean "days"?`}},
		{"transcript entry", "campaign: c\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n      - {speaker_id: u1, txt: hi, at: 2026-03-01T19:00:00Z}\n",
			[]string{`line 6`, `unknown key "txt"; did you mean "text"?`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, perr := campaignfile.Parse(strings.NewReader(tc.yaml), "f.yaml")
			_, cerr := campaignfile.Check(strings.NewReader(tc.yaml), "f.yaml", campaignfile.Options{})
			for what, err := range map[string]error{"Parse": perr, "Check": cerr} {
				if !errors.Is(err, campaignfile.ErrInvalid) {
					t.Fatalf("%s: err = %v, want ErrInvalid", what, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: %q lacks %q", what, err, w)
					}
				}
				if strings.Contains(err.Error(), "campaignfile.") {
					t.Errorf("%s names a Go type: %q", what, err)
				}
			}
		})
	}
}
