// Package evalcorpus loads the transcript-correction evaluation corpus and
// scores a matcher on it.
//
// The corpus is a directory holding entities.yaml (a campaign file),
// misheard.txt (utterances with names misheard, marked [heard|entity-id]),
// tabletalk.txt (utterances without names) and, optionally, language.txt
// (the corpus's language, a BCP-47 code such as "de"; English without it).
// Lines starting with # are comments.
package evalcorpus

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
)

// Gold is one misheard name of an utterance.
type Gold struct {
	// Start and End are byte offsets of the misheard words in the heard
	// text; a trailing possessive 's is excluded.
	Start, End int
	Heard      string
	EntityID   string
}

// Case is one utterance of the corpus.
type Case struct {
	Line  int
	Heard string
	Golds []Gold
}

// Corpus is a loaded corpus.
type Corpus struct {
	// Language is the corpus's language ("" for English).
	Language  string
	Entities  []correction.Entity
	Misheard  []Case
	TableTalk []Case
}

// Load reads the corpus in dir.
func Load(dir string) (*Corpus, error) {
	f, err := os.Open(filepath.Join(dir, "entities.yaml"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, f.Name())
	if err != nil {
		return nil, err
	}
	c := &Corpus{Entities: correction.FromMemory(cf.MemoryEntities())}
	switch lang, err := os.ReadFile(filepath.Join(dir, "language.txt")); {
	case err == nil:
		c.Language = strings.TrimSpace(string(lang))
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("reading the corpus language: %w", err)
	}
	ids := map[string]bool{}
	for _, e := range c.Entities {
		ids[e.ID] = true
	}
	if c.Misheard, err = readCases(filepath.Join(dir, "misheard.txt"), ids); err != nil {
		return nil, err
	}
	if c.TableTalk, err = readCases(filepath.Join(dir, "tabletalk.txt"), ids); err != nil {
		return nil, err
	}
	for _, tc := range c.TableTalk {
		if len(tc.Golds) > 0 {
			return nil, fmt.Errorf("tabletalk.txt line %d: marks a name; entity-free utterances must not", tc.Line)
		}
	}
	return c, nil
}

func readCases(path string, ids map[string]bool) ([]Case, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Case
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tc, err := ParseCase(line)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		for _, g := range tc.Golds {
			if !ids[g.EntityID] {
				return nil, fmt.Errorf("%s line %d: unknown entity %q", path, n, g.EntityID)
			}
		}
		tc.Line = n
		out = append(out, tc)
	}
	return out, sc.Err()
}

// ParseCase reads one marked-up utterance.
func ParseCase(line string) (Case, error) {
	var tc Case
	var b strings.Builder
	rest := line
	for {
		open := strings.IndexByte(rest, '[')
		if open < 0 {
			if strings.ContainsAny(rest, "]|") {
				return tc, fmt.Errorf("stray ] or | in %q", line)
			}
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:open])
		closing := strings.IndexByte(rest[open:], ']')
		if closing < 0 {
			return tc, fmt.Errorf("unclosed [ in %q", line)
		}
		heard, id, ok := strings.Cut(rest[open+1:open+closing], "|")
		if !ok || heard == "" || id == "" {
			return tc, fmt.Errorf("mark %q is not [heard|entity-id]", rest[open:open+closing+1])
		}
		start := b.Len()
		b.WriteString(heard)
		end := b.Len()
		for _, suf := range []string{"'s", "’s"} {
			if strings.HasSuffix(heard, suf) {
				end -= len(suf)
			}
		}
		tc.Golds = append(tc.Golds, Gold{Start: start, End: end, Heard: heard, EntityID: id})
		rest = rest[open+closing+1:]
	}
	tc.Heard = b.String()
	return tc, nil
}

// Miss is a misheard name the matcher did not restore.
type Miss struct {
	Case Case
	Gold Gold
	// Got is what the matcher produced.
	Got string
}

// Wrong is a substitution that should not have been made.
type Wrong struct {
	Case Case
	Sub  correction.Substitution
}

