package campaignfile_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

func TestParseSampleCampaign(t *testing.T) {
	f, err := os.Open("../../testdata/campaigns/ironhold-saga.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, "ironhold-saga.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Counts()
	if cf.Campaign != "ironhold-saga" || c.Entities < 15 || c.Relationships < 15 || c.Sessions != 2 || c.Entries < 20 {
		t.Fatalf("sample campaign: %s %+v", cf.Campaign, c)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"empty", "", "empty"},
		{"no campaign", "entities: []\n", `"campaign"`},
		{"unknown key", "campaign: c\nentities:\n  - {id: a, type: npc, name: A, colour: red}\n", "line 3"},
		{"wrong type", "campaign: c\nentities:\n  - {id: a, type: npc, name: A, aliases: 5}\n", "line 3"},
		{"duplicate entity", "campaign: c\nentities:\n  - {id: a, type: npc, name: A}\n  - {id: a, type: npc, name: B}\n", "line 4: invalid campaign file: entity id \"a\" is already used on line 3"},
		{"entity without name", "campaign: c\nentities:\n  - {id: a, type: npc}\n", "line 3"},
		{"dangling relationship", "campaign: c\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n  - {source: a, target: b, type: KNOWS}\n", `line 5: invalid campaign file: relationship refers to entity "b"`},
		{"bad confidence", "campaign: c\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n  - {source: a, target: a, type: KNOWS, provenance: {confidence: 3}}\n", "line 5"},
		{"bad source", "campaign: c\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n  - {source: a, target: a, type: KNOWS, provenance: {source: gossip}}\n", "line 5"},
		{"bad time", "campaign: c\nsessions:\n  - id: s1\n    started_at: yesterday\n", "line 4"},
		{"entry before session", "campaign: c\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n      - {speaker_id: u1, text: hi, at: 2026-03-01T18:00:00Z}\n", "line 6"},
		{"entry without text", "campaign: c\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n      - {speaker_id: u1, at: 2026-03-01T19:00:00Z}\n", "line 6"},
		{"not yaml", "campaign: [unclosed\n", "invalid campaign file"},
		{"secret yes", rel("{secret: yes}"), "line 5: invalid campaign file: secret must be true or false, got \"yes\""},
		{"secret quoted", rel(`{secret: "true"}`), "line 5: invalid campaign file: secret must be true or false, got \"true\""},
		{"secret one", rel("{secret: 1}"), "line 5"},
		{"secret list", rel("{secret: [a]}"), "got \"a list\""},
		{"secret nested", "campaign: c\nentities:\n  - {id: a, type: npc, name: A, attributes: {plan: {secret: \"no\"}}}\n", "line 3"},
		{"known_by not a list", rel("{secret: true, known_by: elara}"), "line 5: invalid campaign file: known_by must be a list"},
		{"NUL byte", "campaign: c\nentities:\n  - {id: a, type: npc, name: \"A\x00\"}\n", "line 3: invalid campaign file: a NUL byte at column 32"},
		{"NUL escape", "campaign: c\nentities:\n  - {id: a, type: npc, name: \"A\\0\"}\n", "line 3: invalid campaign file: a NUL character in \"A\\x00\""},
		{"campaign id with a space", "campaign: iron hold\n", "campaign id \"iron hold\" holds ' '"},
		{"campaign id with an escape", "campaign: \"iron\\e[31m\"\n", `campaign id "iron\x1b[31m"`},
		{"bad language", "campaign: c\nlanguage: \"de; drop\"\n", `language "de; drop": want a language code`},
		{"language twice", "campaign: c\nlanguage: de\nlanguage: en\n", "language"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, perr := campaignfile.Parse(strings.NewReader(tc.yaml), "f.yaml")
			_, cerr := campaignfile.Check(strings.NewReader(tc.yaml), "f.yaml", campaignfile.Options{})
			for reader, err := range map[string]error{"Parse": perr, "Check (streaming)": cerr} {
				if err == nil {
					t.Fatalf("%s accepted a bad file", reader)
				}
				if !errors.Is(err, campaignfile.ErrInvalid) {
					t.Errorf("%s: error does not wrap ErrInvalid: %v", reader, err)
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.yaml: ") {
					t.Errorf("%s: error %q should start with the file name and contain %q", reader, err, tc.want)
				}
			}
		})
	}
}

