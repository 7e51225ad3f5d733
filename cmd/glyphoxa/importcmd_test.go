package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An unknown entity type is a warning naming the line (an error with
// --strict, which imports nothing); what the CLI prints escapes control
// characters, so a name cannot drive the terminal.
func TestImportWarningsStrictAndEscapes(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
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

// A campaign file's language key is applied by import: the German file's
// chunks are stemmed in German ("Kette" finds "Ketten"), and --language
// overrides the key.
func TestImportAppliesFileLanguage(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	dir := t.TempDir()
	doc := `campaign: %s
language: de
sessions:
  - id: s1
    started_at: 2026-01-10T19:00:00Z
    entries:
      - {id: s1-a, speaker_id: grog, speaker_name: Grog, at: 2026-01-10T19:00:10Z, text: "Ich reiße die silbernen Ketten vom Altar."}
      - {id: s1-b, speaker_id: sl, speaker_name: SL, at: 2026-01-10T19:00:20Z, text: "Der Nebel hängt über den Booten."}
`
	for _, tc := range []struct {
		campaign string
		args     []string
		found    bool
	}{
		{"de-file", nil, true},
		{"de-file-en", []string{"--language", "en"}, false},
	} {
		path := filepath.Join(dir, tc.campaign+".yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(doc, "%s", tc.campaign, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCLI(t, vars, append(append([]string{"import"}, tc.args...), path)...)
		if code != 0 {
			t.Fatalf("import %s: %d %q %q", tc.campaign, code, out, errs)
		}
		rs := askJSON(t, vars, "--campaign", tc.campaign, "--mode", "fts", "--k", "1", "Kette")
		if got := len(rs) == 1 && strings.Contains(rs[0].Content, "Ketten"); got != tc.found {
			t.Errorf("%s: fts Kette found the chain line: %v, want %v (%+v)", tc.campaign, got, tc.found, rs)
		}
	}
}
