package scene_test

import (
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/table/scene"
)

// A misspelt key of a scene is named, with its line and the keys meant,
// every one of them in one run.
func TestParseNamesUnknownKeys(t *testing.T) {
	_, err := scene.Parse(strings.NewReader("session: s9\nplayrs: []\nlines:\n  - {speaker: Thorin, sya: hello}\n  - {comand: /npc list, by: DM}\n"), "s.yaml")
	if err == nil {
		t.Fatal("a scene with unknown keys parsed")
	}
	for _, want := range []string{
		`s.yaml: line 2: top level: unknown key "playrs"; did you mean "players"? (valid keys here: session, start, players, lines)`,
		`s.yaml: line 4: lines[0]: unknown key "sya"; did you mean "say"? (valid keys here: speaker, say, heard, after, command, by)`,
		`s.yaml: line 5: lines[1]: unknown key "comand"; did you mean "command"?`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}