// Report is the score of a matcher on a corpus.
type Report struct {
	Names, Restored   int
	Substitutions     int
	CorrectSubs       int
	EntityFree        int
	EntityFreeAltered int
	Misses            []Miss
	Wrongs            []Wrong
}

// Recall is the share of misheard names restored.
func (r Report) Recall() float64 { return ratio(r.Restored, r.Names) }

// Precision is the share of substitutions that restored a misheard name.
func (r Report) Precision() float64 { return ratio(r.CorrectSubs, r.Substitutions) }

// AlteredShare is the share of entity-free utterances changed.
func (r Report) AlteredShare() float64 { return ratio(r.EntityFreeAltered, r.EntityFree) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Mode is the evidence the matcher is given with each utterance.
type Mode int

// Evidence modes.
const (
	// NoEvidence: the words alone ([correction.Matcher.MatchPrepared]).
	NoEvidence Mode = iota
	// Scene: the misheard names of a line are in play (the table is
	// talking to or about them); for entity-free lines no name is.
	Scene
	// AllInPlay: every name of the corpus is in play, for every line
	// (the worst case for entity-free lines).
	AllInPlay
	// Confident: every name is in play and the recogniser reports word
	// confidences: 0.4 for the words of a misheard name, 0.95 for the rest.
	Confident
)

func (md Mode) String() string {
	return [...]string{"no evidence", "scene", "all names in play", "all in play + confidences"}[md]
}

// evidence is the evidence of mode md for case tc.
func evidence(md Mode, tc Case, c *Corpus) *correction.Evidence {
	ev := &correction.Evidence{InPlay: map[string]bool{}}
	switch md {
	case NoEvidence:
		return nil
	case Scene:
		for _, g := range tc.Golds {
			ev.InPlay[g.EntityID] = true
		}
		return ev
	}
	for _, e := range c.Entities {
		ev.InPlay[e.ID] = true
	}
	if md == Confident {
		for _, sp := range correction.WordSpans(tc.Heard) {
			conf := 0.95
			for _, g := range tc.Golds {
				if sp[0] < g.End && sp[1] > g.Start {
					conf = 0.4
				}
			}
			ev.Confidences = append(ev.Confidences, conf)
		}
	}
	return ev
}

// Run scores a matcher on the corpus without evidence. A substitution is
// correct when it covers exactly a misheard name's words and names the
// right entity.
func Run(m *correction.Matcher, c *Corpus) (Report, error) { return RunMode(m, c, NoEvidence) }

// RunMode scores a matcher on the corpus, giving it the evidence of md.
func RunMode(m *correction.Matcher, c *Corpus, md Mode) (Report, error) {
	p, err := m.PrepareEntities(c.Entities)
	if err != nil {
		return Report{}, err
	}
	var r Report
	for _, tc := range c.Misheard {
		res := m.MatchEvidence(tc.Heard, p, evidence(md, tc, c))
		used := make([]bool, len(res.Substitutions))
		for _, g := range tc.Golds {
			r.Names++
			ok := false
			for k, s := range res.Substitutions {
				if s.Start == g.Start && s.End == g.End && s.EntityID == g.EntityID {
					ok, used[k] = true, true
				}
			}
			if ok {
				r.Restored++
			} else {
				r.Misses = append(r.Misses, Miss{Case: tc, Gold: g, Got: res.Text})
			}
		}
		for k, s := range res.Substitutions {
			r.Substitutions++
			if used[k] {
				r.CorrectSubs++
			} else {
				r.Wrongs = append(r.Wrongs, Wrong{Case: tc, Sub: s})
			}
		}
	}
	for _, tc := range c.TableTalk {
		r.EntityFree++
		res := m.MatchEvidence(tc.Heard, p, evidence(md, tc, c))
		if res.Changed() {
			r.EntityFreeAltered++
		}
		for _, s := range res.Substitutions {
			r.Substitutions++
			r.Wrongs = append(r.Wrongs, Wrong{Case: tc, Sub: s})
		}
	}
	return r, nil
}
