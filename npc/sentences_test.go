package npc

import (
	"slices"
	"testing"
)

func TestSentenceSplitter(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		want   []string
	}{
		{"two sentences streamed", []string{"Aye, the for", "ge is hot. Iron", "hold sleeps tonight!", " Go."},
			[]string{"Aye, the forge is hot.", "Ironhold sleeps tonight!", "Go."}},
		{"decimal and abbreviation", []string{"It costs 3.5 gold, says Mr. Brannoc. Pay up."},
			[]string{"It costs 3.5 gold, says Mr. Brannoc.", "Pay up."}},
		{"quotes and ellipsis", []string{`She said "run!" and ran… Then silence.`},
			[]string{`She said "run!"`, "and ran…", "Then silence."}},
		{"question marks", []string{"Who goes there?! ", "Speak!"}, []string{"Who goes there?!", "Speak!"}},
		{"no terminator", []string{"Hmm, let me think"}, []string{"Hmm, let me think"}},
		{"initials", []string{"Ask J. R. Tolk. He knows."}, []string{"Ask J. R. Tolk.", "He knows."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var s SentenceSplitter
			var got []string
			for _, c := range tc.chunks {
				got = append(got, s.Write(c)...)
			}
			got = append(got, s.Flush()...)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
