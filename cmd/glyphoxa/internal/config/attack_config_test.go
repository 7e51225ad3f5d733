package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
)

// A config.yaml is one YAML document. What follows a "---" (two files
// concatenated, or a Kubernetes-style separator) was dropped without a
// word, unknown keys and out-of-range values included; and a NaN passed
// every range check (NaN < lo and NaN > hi are both false): with
// review_threshold .nan, no fact is ever confident enough (PostgreSQL
// orders NaN above every number) and an NPC's proposed fact is stored
// with a NaN confidence the database refuses.
func TestAttackConfigSilentlyAccepted(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"second document", "memory:\n  review_threshold: 0.5\n---\nmemory:\n  review_threshold: 5\n  bogus: 1\n", "a second YAML document"},
		{"after the document end", "log:\n  level: info\n...\nmemroy: {}\n", "a second YAML document"},
		{"NaN review threshold", "memory:\n  review_threshold: .nan\n", "memory.review_threshold: must be between 0 and 1, got NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse(strings.NewReader(tc.yaml), "c.yaml", env(nil))
			if err == nil || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}
