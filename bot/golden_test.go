package bot_test

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
)

var update = flag.Bool("update", false, "rewrite testdata/commands.json from the command specs")

// TestCommandsGolden keeps testdata/commands.json (what Discord receives) in
// step with the specs; run with -update after changing a command.
func TestCommandsGolden(t *testing.T) {
	t.Parallel()
	got, err := json.MarshalIndent(bot.CommandSpecs(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/commands.json", append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(got, &a)
	json.Unmarshal(want, &b)
	if string(mustJSON(a)) != string(mustJSON(b)) {
		t.Fatal("command specs changed: review and run go test ./bot -run TestCommandsGolden -update")
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }
