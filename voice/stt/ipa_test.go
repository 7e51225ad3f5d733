package stt

import (
	"strings"
	"testing"
)

func TestIPAToArpabet(t *testing.T) {
	tests := []struct{ ipa, want string }{
		{"ɡɹˈɪmdʒɔː", "G R IH M JH AO"},         // Grimjaw
		{"ˈaɪɚnhoʊld", "AY ER N HH OW L D"},     // Ironhold
		{"θeɪlˈɪndɹə", "TH EY L IH N D R AH"},   // Thalindra
		{"ˈɛldɹɪnˌæks", "EH L D R IH N AE K S"}, // Eldrinax
		{"tʃˈɜːtʃ", "CH ER CH"},                 // church
		{"kɹˈæɡmoːɹ", "K R AE G M AO R"},        // Kragmoor
		{"wˈɪspɚz", "W IH S P ER Z"},            // whispers
		{"", ""},
	}
	for _, tc := range tests {
		if got := strings.Join(ipaToArpabet(tc.ipa), " "); got != tc.want {
			t.Errorf("%q → %q, want %q", tc.ipa, got, tc.want)
		}
	}
}

func TestBigramARPA(t *testing.T) {
	lm := string(bigramARPA([][]string{{"tell", "me"}, {"tell", "grimjaw"}}))
	for _, want := range []string{"ngram 1=5", "ngram 2=5", "-99.0000 <s>", " tell me\n", " tell grimjaw\n", "\\end\\"} {
		if !strings.Contains(lm, want) {
			t.Errorf("language model lacks %q:\n%s", want, lm)
		}
	}
}
