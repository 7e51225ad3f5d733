package campaignfile_test

import (
	"errors"
	"os"
	"strings"
	"testing"

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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := campaignfile.Parse(strings.NewReader(tc.yaml), "f.yaml")
			if err == nil {
				t.Fatal("parsed a bad file")
			}
			if !errors.Is(err, campaignfile.ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "f.yaml: ") {
				t.Errorf("error %q should start with the file name and contain %q", err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	sample, err := os.ReadFile("../../testdata/campaigns/ironhold-saga.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(sample))
	f.Add("campaign: c\nentities:\n  - {id: a, type: npc, name: A}\n")
	f.Fuzz(func(t *testing.T, s string) {
		cf, err := campaignfile.Parse(strings.NewReader(s), "fuzz.yaml")
		if err == nil && cf.Campaign == "" {
			t.Fatal("accepted a file without a campaign")
		}
	})
}
