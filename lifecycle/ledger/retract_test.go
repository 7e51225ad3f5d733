package ledger_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
)

// line is a speaker and a text, for the tests below.
type line struct{ speaker, text string }

// transcript turns lines into entries a minute apart; NPCs speak as NPCs.
func transcript(ls []line, npcs ...string) []memory.TranscriptEntry {
	start := time.Date(2026, 5, 1, 19, 0, 0, 0, time.UTC)
	out := make([]memory.TranscriptEntry, len(ls))
	for i, l := range ls {
		out[i] = memory.TranscriptEntry{SpeakerName: l.speaker, Text: l.text, At: start.Add(time.Duration(i) * time.Minute)}
		if slices.Contains(npcs, l.speaker) {
			out[i].NPCID = strings.ToLower(l.speaker)
		}
	}
	return out
}

// described is an extraction's ledger entries as "KIND from→to what",
// sorted.
func described(x postsession.Extraction) []string {
	var out []string
	for _, r := range x.Relationships {
		if k := ledger.KindOf(r.Type); k != "" {
			what, _ := r.Attributes["what"].(string)
			out = append(out, fmt.Sprintf("%s %s→%s %s", k, r.Source, r.Target, what))
		}
	}
	slices.Sort(out)
	return out
}

// TestRetractions: what the table takes back ("no wait", "scratch that",
// "actually he didn't", the DM's "retcon:") is in the ledger neither
// without an LLM nor with one: the rules do not put back what the model
// left out on purpose, and a retracted entry the model kept is dropped.
func TestRetractions(t *testing.T) {
	known := []memory.Entity{{ID: "thorin", Name: "Thorin", Type: memory.EntityPlayer}, {ID: "lyra", Name: "Lyra", Type: memory.EntityPlayer},
		{ID: "brannoc", Name: "Brannoc", Type: memory.EntityNPC}}
	lantern := []line{
		{"Brannoc", "Thorin, take this lantern, the mine is dark."},
		{"DM", "No wait, he never gave you the lantern: Brannoc keeps it behind the bar."},
	}
	gave := func(evidence, what string) postsession.ExtractedRelationship {
		return postsession.ExtractedRelationship{Source: "Brannoc", Target: "Thorin", Type: ledger.RelGave, Confidence: 0.9,
			Basis: "stated", Evidence: evidence, Attributes: map[string]any{"what": what}}
	}
	tests := []struct {
		name  string
		lines []line
		model *postsession.Extraction // nil: no LLM
		want  []string
	}{
		{"no wait, without an LLM", lantern, nil, nil},
		{"no wait, the model left it out", lantern, &postsession.Extraction{}, nil},
		{"no wait, the model kept it", lantern, &postsession.Extraction{Relationships: []postsession.ExtractedRelationship{
			gave("Thorin, take this lantern, the mine is dark.", "a lantern")}}, nil},
		{"scratch that, in the same line", []line{
			{"Thorin", "Lyra, take my lantern. Actually, scratch that, I'll keep the lantern. Take the rope instead."},
		}, nil, []string{"handover Thorin→Lyra rope"}},
		{"the DM's retcon", []line{
			{"Brannoc", "Lyra, I promise I will hold your room until spring."},
			{"Lyra", "Thank you!"},
			{"DM", "Retcon: the inn is full, Brannoc makes no such promise."},
		}, nil, nil},
		{"actually he didn't", []line{
			{"Brannoc", "Lyra, I swear I will find your brother."},
			{"DM", "Actually he didn't swear anything, he only shrugs."},
			{"Thorin", "Lyra, you owe me ten gold for the rope."},
		}, nil, []string{"debt Lyra→Thorin ten gold for the rope"}},
		{"a retraction reaches only the entry it names", []line{
			{"Brannoc", "Thorin, take this map of the mine."},
			{"Thorin", "Lyra, have my spare dagger."},
			{"DM", "Scratch that: Brannoc still has the map."},
		}, nil, []string{"handover Thorin→Lyra spare dagger"}},
		// Anyone but the DM takes back only their own words: a player's
		// "scratch that" does not wipe the debt an NPC just named.
		{"a player cannot take back an NPC's words", []line{
			{"Brannoc", "Thorin, you owe me ten gold for the ale."},
			{"Thorin", "Scratch that."},
		}, nil, []string{"debt Thorin→Brannoc ten gold for the ale"}},
		{"a player cannot take back an NPC's words the model found", []line{
			{"Brannoc", "Thorin, you owe me ten gold for the ale."},
			{"Thorin", "No wait, forget that, I owe nothing."},
		}, &postsession.Extraction{Relationships: []postsession.ExtractedRelationship{{Source: "Thorin", Target: "Brannoc",
			Type: ledger.RelOwes, Confidence: 0.9, Basis: "stated", Evidence: "Thorin, you owe me ten gold for the ale.",
			Attributes: map[string]any{"what": "ten gold for the ale"}}}}, []string{"debt Thorin→Brannoc ten gold for the ale"}},
		{"a player takes back their own words", []line{
			{"Thorin", "Lyra, take my lantern."},
			{"Lyra", "Thanks!"},
			{"Thorin", "No wait, I'll keep the lantern."},
		}, nil, nil},
		{"another player cannot take back a player's words", []line{
			{"Thorin", "Lyra, I promise I will carry your pack to the mine."},
			{"Lyra", "Scratch that."},
		}, nil, []string{"promise Thorin→Lyra I will carry your pack to the mine"}},
		{"a complaint is no retraction", []line{
			{"Brannoc", "Thorin, take this lantern, the mine is dark."},
			{"Lyra", "You never gave me the money for the lamp oil, Brannoc."},
		}, nil, []string{"handover Brannoc→Thorin lantern"}},
		{"the model's line is the model's", []line{
			{"Brannoc", "Here, take this lantern, Thorin."},
		}, &postsession.Extraction{Relationships: []postsession.ExtractedRelationship{gave("Here, take this lantern, Thorin.", "the old lantern")}},
			[]string{"handover Brannoc→Thorin the old lantern"}},
		{"what the model plainly missed is added", []line{
			{"Brannoc", "Thorin, take this lantern, the mine is dark."},
		}, &postsession.Extraction{}, []string{"handover Brannoc→Thorin lantern"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var next postsession.Extractor
			if tt.model != nil {
				next = fixed(*tt.model)
			}
			x, err := ledger.Extractor{Next: next}.Extract(context.Background(), known, transcript(tt.lines, "Brannoc"))
			if err != nil {
				t.Fatal(err)
			}
			if got := described(x); !slices.Equal(got, tt.want) {
				t.Errorf("ledger: %q; want %q", got, tt.want)
			}
		})
	}
}

