package yamlkeys_test

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/internal/yamlkeys"
)

type pause time.Duration

func (p *pause) UnmarshalYAML(*yaml.Node) error { return nil }

type item struct {
	ID    string         `yaml:"id"`
	Names []string       `yaml:"aliases"`
	Attrs map[string]any `yaml:"attributes"`
	After pause          `yaml:"after"`
	At    time.Time      `yaml:"at"`
	Skip  string         `yaml:"-"`
	line  int
}

type doc struct {
	Campaign string `yaml:"campaign"`
	Items    []item `yaml:"items"`
	Main     *item  `yaml:"main"`
	Common   `yaml:",inline"`
}

type Common struct {
	Lang string `yaml:"language"`
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // the errors, in order
	}{
		{"clean", "campaign: x\nlanguage: en\nitems:\n  - {id: a, aliases: [b], attributes: {anything: {goes: here}}, after: 3s}\nmain: {id: m}\n", nil},
		{"misspelt in a list", "campaign: x\nitems:\n  - id: a\n  - {id: b, aliasses: [c]}\n",
			[]string{`line 4: items[1]: unknown key "aliasses"; did you mean "aliases"? (valid keys here: id, aliases, attributes, after, at)`}},
		{"top level, every one", "campain: x\nlangauge: en\nmain: {idd: m}\nzzz: 1\n", []string{
			`line 1: top level: unknown key "campain"; did you mean "campaign"? (valid keys here: campaign, items, main, language)`,
			`line 2: top level: unknown key "langauge"; did you mean "language"?`,
			`line 3: main: unknown key "idd"; did you mean "id"?`,
			`line 4: top level: unknown key "zzz" (valid keys here:`,
		}},
		{"a hidden field is unknown", "items:\n  - {Skip: x}\n", []string{`line 2: items[0]: unknown key "Skip"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tc.yaml), &n); err != nil {
				t.Fatal(err)
			}
			got := yamlkeys.Check(&n, doc{})
			if len(got) != len(tc.want) {
				t.Fatalf("got %d errors %v, want %d", len(got), got, len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, got[i].Error(), w)
				}
			}
		})
	}
}
