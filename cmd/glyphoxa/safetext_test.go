package main

import (
	"bytes"
	"testing"
)

func TestSafeTextEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"plain line\n\ttab\r":         "plain line\n\ttab\r",
		"Grim\x1b[2Jjaw":              `Grim\x1b[2Jjaw`,
		"bell\a nul\x00 del\x7f":      `bell\x07 nul\x00 del\x7f`,
		"c1 \u009b31m é ü":            `c1 \u009b31m é ü`,
		`{"name":"Grim\u001b[2Jjaw"}`: `{"name":"Grim\u001b[2Jjaw"}`,
	} {
		var b bytes.Buffer
		n, err := safeText{&b}.Write([]byte(in))
		if err != nil || n != len(in) || b.String() != want {
			t.Errorf("Write(%q) = %d, %v, wrote %q; want %q", in, n, err, b.String(), want)
		}
	}
}