// TestDifferentDebts: two different debts, promises or handovers between
// the same two are two entries under two keys; a restatement of one is
// that entry again.
func TestDifferentDebts(t *testing.T) {
	known := []memory.Entity{{ID: "tomas", Name: "Tomas", Type: memory.EntityPlayer}, {ID: "quill", Name: "Quill", Type: memory.EntityNPC}}
	lines := transcript([]line{
		{"Quill", "Tomas, you owe me 5 gold for the rope."},
		{"Tomas", "Fine, fine."},
		{"Quill", "And you also owe me a favour for keeping quiet."},
		{"Tomas", "I owe you 5 gold, Quill, I know."},
		{"Tomas", "Quill, I promise I will fix your cart."},
		{"Tomas", "Quill, I also promise I will find your cat."},
		{"Quill", "Tomas, you owe me ten gold for the cart, not five."},
	}, "Quill")
	for _, next := range []postsession.Extractor{nil, fixed{}} {
		x, err := ledger.Extractor{Next: next}.Extract(context.Background(), known, lines)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"debt Tomas→Quill 5 gold for the rope",
			"debt Tomas→Quill a favour for keeping quiet",
			"debt Tomas→Quill ten gold for the cart, not five",
			"promise Tomas→Quill I will fix your cart",
			"promise Tomas→Quill I will find your cat",
		}
		slices.Sort(want)
		if got := described(x); !slices.Equal(got, want) {
			t.Fatalf("with next %T: ledger %q; want %q", next, got, want)
		}
		keys := map[string]string{}
		for _, r := range x.Relationships {
			k := r.Type + "/" + r.Attributes[ledger.AttrEntry].(string)
			if prev, ok := keys[k]; ok {
				t.Errorf("%q and %q share the key %q: the graph would merge them", prev, r.Attributes["what"], k)
			}
			keys[k] = r.Attributes["what"].(string)
			if strings.Contains(r.Attributes["what"].(string), "5 gold") && !strings.Contains(r.Evidence, "I owe you 5 gold") {
				t.Errorf("the 5 gold debt quotes %q; want its restatement", r.Evidence)
			}
		}
	}
}

// TestEntryKeyIsTheLedgers: the model cannot key facts apart itself: an
// "entry" it puts on another fact is dropped, and on a ledger entry it is
// replaced by the ledger's own key.
func TestEntryKeyIsTheLedgers(t *testing.T) {
	known := []memory.Entity{{ID: "thorin", Name: "Thorin", Type: memory.EntityPlayer}, {ID: "brannoc", Name: "Brannoc", Type: memory.EntityNPC}}
	model := fixed{Relationships: []postsession.ExtractedRelationship{
		{Source: "Thorin", Target: "Brannoc", Type: "KNOWS", Confidence: 0.9, Basis: "stated", Evidence: "Thorin, old friend.",
			Attributes: map[string]any{ledger.AttrEntry: "x1"}},
		{Source: "Thorin", Target: "Brannoc", Type: ledger.RelOwes, Confidence: 0.9, Basis: "stated", Evidence: "you owe me three ales",
			Attributes: map[string]any{"what": "three ales", ledger.AttrEntry: "x2"}},
	}}
	x, err := ledger.Extractor{Next: model}.Extract(context.Background(), known, transcript([]line{
		{"Brannoc", "Thorin, old friend. You owe me three ales."}}, "Brannoc"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range x.Relationships {
		got, has := r.Attributes[ledger.AttrEntry]
		switch {
		case r.Type == "KNOWS" && has:
			t.Errorf("KNOWS keeps the model's entry %v", got)
		case r.Type == ledger.RelOwes && got != ledger.EntryKey("three ales"):
			t.Errorf("the debt's entry is %v; want the ledger's %q", got, ledger.EntryKey("three ales"))
		}
	}
	if model.Relationships[0].Attributes[ledger.AttrEntry] != "x1" {
		t.Error("the model's answer was changed in place")
	}
}
