package stt

import "testing"

// TestParseSphinxConfidence: pocketsphinx prints a word's posterior, which
// its log-domain sums can round a hair above 1 (seen: "1.0001" for words
// of a long recording); a confidence is 0 to 1, in every word and in the
// whole transcript.
func TestParseSphinxConfidence(t *testing.T) {
	out := "i attack the goblin\n" +
		"<s> 0.500 0.560 0.998900\n" +
		"attack 0.570 0.980 1.000100\n" +
		"goblin 1.000 1.400 0.250000\n" +
		"the 1.410 1.500 -0.000100\n" +
		"</s> 1.510 1.600 1.000000\n"
	tr := parseSphinx(out, 0.5)
	want := []struct {
		text string
		conf float64
	}{{"attack", 1}, {"goblin", 0.25}, {"the", 0}}
	if len(tr.Words) != len(want) {
		t.Fatalf("words %+v, want %d", tr.Words, len(want))
	}
	for i, w := range want {
		if got := tr.Words[i]; got.Text != w.text || got.Confidence != w.conf {
			t.Errorf("word %d: %q at confidence %v, want %q at %v", i, got.Text, got.Confidence, w.text, w.conf)
		}
	}
	if tr.Confidence < 0 || tr.Confidence > 1 || tr.Text != "attack goblin the" {
		t.Errorf("transcript %q at confidence %v", tr.Text, tr.Confidence)
	}
}
