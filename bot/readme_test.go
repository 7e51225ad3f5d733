package bot

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// readmeCommands reads the slash-command table of the README (the table
// whose header is "| command | who | what |"): each command path the first
// cell names in backticks, with the role of its row ("DM" or "all").
func readmeCommands(t *testing.T, readme string) map[string]string {
	t.Helper()
	lines := strings.Split(readme, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == "| command | who | what |" {
			if start >= 0 {
				t.Fatal("the README has two slash-command tables")
			}
			start = i
		}
	}
	if start < 0 {
		t.Fatal(`the README has no slash-command table (header "| command | who | what |")`)
	}
	path := regexp.MustCompile("`/([^`]+)`")
	out := map[string]string{}
	for _, l := range lines[start+2:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		if len(cells) < 3 {
			t.Fatalf("README command row with %d cells: %q", len(cells), l)
		}
		who := strings.TrimSpace(cells[1])
		if who != "DM" && who != "all" {
			t.Errorf("README command row says who = %q, want DM or all: %q", who, l)
		}
		ms := path.FindAllStringSubmatch(cells[0], -1)
		if len(ms) == 0 {
			t.Errorf("README command row names no `/command`: %q", l)
		}
		for _, m := range ms {
			p := strings.TrimSpace(m[1])
			if prev, ok := out[p]; ok {
				t.Errorf("README names /%s twice (%s and %s)", p, prev, who)
			}
			out[p] = who
		}
	}
	return out
}

// The README's command table and the bot's handler table name the same
// commands with the same role, so the documentation cannot promise a DM
// command that players can run (or the reverse).
func TestREADMECommandTableMatches(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := readmeCommands(t, string(raw))
	table := commandHandlers()
	var paths []string
	for p := range table {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		want := "DM"
		if table[p].who == forEveryone {
			want = "all"
		}
		got, ok := doc[p]
		switch {
		case !ok:
			t.Errorf("/%s (%s) is not in the README's command table", p, want)
		case got != want:
			t.Errorf("/%s: the README says %s, the handler table %s", p, got, want)
		}
	}
	for p := range doc {
		if _, ok := table[p]; !ok {
			t.Errorf("the README names /%s, which the bot does not have", p)
		}
	}
}

// The parser itself: a row naming several commands, and a table that
// disagrees, are read as written.
func TestReadmeCommandsParser(t *testing.T) {
	t.Parallel()
	got := readmeCommands(t, "text\n\n| command | who | what |\n|---|---|---|\n"+
		"| `/a b`, `/a c` | DM | x |\n| `/d` (scope: x) | all | y |\n\nafter\n| `/z` | DM | not in the table |\n")
	want := map[string]string{"a b": "DM", "a c": "DM", "d": "all"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %q, want %q", k, got[k], v)
		}
	}
}
