package mcpserver

import (
	"errors"
	"testing"
)

// TestCursorRoundTrip: every position comes back from its cursor, under
// 2^53 (exact in JSON for every client); another campaign's key, or a
// cursor one off, is refused.
func TestCursorRoundTrip(t *testing.T) {
	key, other := []byte("key of one campaign"), []byte("key of another one")
	refusedOther, refusedNear := 0, 0
	positions := []int64{1, 2, 3, 40, 41, 45, 1000, 1<<20 + 7, 1<<cursorPosBits - 1}
	for _, pos := range positions {
		c, err := sealCursor(key, pos)
		if err != nil {
			t.Fatal(err)
		}
		if c <= 0 || c >= 1<<53 {
			t.Errorf("position %d: cursor %d is outside 1..2^53", pos, c)
		}
		if got, err := openCursor(key, c); err != nil || got != pos {
			t.Errorf("position %d: cursor %d opens to %d, %v", pos, c, got, err)
		}
		if _, err := openCursor(other, c); errors.Is(err, errCursor) {
			refusedOther++
		}
		if _, err := openCursor(key, c+1); errors.Is(err, errCursor) {
			refusedNear++
		}
	}
	// A 16-bit tag lets one wrong cursor in 65,536 through.
	if refusedOther < len(positions)-1 || refusedNear < len(positions)-1 {
		t.Errorf("of %d cursors, %d were refused under another key and %d one off; want all but at most one", len(positions), refusedOther, refusedNear)
	}
	if c, err := sealCursor(key, 0); c != 0 || err != nil {
		t.Errorf("position 0 seals to %d, %v; want 0 (from the start)", c, err)
	}
	if _, err := sealCursor(key, 1<<cursorPosBits); err == nil {
		t.Error("a position past the cursor's range was sealed")
	}
	for _, c := range []int64{-1, 1 << 53} {
		if _, err := openCursor(key, c); !errors.Is(err, errCursor) {
			t.Errorf("cursor %d: %v, want errCursor", c, err)
		}
	}
}
