package campaignfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// The files of testdata/attack, most found by FuzzStreamAgreesWithParse:
// the whole reader (Parse) and the streaming one `glyphoxa import` uses
// (Check, in batches of 1 and of the default size) must refuse each bad
// one with an error naming the problem, and read a good one alike. None
// may drop content silently.
func TestAttackStreamAndWholeAgree(t *testing.T) {
	for _, tc := range []struct {
		file string
		// says are what the error must hold ("" for a file both accept).
		says []string
	}{
		// What follows a "---" or "..." is another YAML document, which
		// both readers dropped without a word: entity b, the relationship.
		{"second-document.yaml", []string{"line 4", "YAML document"}},
		{"after-document-end.yaml", []string{"line 4", "YAML document"}},
		// A top-level key the streaming reader cut at its first colon:
		// "language:" was read as language with no value (English).
		{"language-double-colon.yaml", []string{"line 2", `"language:"`}},
		{"language-key-typo.yaml", []string{"line 2", `"language:0"`}},
		// An alias to an anchor of an earlier batch: a valid file Check
		// refused ("unknown anchor 'grim' referenced", no line) once it
		// had more items than a batch holds.
		{"anchor-across-batches.yaml", nil},
		// An empty list item: Parse skipped it without a word, Check said
		// "expected one session" of an empty session.
		{"empty-entity.yaml", []string{"line 3", "empty list item"}},
		{"empty-session.yaml", []string{"line 3", "empty list item"}},
		// "Times outside their session are errors naming the line"
		// (Parse's doc): a line after the session's end was taken.
		{"entry-after-end.yaml", []string{"line 7", "ended"}},
		// An entries block ended by another key of its session: the
		// streaming reader flushed the block there and dropped the error
		// (stream.go feed ignores appendLine's), so Check took an unknown
		// key, and Apply wrote none of the block's lines and lost the key.
		{"entries-then-session-key.yaml", []string{"line 7", `"txt"`}},
		{"empty-entry-then-outdent.yaml", []string{"line "}},
		// An invalid UTF-8 byte: Parse refused it, Check took it when it
		// was in a comment.
		{"comment-not-utf8.yaml", []string{"UTF-8"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "attack", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			check := func(reader string, err error) {
				t.Helper()
				if tc.says == nil {
					if err != nil {
						t.Errorf("%s refused a good file: %v", reader, err)
					}
					return
				}
				if err == nil {
					t.Errorf("%s accepted the file, want an error saying %q", reader, tc.says)
					return
				}
				if !errors.Is(err, campaignfile.ErrInvalid) {
					t.Errorf("%s: %v does not wrap ErrInvalid", reader, err)
				}
				for _, s := range tc.says {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%s: %v, want it to say %q", reader, err, s)
					}
				}
			}
			f, err := campaignfile.Parse(strings.NewReader(string(data)), "f.yaml")
			check("Parse", err)
			for _, n := range []int{1, campaignfile.BatchItems} {
				sum, err := campaignfile.Check(strings.NewReader(string(data)), "f.yaml", campaignfile.Options{BatchItems: n})
				check(fmt.Sprintf("Check (batches of %d)", n), err)
				if err == nil && f != nil && sum.Counts != f.Counts() {
					t.Errorf("batches of %d: Check counts %+v, Parse %+v", n, sum.Counts, f.Counts())
				}
			}
		})
	}
}
