package chunk

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

// monologue returns a DM's long turn of n sentences.
func monologue(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "Sentence %d tells how the party crossed the marsh and what the heron said to them.", i+1)
	}
	return b.String()
}

// TestSplitLongTurns: a single turn longer than MaxChars becomes several
// chunks cut at sentence ends, each within the cap, each with the turn's
// speaker and a time inside the turn's span; nothing is lost and the ids
// are distinct and stable.
func TestSplitLongTurns(t *testing.T) {
	long := line(2, 10, "DM", monologue(60)) // about 5,000 characters
	long.Duration = 5 * time.Minute
	var words []string
	for i := range 700 {
		words = append(words, fmt.Sprint("word", i))
	}
	noStop := line(2, 10, "DM", strings.Join(words, " ")) // no sentence end at all
	noStop.Duration = time.Minute
	cases := []struct {
		name  string
		turn  memory.TranscriptEntry
		opts  Options
		whole bool // every part ends at a sentence end
	}{
		{"recap", long, Options{}, true},
		{"recap, small cap", long, Options{MaxChars: 300}, true},
		{"no sentence end", noStop, Options{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries := []memory.TranscriptEntry{line(1, 0, "Grog", "Previously on!"), tc.turn, line(3, 400, "Vex", "Nice.")}
			limit := tc.opts.withDefaults().MaxChars
			cs := Split(entries, nil, tc.opts)
			var parts []string // each once: windows cut for length overlap
			have := map[string]bool{}
			seen := map[string]bool{}
			for _, c := range cs {
				if len(c.Content) > limit {
					t.Errorf("chunk of %d characters, cap %d", len(c.Content), limit)
				}
				if seen[c.ID] {
					t.Errorf("duplicate chunk id %s", c.ID)
				}
				seen[c.ID] = true
				for _, l := range strings.Split(c.Content, "\n") {
					if text, ok := strings.CutPrefix(l, "DM: "); ok {
						if !have[text] {
							have[text] = true
							parts = append(parts, text)
						}
						if strings.HasPrefix(c.Content, "DM: ") && (c.StartAt.Before(tc.turn.At) || c.StartAt.After(tc.turn.At.Add(tc.turn.Duration))) {
							t.Errorf("chunk %s starts at %v, outside the turn", c.ID, c.StartAt)
						}
						if !slices.Contains(c.SpeakerIDs, "dm") {
							t.Errorf("chunk %s lost the speaker: %v", c.ID, c.SpeakerIDs)
						}
					}
				}
			}
			if len(parts) < 2 {
				t.Fatalf("the long turn became %d parts", len(parts))
			}
			if got, want := strings.Join(strings.Fields(strings.Join(parts, " ")), " "), strings.Join(strings.Fields(tc.turn.Text), " "); got != want {
				t.Errorf("the parts do not add up to the turn:\n got %.80q…\nwant %.80q…", got, want)
			}
			if tc.whole {
				for _, p := range parts {
					if !strings.HasSuffix(p, ".") {
						t.Errorf("part does not end at a sentence end: …%q", p[max(0, len(p)-30):])
					}
				}
			}
			again := Split(entries, nil, tc.opts)
			for i := range cs {
				if again[i].ID != cs[i].ID {
					t.Fatalf("splitting again changed chunk %d's id: %s, then %s", i, cs[i].ID, again[i].ID)
				}
			}
		})
	}
}
