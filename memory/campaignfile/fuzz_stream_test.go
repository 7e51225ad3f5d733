package campaignfile_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// FuzzStreamAgreesWithParse: `glyphoxa import` reads a file as a stream
// (Check, cut into batches of Options.BatchItems items), the library's
// Parse reads it whole. Both must accept and refuse the same files and
// find the same content in them, whatever the batch size ("It changes
// nothing in what is stored").
func FuzzStreamAgreesWithParse(f *testing.F) {
	sample, err := os.ReadFile("../../testdata/campaigns/ironhold-saga.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		"campaign: c\nentities:\n  - {id: a, type: npc, name: A}\n  - {id: b, type: npc, name: B}\n",
		"campaign: c\nentities:\n  - id: a\n    type: npc\n    name: |\n      A\n  - id: b\n    type: npc\n    name: B\nrelationships:\n  - {source: a, target: b, type: KNOWS}\n",
		"campaign: c\nsessions:\n  - id: s1\n    started_at: 2026-03-01T19:00:00Z\n    entries:\n      - speaker_id: u1\n        text: |\n          hi\n        at: 2026-03-01T19:00:01Z\n      - {speaker_id: u1, text: ho, at: 2026-03-01T19:00:02Z}\n    ended_at: 2026-03-01T20:00:00Z\n  - id: s2\n    started_at: 2026-03-02T19:00:00Z\n",
		"campaign: c\nlanguage: de\nplayers: {\"311111111111111111\": a}\nentities:\n- id: a\n  type: player\n  name: A\n",
		"{campaign: c, entities: [{id: a, type: npc, name: A}]}\n",
		// The sample's first 40 lines: its block layout, small enough to mutate.
		strings.Join(strings.SplitAfter(string(sample), "\n")[:40], ""),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		whole, perr := campaignfile.Parse(strings.NewReader(doc), "f.yaml")
		for _, batch := range []int{1, 2, campaignfile.BatchItems} {
			sum, cerr := campaignfile.Check(strings.NewReader(doc), "f.yaml", campaignfile.Options{BatchItems: batch})
			if (perr == nil) != (cerr == nil) {
				t.Fatalf("batches of %d: Parse: %v\nCheck: %v\nfile:\n%s", batch, perr, cerr, doc)
			}
			if perr != nil {
				continue
			}
			var ids []string
			for _, s := range whole.Sessions {
				ids = append(ids, s.ID)
			}
			if sum.Campaign != whole.Campaign || sum.Language != whole.Language || sum.Counts != whole.Counts() ||
				!slices.Equal(sum.SessionIDs(), ids) {
				t.Fatalf("batches of %d: Check found %q %q %+v %q, Parse %q %q %+v %q\nfile:\n%s", batch,
					sum.Campaign, sum.Language, sum.Counts, sum.SessionIDs(), whole.Campaign, whole.Language, whole.Counts(), ids, doc)
			}
		}
	})
}
