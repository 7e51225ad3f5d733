package console

import "testing"

// TestCachedViewsAreBounded: a snapshot keeps encoded views up to
// maxCachedBytes together and maxCachedViews in number, and never one
// larger than the byte bound.
func TestCachedViewsAreBounded(t *testing.T) {
	sn := &snapshot{json: map[string][]byte{}}
	big := make([]byte, maxCachedBytes/2+1)
	sn.storeJSON("a", big)
	sn.storeJSON("b", big) // a and b would exceed the bound: a goes
	if _, ok := sn.cachedJSON("a"); ok {
		t.Error("two views over the byte bound are both kept")
	}
	if _, ok := sn.cachedJSON("b"); !ok {
		t.Error("the view just stored is not kept")
	}
	sn.storeJSON("huge", make([]byte, maxCachedBytes+1))
	if _, ok := sn.cachedJSON("huge"); ok || sn.jsonBytes != 0 {
		t.Errorf("a view over the bound is kept (%d bytes held)", sn.jsonBytes)
	}
	for i := range maxCachedViews + 1 {
		sn.storeJSON(string(rune('A'+i)), []byte("{}"))
	}
	if len(sn.json) > maxCachedViews {
		t.Errorf("%d views kept, bound %d", len(sn.json), maxCachedViews)
	}
}
