package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, "../../testdata/holdout", true, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"recall:", "precision:", "altered:", "miss  line"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(&out, t.TempDir(), false, 0); err == nil {
		t.Error("empty directory accepted")
	}
}
