package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// An unknown entity type is a warning naming the line (an error with
// --strict, which imports nothing); what the CLI prints escapes control
// characters, so a name cannot drive the terminal.
func TestImportWarningsStrictAndEscapes(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": pgtest.NewDatabase(t)}
	dir := t.TempDir()
	path := filepath.Join(dir, "odd\x1b[2J.yaml")
	doc := "campaign: odd\nentities:\n  - {id: a, type: npc, name: A}\n  - {id: b, type: \"star\\e[31mship\", name: B}\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, vars, "import", "--strict", "--no-process", path)
	if code == 0 || !strings.Contains(errs, "--strict") || !strings.Contains(errs, "line 4: entity \"b\" has the type \"star\\x1b[31mship\"") {
		t.Fatalf("import --strict: %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, vars, "inspect", "--campaign", "odd")
	if strings.Contains(out, "npc") {
		t.Fatalf("--strict imported something: %s", out)
	}
	code, out, errs = runCLI(t, vars, "import", "--no-process", path)
	if code != 0 || !strings.Contains(out, "2 entities") || !strings.Contains(errs, "warning:") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	for _, s := range []string{out, errs} {
		if strings.ContainsRune(s, 0x1b) {
			t.Fatalf("raw escape sequence in the CLI output: %q", s)
		}
	}
}