// rel is a file whose only relationship (line 5) has the given attributes.
func rel(attrs string) string {
	return "campaign: c\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n  - {source: a, target: a, type: KNOWS, attributes: " + attrs + "}\n"
}

// A long value is cut in an error; the error stays short.
func TestLongValuesAreCutInErrors(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, yaml := range []string{
		"campaign: " + long + "\n",
		"campaign: c\nentities:\n  - {id: " + long + ", type: npc, name: A}\n  - {id: " + long + ", type: npc, name: B}\n",
		"campaign: c\nentities:\n  - {id: a, type: npc, name: A}\nrelationships:\n  - {source: a, target: " + long + ", type: KNOWS}\n",
	} {
		_, err := campaignfile.Parse(strings.NewReader(yaml), "f.yaml")
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "1048576 bytes") {
			t.Errorf("error of %d bytes: %.300v", len(fmt.Sprint(err)), err)
		}
	}
}

// An entity type glyphoxa does not know is a warning naming the line.
func TestUnknownEntityTypeIsAWarning(t *testing.T) {
	cf, err := campaignfile.Parse(strings.NewReader("campaign: c\nentities:\n  - {id: a, type: npc, name: A}\n  - {id: b, type: \"spaceship\\e[2J\", name: B}\n"), "f.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Warnings) != 1 || !strings.HasPrefix(cf.Warnings[0], "line 4: entity \"b\" has the type \"spaceship\\x1b[2J\"") {
		t.Fatalf("warnings %q", cf.Warnings)
	}
}

// FuzzParse: an accepted file has a valid campaign id and boolean secrets.
// Seeds are small: the 11 KB sample made the fuzzer spend its time
// minimising mutants of it.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"campaign: c\nentities:\n  - {id: a, type: npc, name: A}\n",
		"campaign: c\nentities:\n  - {id: a, type: npc, name: A, attributes: {secret_knowledge: x}}\nrelationships:\n  - {source: a, target: a, type: KNOWS, attributes: {secret: true, known_by: [a]}}\n",
		"campaign: c\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n      - {speaker_id: u1, text: hi, at: 2026-03-01T19:00:01Z}\n",
		"campaign: c\nentities:\n- id: a\n  type: spaceship\n  name: A\n",
		"campaign: c\nrelationships:\n  - {source: a, target: b, type: X, provenance: {confidence: 0.5, source: inferred, session: s1}}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cf, err := campaignfile.Parse(strings.NewReader(s), "fuzz.yaml")
		if err != nil {
			if len(err.Error()) > 4000 {
				t.Fatalf("an error of %d bytes", len(err.Error()))
			}
			return
		}
		if memory.ValidateCampaignID(cf.Campaign) != nil {
			t.Fatalf("accepted the campaign id %q", cf.Campaign)
		}
		for _, r := range cf.Relationships {
			if v, ok := r.Attributes[memory.AttrSecret]; ok {
				if _, isBool := v.(bool); !isBool {
					t.Fatalf("accepted secret: %#v", v)
				}
			}
		}
	})
}

// The language key is read by both readers (whole and streaming), in any
// layout, and a file without one writes none.
func TestLanguageKey(t *testing.T) {
	for _, doc := range []string{
		"campaign: c\nlanguage: de\nentities:\n  - {id: a, type: npc, name: A}\n",
		"language: de-AT # Austrian\ncampaign: c\n",
		"{campaign: c, language: german}\n",
	} {
		f, err := campaignfile.Parse(strings.NewReader(doc), "f.yaml")
		if err != nil {
			t.Fatalf("Parse %q: %v", doc, err)
		}
		sum, err := campaignfile.Check(strings.NewReader(doc), "f.yaml", campaignfile.Options{})
		if err != nil {
			t.Fatalf("Check %q: %v", doc, err)
		}
		if f.Language == "" || sum.Language != f.Language {
			t.Errorf("%q: Parse language %q, Check %q", doc, f.Language, sum.Language)
		}
	}
	b, err := yaml.Marshal(&campaignfile.File{Campaign: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "language") {
		t.Errorf("a file without a language writes one:\n%s", b)
	}
}
