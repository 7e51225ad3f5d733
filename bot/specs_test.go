package bot

import (
	"regexp"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Discord refuses a bulk overwrite that breaks any of these rules, so they
// are checked here rather than discovered at start-up.
func TestCommandSpecsFollowDiscordsRules(t *testing.T) {
	t.Parallel()
	name := regexp.MustCompile(`^[-_\p{Ll}\p{N}]{1,32}$`)
	var check func(path string, opts []*discordgo.ApplicationCommandOption)
	check = func(path string, opts []*discordgo.ApplicationCommandOption) {
		if len(opts) > 25 {
			t.Errorf("%s: %d options", path, len(opts))
		}
		optional := false
		for _, o := range opts {
			p := path + " " + o.Name
			if !name.MatchString(o.Name) {
				t.Errorf("%s: bad name", p)
			}
			if n := utf8.RuneCountInString(o.Description); n < 1 || n > 100 {
				t.Errorf("%s: description of %d characters", p, n)
			}
			if len(o.Choices) > 25 || (len(o.Choices) > 0 && o.Autocomplete) {
				t.Errorf("%s: choices", p)
			}
			if o.Type == discordgo.ApplicationCommandOptionSubCommand || o.Type == discordgo.ApplicationCommandOptionSubCommandGroup {
				check(p, o.Options)
				continue
			}
			if o.Required && optional {
				t.Errorf("%s: a required option after an optional one", p)
			}
			optional = optional || !o.Required
		}
	}
	seen := map[string]bool{}
	for _, c := range commandSpecs() {
		if !name.MatchString(c.Name) || seen[c.Name] {
			t.Errorf("command %q: bad or duplicate name", c.Name)
		}
		seen[c.Name] = true
		if n := utf8.RuneCountInString(c.Description); n < 1 || n > 100 {
			t.Errorf("/%s: description of %d characters", c.Name, n)
		}
		check("/"+c.Name, c.Options)
	}
}

// Every registered command path is in the handler table with a stated role,
// and the table holds nothing that is not registered. A new subcommand that
// is not added to the table is refused (deny by default).
func TestEveryCommandStatesItsRole(t *testing.T) {
	t.Parallel()
	table := commandHandlers()
	var paths []string
	var walk func(path string, opts []*discordgo.ApplicationCommandOption) bool
	walk = func(path string, opts []*discordgo.ApplicationCommandOption) bool {
		leaf := true
		for _, o := range opts {
			if o.Type == discordgo.ApplicationCommandOptionSubCommand || o.Type == discordgo.ApplicationCommandOptionSubCommandGroup {
				leaf = false
				if walk(path+" "+o.Name, o.Options) {
					paths = append(paths, path+" "+o.Name)
				}
			}
		}
		return leaf
	}
	for _, c := range commandSpecs() {
		if walk(c.Name, c.Options) {
			paths = append(paths, c.Name)
		}
	}
	registered := map[string]bool{}
	for _, p := range paths {
		registered[p] = true
		if _, ok := table[p]; !ok {
			t.Errorf("/%s has no entry in the handler table", p)
		}
	}
	for p, h := range table {
		if !registered[p] {
			t.Errorf("the handler table has /%s, which is not registered", p)
		}
		if h.run == nil {
			t.Errorf("/%s has no handler", p)
		}
	}
	b := &Bot{handlers: table}
	for _, tc := range []struct {
		path string
		dm   bool
	}{
		{"session start", true}, {"session status", true}, {"npc say", true}, {"npc list", true},
		{"memory pending", true}, {"memory search", false}, {"memory entity show", true}, {"recap", false},
		{"privacy forget-me", false}, {"npc brand-new-subcommand", true}, {"", true},
	} {
		if got := b.requiresDM(tc.path); got != tc.dm {
			t.Errorf("requiresDM(%q) = %v, want %v", tc.path, got, tc.dm)
		}
	}
}
