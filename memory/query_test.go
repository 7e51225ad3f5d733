package memory

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckQuery(t *testing.T) {
	long := strings.Repeat("a", MaxQueryBytes+1)
	for _, tc := range []struct {
		name string
		q    string
		want string // in the error; "" means accepted
	}{
		{name: "empty", q: ""},
		{name: "question", q: "who guards the north gate?"},
		{name: "at the byte bound", q: strings.Repeat(strings.Repeat("a", 63)+" ", MaxQueryBytes/64)},
		{name: "at the term bound", q: strings.Repeat("w ", MaxQueryTerms)},
		{name: "or is not a term", q: strings.TrimSuffix(strings.Repeat("w or ", MaxQueryTerms), " or ")},
		{name: "too many bytes", q: long, want: "8193 bytes long, longer than the 8192 bytes allowed"},
		{name: "too many terms", q: strings.Repeat("w ", MaxQueryTerms+1), want: "has 513 words, more than the 512 allowed"},
		{name: "100k words", q: strings.Repeat("word ", 100_000), want: "bytes allowed"},
		{name: "NUL", q: "gate\x00keeper", want: "NUL byte at offset 4"},
		{name: "invalid UTF-8", q: "gate\xffkeeper", want: "not valid UTF-8"},
		{name: "negations at the bound", q: strings.Repeat("-", MaxQueryNegations) + "gate"},
		{name: "negations spaced, words between", q: strings.Repeat("-gate ", 2*MaxQueryNegations)},
		{name: "hyphenated words", q: strings.Repeat("half-orc ", 100)},
		{name: "too many negations", q: strings.Repeat("-", MaxQueryNegations+1), want: `has 33 "-" in a row`},
		{name: "negations spaced and bracketed", q: strings.Repeat(`- ("`, MaxQueryNegations+1) + "gate", want: `has 33 "-" in a row`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckQuery(tc.q)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckQuery refused a query within bounds: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("CheckQuery = %v, want an error wrapping ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckQuery = %q, want it to say %q", err, tc.want)
			}
			if len(err.Error()) > 200 {
				t.Errorf("the error is %d bytes long: it repeats the query", len(err.Error()))
			}
		})
	}
}
