// Package evalcorpus loads the transcript-correction evaluation corpus and
// scores a matcher on it.
//
// The corpus is a directory holding entities.yaml (a campaign file),
// misheard.txt (utterances with names misheard, marked [heard|entity-id])
// and tabletalk.txt (utterances without names). Lines starting with # are
// comments.
package evalcorpus

import (
	"bufio"
	"fmt"
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

// Run scores a matcher on the corpus. A substitution is correct when it
// covers exactly a misheard name's words and names the right entity.
func Run(m *correction.Matcher, c *Corpus) (Report, error) {
	p, err := m.PrepareEntities(c.Entities)
	if err != nil {
		return Report{}, err
	}
	var r Report
	for _, tc := range c.Misheard {
		res := m.MatchPrepared(tc.Heard, p)
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
		res := m.MatchPrepared(tc.Heard, p)
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
