package chunk

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/glyphoxa/glyphoxa/memory"
)

// splitLong cuts an entry whose text is longer than maxChars into parts
// of at most maxChars, at sentence ends where it can (after ".", "!", "?"
// or "…" and any closing quotes, before a space), else at the last space,
// else in the middle of a word. Every part keeps the entry's speaker, id
// and canon; its time is the entry's, advanced in proportion to where the
// part starts in the text, and its duration the entry's share of the
// part's length, so that a chunk of one part says when that part was said.
// A long monologue ("previously on…", a ritual narration) becomes several
// chunks the size of the rest, each found by its own words and each
// weighed, as a document, like the others.
func splitLong(e memory.TranscriptEntry, maxChars int) []memory.TranscriptEntry {
	text := strings.TrimSpace(e.Text)
	if len(text) <= maxChars {
		return []memory.TranscriptEntry{e}
	}
	var out []memory.TranscriptEntry
	total := len(text)
	pos := 0
	for pos < total {
		end := cutAt(text[pos:], maxChars)
		part := strings.TrimSpace(text[pos : pos+end])
		if part != "" {
			p := e
			p.Text = part
			if e.Duration > 0 {
				p.At = e.At.Add(time.Duration(int64(e.Duration) * int64(pos) / int64(total)))
				p.Duration = time.Duration(int64(e.Duration) * int64(end) / int64(total))
			}
			out = append(out, p)
		}
		pos += end
	}
	return out
}

// cutAt returns where to end the first part of s, at most maxChars bytes
// (and at least one rune).
func cutAt(s string, maxChars int) int {
	if len(s) <= maxChars {
		return len(s)
	}
	window := s[:maxChars]
	// The last sentence end in the window, past its first third, so that
	// parts are not tiny.
	best := -1
	for i, r := range window {
		if r != '.' && r != '!' && r != '?' && r != '…' {
			continue
		}
		j := i + utf8.RuneLen(r)
		for j < len(window) && strings.ContainsRune("\"'”’)»", rune(window[j])) {
			j++
		}
		if j < len(s) && j <= maxChars {
			if next, _ := utf8.DecodeRuneInString(s[j:]); unicode.IsSpace(next) && j >= maxChars/3 {
				best = j
			}
		}
	}
	if best > 0 {
		return best
	}
	if i := strings.LastIndexFunc(window, unicode.IsSpace); i > 0 {
		return i
	}
	// No space at all: cut at a rune boundary.
	i := maxChars
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		_, n := utf8.DecodeRuneInString(s)
		return n
	}
	return i
}
