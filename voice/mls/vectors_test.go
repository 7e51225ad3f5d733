package mls

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// hexBytes decodes a hex string in vector JSON.
type hexBytes []byte

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if s == nil {
		*h = nil
		return nil
	}
	v, err := hex.DecodeString(*s)
	if err != nil {
		return err
	}
	*h = v
	return nil
}

func loadVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading vectors: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", name, err)
	}
}

// tally counts vector outcomes per file; skips carry a reason.
type tally struct {
	passed, failed int
	skipped        map[string]int
}

func (s *tally) record(ok bool) {
	if ok {
		s.passed++
	} else {
		s.failed++
	}
}

func (s *tally) skip(reason string) {
	if s.skipped == nil {
		s.skipped = map[string]int{}
	}
	s.skipped[reason]++
}

func (s *tally) report(t *testing.T, file string) {
	t.Helper()
	n := 0
	var reasons []string
	for r, c := range s.skipped {
		n += c
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	var b strings.Builder
	for _, r := range reasons {
		b.WriteString("; skipped ")
		b.WriteString(itoa(s.skipped[r]))
		b.WriteString(": ")
		b.WriteString(r)
	}
	t.Logf("%s: %d passed, %d skipped, %d failed%s", file, s.passed, n, s.failed, b.String())
	if s.passed == 0 {
		t.Errorf("%s: no case passed", file)
	}
	if n > s.passed {
		t.Errorf("%s: skips (%d) outnumber passes (%d)", file, n, s.passed)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
