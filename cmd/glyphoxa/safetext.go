package main

import (
	"fmt"
	"io"
)

// safeText writes text for a terminal: control characters other than
// newline, tab and carriage return (and the C1 controls of UTF-8) are
// written as \xNN, so a name or a transcript line holding an ANSI escape
// cannot drive the terminal. JSON output is unchanged (encoding/json
// already escapes control characters).
type safeText struct{ w io.Writer }

func (s safeText) Write(p []byte) (int, error) {
	clean := true
	for i, c := range p {
		if unsafeByte(p, i, c) {
			clean = false
			break
		}
	}
	if clean {
		return s.w.Write(p)
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == 0xC2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9F:
			out = fmt.Appendf(out, `\u%04x`, p[i+1])
			i++
		case unsafeByte(p, i, c):
			out = fmt.Appendf(out, `\x%02x`, c)
		default:
			out = append(out, c)
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

func unsafeByte(p []byte, i int, c byte) bool {
	switch {
	case c == '\n' || c == '\t' || c == '\r':
		return false
	case c < 0x20 || c == 0x7f:
		return true
	case c == 0xC2 && i+1 < len(p) && p[i+1] >= 0x80 && p[i+1] <= 0x9F:
		return true
	}
	return false
}
