// Package scene plays a scripted scene through a table: the production
// turn loop of package table, with a loopback transport in place of
// Discord and a virtual clock, so that a 45-minute scene runs in seconds
// while consolidation, summaries and indexing happen as they would in real
// time. glyphoxa demo --scene and the table's tests use it.
//
// # Scene files
//
// A scene is YAML:
//
//	session: s4-tavern            # the session id (default: scene)
//	start: 2026-03-20T19:00:00Z   # when it takes place (default 2026-03-15 19:00 UTC)
//	players:                      # optional: ids and speech synthesis voices
//	  - {name: Thorin, id: "111", voice: en-us}
//	lines:
//	  - speaker: Thorin
//	    say: "Brannoc, what do you know about the Ashen Circle?"
//	    heard: "bran ock what do you know about the ashen circle"  # optional
//	    after: 30s                # optional pause before the line
//	  - command: "/npc scene brannoc grimjaw"
//	    by: DM
//	  - command: "/privacy forget-me"
//	    by: Thorin
//
// A line is spoken by a player: its words are synthesised (or, when heard
// is given, a short voiced sound stands for them and speech-to-text returns
// heard), encoded as Opus frames as a Discord client sends them, and go
// through the audio lanes, speech-to-text, name correction, the session
// log, addressing and, when an NPC is addressed, its turn. Commands are run
// as the bot runs them for their author (see [Commands]).
//
// Scene time passes in steps of a second at most, and the table's periodic
// work (the lanes' ticks, name refresh, consolidation) runs at each step.
// A line's frames are sent at once, each stamped with the scene time it
// arrives at (one every 20 ms, as Discord delivers them), and then the
// line's length and the silence that ends its utterance pass. Scene time
// stands still while the table works in real time: speech-to-text once the
// utterance has ended, and the turns that answer it.
package scene

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/internal/yamlkeys"
)

// File is a scene.
type File struct {
	Session string    `yaml:"session"`
	Start   time.Time `yaml:"start"`
	Players []Player  `yaml:"players"`
	Lines   []Step    `yaml:"lines"`
}

// Player is a player at the table.
type Player struct {
	Name string `yaml:"name"`
	// ID is the player's Discord user id (default: derived from the name).
	ID string `yaml:"id"`
	// Voice is the speech synthesis voice of their lines (espeak-ng names).
	Voice string `yaml:"voice"`
}

// Step is a line or a command.
type Step struct {
	Speaker string `yaml:"speaker"`
	Say     string `yaml:"say"`
	// Heard, when set, is what speech-to-text returns for the line.
	Heard *string `yaml:"heard"`
	// After is the pause before the step.
	After Duration `yaml:"after"`
	// Command is a slash command as typed, run by By (a player's name, or
	// DM).
	Command string `yaml:"command"`
	By      string `yaml:"by"`

	line int // in the file, for errors
}

// Duration is a time.Duration written as "30s", "2m".
type Duration time.Duration

// UnmarshalYAML parses a duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: a duration such as 30s or 2m: %w", n.Line, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration such as 30s or 2m", n.Line, s)
	}
	if v < 0 {
		return fmt.Errorf("line %d: a pause cannot be negative (%s)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// DefaultStart is when a scene without a start takes place.
var DefaultStart = time.Date(2026, 3, 15, 19, 0, 0, 0, time.UTC)

// DM is the author of the DM's commands.
const DM = "DM"

// maxSceneBytes bounds a scene file.
const maxSceneBytes = 4 << 20

// Parse reads a scene; name is used in errors. Every error names the line
// it is about.
func Parse(r io.Reader, name string) (*File, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxSceneBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(b) > maxSceneBytes {
		return nil, fmt.Errorf("%s: a scene file is at most %d MiB", name, maxSceneBytes>>20)
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: the scene is empty", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Decoding a node ignores unknown keys: name each misspelt one, with
	// its line and the keys meant.
	if unknown := yamlkeys.Check(&root, File{}); len(unknown) > 0 {
		errs := make([]error, len(unknown))
		for i, u := range unknown {
			errs[i] = fmt.Errorf("%s: %w", name, u)
		}
		return nil, errors.Join(errs...)
	}
	var f File
	if err := root.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Remember each step's line for errors.
	if len(root.Content) == 1 && root.Content[0].Kind == yaml.MappingNode {
		m := root.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == "lines" {
				for k, n := range m.Content[i+1].Content {
					if k < len(f.Lines) {
						f.Lines[k].line = n.Line
					}
				}
			}
		}
	}
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &f, nil
}

func (f *File) validate() error {
	if f.Session == "" {
		f.Session = "scene"
	}
	if f.Start.IsZero() {
		f.Start = DefaultStart
	}
	if len(f.Lines) == 0 {
		return errors.New("the scene has no lines")
	}
	names := map[string]bool{}
	for i, p := range f.Players {
		if strings.TrimSpace(p.Name) == "" {
			return fmt.Errorf("player %d has no name", i+1)
		}
		if strings.EqualFold(p.Name, DM) {
			return fmt.Errorf("player %q: DM is the game master's name in commands", p.Name)
		}
		if names[strings.ToLower(p.Name)] {
			return fmt.Errorf("player %q is listed twice", p.Name)
		}
		names[strings.ToLower(p.Name)] = true
		if p.ID == "" {
			f.Players[i].ID = playerID(p.Name)
		}
	}
	for i, s := range f.Lines {
		where := fmt.Sprintf("line %d", s.line)
		if s.line == 0 {
			where = fmt.Sprintf("step %d", i+1)
		}
		switch {
		case s.Command != "" && (s.Say != "" || s.Heard != nil || s.Speaker != ""):
			return fmt.Errorf("%s: a step is a line (speaker, say) or a command (command, by), not both", where)
		case s.Command != "":
			if !strings.HasPrefix(strings.TrimSpace(s.Command), "/") {
				return fmt.Errorf("%s: command %q must start with /", where, s.Command)
			}
			if s.By == "" {
				return fmt.Errorf("%s: command %q needs by: (a player's name, or DM)", where, s.Command)
			}
			if !strings.EqualFold(s.By, DM) {
				f.player(s.By)
			}
		case s.Speaker == "":
			return fmt.Errorf("%s: a line needs a speaker", where)
		case strings.TrimSpace(s.Say) == "" && (s.Heard == nil || strings.TrimSpace(*s.Heard) == ""):
			return fmt.Errorf("%s: the line of %s says nothing", where, s.Speaker)
		default:
			if strings.EqualFold(s.Speaker, DM) {
				return fmt.Errorf("%s: the DM does not speak lines in a scene; give the player's name", where)
			}
			f.player(s.Speaker)
		}
	}
	return nil
}

// player returns the player of that name, adding one when the scene did
// not list them.
func (f *File) player(name string) Player {
	for _, p := range f.Players {
		if strings.EqualFold(p.Name, name) {
			return p
		}
	}
	p := Player{Name: name, ID: playerID(name)}
	f.Players = append(f.Players, p)
	return p
}

// playerID derives a stable, Discord-like user id from a name.
func playerID(name string) string {
	var h uint64 = 1469598103934665603
	for _, b := range []byte(strings.ToLower(name)) {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return fmt.Sprintf("%d", 100000000000000000+h%800000000000000000)
}
