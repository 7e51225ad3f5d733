package stt

import (
	"sort"
	"strings"
	"unicode/utf8"
)

// ipaArpabet maps espeak-ng's IPA (en-us) to the ARPAbet phones of
// pocketsphinx's en-us model. Longer symbols come first when matching.
var ipaArpabet = map[string]string{
	"aɪɚ": "AY ER", "aɪə": "AY ER", "aʊɚ": "AW ER",
	"ɑːɹ": "AA R", "ɔːɹ": "AO R", "oːɹ": "AO R", "ɪɹ": "IH R", "ɛɹ": "EH R", "ʊɹ": "UH R",
	"aɪ": "AY", "aʊ": "AW", "eɪ": "EY", "oʊ": "OW", "ɔɪ": "OY",
	"oː": "AO", "ɔː": "AO", "ɑː": "AA", "ɜː": "ER", "iː": "IY", "uː": "UW",
	"dʒ": "JH", "tʃ": "CH",
	"ɚ": "ER", "ɝ": "ER", "ə": "AH", "ʌ": "AH", "ɐ": "AH", "ɪ": "IH", "ᵻ": "IH", "ɛ": "EH",
	"æ": "AE", "ɑ": "AA", "ɔ": "AO", "ʊ": "UH", "i": "IY", "u": "UW", "e": "EY", "o": "OW", "a": "AA",
	"θ": "TH", "ð": "DH", "ʃ": "SH", "ʒ": "ZH", "ŋ": "NG", "ɹ": "R", "r": "R", "ɡ": "G", "g": "G",
	"j": "Y", "ɾ": "T", "ɬ": "L", "x": "HH", "h": "HH",
	"b": "B", "p": "P", "d": "D", "t": "T", "k": "K", "f": "F", "v": "V", "s": "S", "z": "Z",
	"m": "M", "n": "N", "l": "L", "w": "W",
}

var ipaKeys = func() []string {
	ks := make([]string, 0, len(ipaArpabet))
	for k := range ipaArpabet {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return len(ks[i]) > len(ks[j]) })
	return ks
}()

// ipaToArpabet converts espeak-ng IPA to ARPAbet phones, dropping stress
// and length marks and symbols it does not know.
func ipaToArpabet(ipa string) []string {
	var out []string
	s := ipa
	for s != "" {
		matched := false
		for _, k := range ipaKeys {
			if strings.HasPrefix(s, k) {
				out = append(out, strings.Fields(ipaArpabet[k])...)
				s = s[len(k):]
				matched = true
				break
			}
		}
		if !matched {
			_, size := utf8.DecodeRuneInString(s)
			s = s[size:]
		}
	}
	return out
}
