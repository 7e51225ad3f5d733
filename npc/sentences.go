package npc

import (
	"strings"
	"unicode"
)

// SentenceSplitter cuts streamed text into sentences as soon as each one is
// complete, so speech synthesis can start on the first sentence while the
// model is still writing the rest.
type SentenceSplitter struct {
	buf strings.Builder
}

// abbreviations end with a period without ending a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "sir": true, "lt": true, "capt": true,
	"e.g": true, "i.e": true, "etc": true, "vs": true, "no": true, "mt": true,
}

// Write adds streamed text and returns the sentences it completed.
func (s *SentenceSplitter) Write(text string) []string {
	s.buf.WriteString(text)
	var out []string
	for {
		cur := s.buf.String()
		end := sentenceEnd(cur)
		if end < 0 {
			return out
		}
		if sent := strings.TrimSpace(cur[:end]); sent != "" {
			out = append(out, sent)
		}
		rest := cur[end:]
		s.buf.Reset()
		s.buf.WriteString(rest)
	}
}

// Flush returns what is left as a last sentence, if anything.
func (s *SentenceSplitter) Flush() []string {
	rest := strings.TrimSpace(s.buf.String())
	s.buf.Reset()
	if rest == "" {
		return nil
	}
	return []string{rest}
}

// sentenceEnd returns the index just past the first complete sentence in s
// (its terminator and any closing quotes), or -1. A sentence is complete when
// its terminator is followed by white space, so "3.5" and a period still
// being streamed do not cut.
func sentenceEnd(s string) int {
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		if r != '.' && r != '!' && r != '?' && r != '…' && r != '\n' {
			continue
		}
		j := i + 1
		for j < len(rs) && (rs[j] == '.' || rs[j] == '!' || rs[j] == '?' || rs[j] == '"' || rs[j] == '\'' || rs[j] == '”' || rs[j] == '’' || rs[j] == ')') {
			j++
		}
		if j >= len(rs) || !unicode.IsSpace(rs[j]) {
			if r == '\n' {
				return len(string(rs[:j]))
			}
			continue
		}
		if r == '.' && j == i+1 && isAbbreviation(rs[:i]) {
			continue
		}
		// Too short to stand alone ("Ah." is fine; a lone initial is not).
		if r == '.' && i >= 1 && i < 2 {
			continue
		}
		return len(string(rs[:j]))
	}
	return -1
}

func isAbbreviation(before []rune) bool {
	k := len(before)
	for k > 0 && (unicode.IsLetter(before[k-1]) || before[k-1] == '.') {
		k--
	}
	word := strings.ToLower(string(before[k:]))
	if abbreviations[word] {
		return true
	}
	// A single capital letter: an initial ("J. R.").
	return len(before)-k == 1 && unicode.IsUpper(before[k])
}
