package memory

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on a search query. Every text that becomes a full-text query or
// a substring pattern in the store passes [CheckQuery] first, whoever sent
// it: a player in the console, an MCP client, an NPC tool call, a spoken
// line.
//
// A question asked at the table is short: a spoken line is a few dozen
// words, and the longest text a player can type in Discord is a message of
// 2,000 characters (at most 8,000 bytes of UTF-8, some 400 words). The
// bounds sit above that, with room for the " or " callers put between
// words, so that no real question is refused, and far below where the
// database suffers: PostgreSQL parses a full-text query into a tree and
// walks it recursively when matching, and somewhere between 30,000 and
// 100,000 words that walk exceeds max_stack_depth (2 MB by default) and
// fails with "stack depth limit exceeded" after seconds of work. The byte
// bound alone keeps every query under that: 8 KiB of text holds at most
// some 4,000 words even when they are single letters joined by hyphens.
const (
	// MaxQueryBytes is the longest search query accepted, in bytes.
	MaxQueryBytes = 8 << 10
	// MaxQueryTerms is the most words a search query may hold; the
	// connective "or" is not counted.
	MaxQueryTerms = 512
	// MaxQueryNegations is the most "-" (websearch's "not") a search
	// query may hold in a row, with no word between them: PostgreSQL's
	// websearch_to_tsquery keeps them on a stack of 32 and fails the
	// statement past it ("tsquery stack too small").
	MaxQueryNegations = 32
)

// CheckQuery reports whether q may be sent to the store as a search query:
// valid UTF-8 without NUL bytes, at most MaxQueryBytes long, with at most
// MaxQueryTerms words and at most MaxQueryNegations "-" in a row. The
// error wraps ErrInvalid and says which bound q exceeds and by how much;
// it never repeats q. An empty query passes (the search itself decides
// whether it means everything or nothing).
func CheckQuery(q string) error {
	if len(q) > MaxQueryBytes {
		return fmt.Errorf("%w: search query is %d bytes long, longer than the %d bytes allowed", ErrInvalid, len(q), MaxQueryBytes)
	}
	if !utf8.ValidString(q) {
		return fmt.Errorf("%w: search query is not valid UTF-8", ErrInvalid)
	}
	if i := strings.IndexByte(q, 0); i >= 0 {
		return fmt.Errorf("%w: search query holds a NUL byte at offset %d", ErrInvalid, i)
	}
	if n := queryTerms(q); n > MaxQueryTerms {
		return fmt.Errorf("%w: search query has %d words, more than the %d allowed", ErrInvalid, n, MaxQueryTerms)
	}
	if n := negations(q); n > MaxQueryNegations {
		return fmt.Errorf("%w: search query has %d \"-\" in a row with no word between them, more than the %d allowed",
			ErrInvalid, n, MaxQueryNegations)
	}
	return nil
}

// negations is the longest run of "-" in q with no letter or digit between
// them (spaces, quotes and brackets do not end a run, as they do not for
// websearch_to_tsquery; hyphens inside a word are counted too, which
// refuses only a word of 33 hyphens).
func negations(q string) int {
	longest, run := 0, 0
	for _, r := range q {
		switch {
		case r == '-':
			run++
			longest = max(longest, run)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			run = 0
		}
	}
	return longest
}

// queryTerms counts the whitespace-separated words of q other than the
// connective "or".
func queryTerms(q string) int {
	n := 0
	for f := range strings.FieldsSeq(q) {
		if !strings.EqualFold(f, "or") {
			n++
		}
	}
	return n
}
