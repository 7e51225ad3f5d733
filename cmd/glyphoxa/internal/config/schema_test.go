package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
)

// One run names every unknown key and wrongly typed value, each with its
// line, not only the first.
func TestSchemaNamesEveryProblem(t *testing.T) {
	yaml := "discord:\n  tokn: x\nmemroy: {}\nlog: {levl: debug}\nvoice:\n  end_of_turn: soon\n"
	_, err := config.Parse(strings.NewReader(yaml), "c.yaml", env(nil))
	if !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	for _, want := range []string{
		"4 problems",
		"discord.tokn (line 2): unknown key; did you mean token?",
		"memroy (line 3): unknown key; did you mean memory?",
		"log.levl (line 4): unknown key; did you mean level?",
		"voice.end_of_turn (line 6): not a duration",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}
