package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestSubcommandHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := runCLI(t, nil, c.name, "-h")
			help := out + errs
			if code != 0 {
				t.Fatalf("exit %d: %s", code, help)
			}
			for _, want := range []string{"glyphoxa " + c.name + ": " + c.summary + ".", "Usage: glyphoxa " + c.name, "Examples:\n  "} {
				if !strings.Contains(help, want) {
					t.Errorf("help lacks %q:\n%s", want, help)
				}
			}
		})
	}
}

// TestHelpExamplesRun: a token an example sets is one the command takes
// (at least 16 characters), so the example a user copies is not refused.
func TestHelpExamplesRun(t *testing.T) {
	t.Parallel()
	token := regexp.MustCompile(`MCP_(?:DM_)?TOKEN=(\S+)`)
	for _, c := range commands() {
		for _, ex := range commandExamples(c.name) {
			for _, m := range token.FindAllStringSubmatch(ex, -1) {
				if v := m[1]; !strings.HasPrefix(v, "$") && len(v) < 16 {
					t.Errorf("glyphoxa %s -h: example %q sets a token of %d characters, which the command refuses (at least 16)", c.name, ex, len(v))
				}
			}
		}
	}
}

func TestReadCommandsNeverCreateACampaign(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn, "GLYPHOXA_LLM_BASE_URL": "http://127.0.0.1:1/v1", "GLYPHOXA_LLM_MODEL": "m"}
	if code, _, errs := runCLI(t, vars, "ask", "--campaign", "nothing-yet", "where?"); code != 1 ||
		!strings.Contains(errs, `campaign "nothing-yet" does not exist: the database has no campaigns yet`) {
		t.Errorf("empty database: exit %d, %q", code, errs)
	}
	if code, out, errs := runCLI(t, vars, "import", "--no-process", "../../testdata/campaigns/ironhold-saga.yaml"); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errs)
	}
	tests := []struct {
		name string
		args []string
	}{
		{"ask", []string{"ask", "--campaign", "ironhold-sag", "Where is Grimjaw?"}},
		{"inspect", []string{"inspect", "--campaign", "ironhold-sag"}},
		{"chat", []string{"chat", "--campaign", "ironhold-sag", "--npc", "grimjaw"}},
		{"mcp", []string{"mcp", "--campaign", "ironhold-sag"}},
		{"process", []string{"process", "--campaign", "ironhold-sag"}},
		{"correct", []string{"correct", "--campaign", "ironhold-sag", "grim jaw"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := runCLI(t, vars, tt.args...)
			if code != 1 || !strings.Contains(errs, `campaign "ironhold-sag" does not exist; known campaigns: ironhold-saga (did you mean "ironhold-saga"?)`) {
				t.Errorf("exit %d, stderr %q", code, errs)
			}
		})
	}
	s, err := postgres.NewStore(context.Background(), dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, err := s.Campaigns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "ironhold-saga" {
		t.Errorf("campaigns after the read commands: %v, want only ironhold-saga", ids)
	}
}

// flagLine is a flag as `-h` lists it (flag.PrintDefaults: "  -name …").
var flagLine = regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)

// TestUsageListsEveryFlag: every flag a command takes is in its usage line
// (`-h`'s "Usage:", and the line a usage error prints), and in the
// README's table of commands, where --config and --dsn, which every
// command that reads the configuration or the database takes, are said
// once below the table.
func TestUsageListsEveryFlag(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(string(readme), "\n") {
		if m := regexp.MustCompile("^\\| `glyphoxa ([a-z]+) ?([^`]*)` \\|").FindStringSubmatch(l); m != nil {
			rows[m[1]] = m[2]
		}
	}
	mentions := func(usage, name string) bool {
		return regexp.MustCompile(`(^|[\s\[|])--` + regexp.QuoteMeta(name) + `($|[\s\]|=])`).MatchString(usage)
	}
	for _, c := range commands() {
		_, out, errs := runCLI(t, nil, c.name, "-h")
		help := out + errs
		flags := flagLine.FindAllStringSubmatch(help[strings.Index(help, "\nFlags:"):], -1)
		if len(flags) == 0 {
			t.Errorf("glyphoxa %s -h lists no flags:\n%s", c.name, help)
		}
		row, documented := rows[c.name]
		if !documented {
			t.Errorf("README's table of commands has no row for glyphoxa %s", c.name)
		}
		for _, f := range flags {
			if !mentions(c.usage, f[1]) {
				t.Errorf("glyphoxa %s: the usage line %q omits --%s", c.name, c.usage, f[1])
			}
			if documented && f[1] != "config" && f[1] != "dsn" && !mentions(row, f[1]) {
				t.Errorf("README: the row of glyphoxa %s (%q) omits --%s", c.name, row, f[1])
			}
		}
	}
}
