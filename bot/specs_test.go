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
