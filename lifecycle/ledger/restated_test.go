package ledger_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
)

// fixed is an extractor that finds what it was given (an LLM's answer).
type fixed postsession.Extraction

func (f fixed) Extract(context.Context, []memory.Entity, []memory.TranscriptEntry) (postsession.Extraction, error) {
	return postsession.Extraction(f), nil
}

// TestDebtRestated: a debt said again in a later line is one entry of the
// ledger, quoting its latest restatement and its time, whether the rules
// or an LLM found it first; another debt between the same two is an entry
// of its own, under a key of its own.
func TestDebtRestated(t *testing.T) {
	start := time.Date(2026, 5, 1, 19, 0, 0, 0, time.UTC)
	lines := []memory.TranscriptEntry{
		{SpeakerName: "Vexa Thorn", NPCID: "vexa", Text: "Kael, you owe me fifty gold for the map, and don't forget it."},
		{SpeakerName: "Kael", Text: "Let's go."},
		{SpeakerName: "Vexa Thorn", NPCID: "vexa", Text: "Kael, remember: you owe me fifty gold."},
		{SpeakerName: "Kael", Text: "I know, I know. I owe you fifty gold, Vexa."},
	}
	for i := range lines {
		lines[i].At = start.Add(time.Duration(i) * time.Minute)
	}
	known := []memory.Entity{{ID: "kael", Name: "Kael", Type: memory.EntityPlayer}, {ID: "vexa", Name: "Vexa Thorn", Type: memory.EntityNPC}}
	llmFound := fixed{Relationships: []postsession.ExtractedRelationship{{Source: "Kael", Target: "Vexa Thorn", Type: "OWES",
		Confidence: 0.9, Basis: "stated", Evidence: "you owe me fifty gold for the map",
		Attributes: map[string]any{"what": "fifty gold for the map"}}}}
	otherDebt := fixed{Relationships: []postsession.ExtractedRelationship{{Source: "Kael", Target: "Vexa Thorn", Type: "OWES",
		Confidence: 0.9, Basis: "stated", Evidence: "you owe me fifty gold for the map",
		Attributes: map[string]any{"what": "a favour at the docks"}}}}
	type debt struct{ quote, what string }
	tests := []struct {
		name string
		next postsession.Extractor
		want []debt
	}{
		{"rules only", nil, []debt{{lines[3].Text, "fifty gold"}}},
		{"the LLM's debt, restated", llmFound, []debt{{lines[3].Text, "fifty gold for the map"}}},
		// The model read line 0 as another debt: the rules leave line 0 to
		// it, and the fifty gold of lines 2 and 3 is a debt of its own.
		{"another debt", otherDebt, []debt{{"fifty gold for the map", "a favour"}, {lines[3].Text, "fifty gold"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := ledger.Extractor{Next: tt.next}.Extract(context.Background(), known, lines)
			if err != nil {
				t.Fatal(err)
			}
			var debts []postsession.ExtractedRelationship
			for _, r := range x.Relationships {
				if r.Type == ledger.RelOwes {
					debts = append(debts, r)
				}
			}
			if len(debts) != len(tt.want) {
				t.Fatalf("debts: %+v; want %d", debts, len(tt.want))
			}
			keys := map[string]bool{}
			for i, d := range debts {
				what, _ := d.Attributes["what"].(string)
				if !strings.Contains(d.Evidence, tt.want[i].quote) || !strings.Contains(what, tt.want[i].what) {
					t.Errorf("debt %d quotes %q, what %q; want %q and %q", i, d.Evidence, what, tt.want[i].quote, tt.want[i].what)
				}
				if tt.want[i].quote == lines[3].Text && d.Attributes["said_at"] != lines[3].At.Format(time.RFC3339) {
					t.Errorf("the restated debt was said at %v; want %s", d.Attributes["said_at"], lines[3].At.Format(time.RFC3339))
				}
				key, _ := d.Attributes[ledger.AttrEntry].(string)
				if keys[key] {
					t.Errorf("two debts share the key %q: the graph would merge them", key)
				}
				keys[key] = true
			}
		})
	}
}
