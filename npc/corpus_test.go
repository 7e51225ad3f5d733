package npc_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/npc"
)

// addressingCorpus is testdata/addressing-corpus.yaml.
type addressingCorpus struct {
	Names  map[string][]string `yaml:"names"`
	NPCs   []string            `yaml:"npcs"`
	Scenes []struct {
		Name     string   `yaml:"name"`
		Language string   `yaml:"language"`
		Present  []string `yaml:"present"`
		Lines    []struct {
			Speaker string        `yaml:"speaker"`
			Text    string        `yaml:"text"`
			After   time.Duration `yaml:"after"`
			Want    []string      `yaml:"want"`
			Split   bool          `yaml:"split"`
		} `yaml:"lines"`
	} `yaml:"scenes"`
}

// corpusScore counts (line, NPC) decisions: an NPC that answers and should
// is a true positive, one that answers and should not a false positive, one
// that should answer and does not a false negative. Split vocatives are
// counted apart: merged (held, then answered with their continuation as
// one turn), missed, and lines held that were not a name alone.
type corpusScore struct {
	tp, fp, fn                 int
	merged, missed, wrongHolds int
	lines                      int
	errors                     []string
}

func (s corpusScore) precision() float64 { return ratio(s.tp, s.tp+s.fp) }
func (s corpusScore) recall() float64    { return ratio(s.tp, s.tp+s.fn) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// corpusMergeWait is the table's merge wait (table.DefaultMergeWait): a
// name said alone waits this long for the same speaker to go on.
const corpusMergeWait = 2 * time.Second

// playCorpus plays every scene through an Addresser, as the table's turn
// loop does: a name said alone is held until the same speaker goes on
// within the merge wait (the two are one turn) or the wait passes (it is
// answered alone); every NPC that answers is noted as having replied.
func playCorpus(t *testing.T, path string) corpusScore {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c addressingCorpus
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	finder := newExactNames(c.Names)
	isNPC := func(id string) bool { return slices.Contains(c.NPCs, id) }
	var sc corpusScore
	for _, scene := range c.Scenes {
		a := npc.NewAddresser(finder, isNPC, nil, 0)
		if scene.Language != "" && !a.UseLanguage(scene.Language) {
			t.Fatalf("scene %q: no addressing rules for language %q", scene.Name, scene.Language)
		}
		at := time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)
		type held struct {
			text  string
			at    time.Time
			k     int
			split bool
			want  []string
		}
		holding := map[string]*held{}
		score := func(k int, text string, want, got []string, reason string) {
			sc.lines++
			for _, id := range got {
				if slices.Contains(want, id) {
					sc.tp++
				} else {
					sc.fp++
				}
			}
			for _, id := range want {
				if !slices.Contains(got, id) {
					sc.fn++
				}
			}
			if !slices.Equal(want, got) {
				sc.errors = append(sc.errors, fmt.Sprintf("%s #%d %q: got %v (%s), want %v", scene.Name, k+1, text, got, reason, want))
			}
		}
		decide := func(k int, speaker, text string, now time.Time, want []string) {
			d := a.Decide(npc.AddressInput{Text: text, SpeakerID: speaker, At: now, Present: scene.Present})
			score(k, text, want, d.NPCIDs, d.Reason)
			for _, id := range d.NPCIDs {
				a.NoteReply(id, speaker, now.Add(2*time.Second))
			}
		}
		// expire answers, alone, the names held longer than the merge
		// wait by now.
		expire := func(now time.Time) {
			for sp, h := range holding {
				if now.Sub(h.at) > corpusMergeWait {
					delete(holding, sp)
					if h.split {
						sc.missed++
					}
					decide(h.k, sp, h.text, h.at.Add(corpusMergeWait), h.want)
				}
			}
		}
		for k, l := range scene.Lines {
			after := l.After
			if after == 0 {
				after = 3 * time.Second
			}
			at = at.Add(after)
			expire(at)
			if h, ok := holding[l.Speaker]; ok {
				delete(holding, l.Speaker)
				if h.split {
					sc.merged++
				} else {
					sc.wrongHolds++
					sc.errors = append(sc.errors, fmt.Sprintf("%s #%d %q: held and merged with the next line", scene.Name, h.k+1, h.text))
				}
				decide(k, l.Speaker, h.text+" "+l.Text, at, l.Want)
			} else if _, ok := a.Lone(l.Text, scene.Present); ok {
				holding[l.Speaker] = &held{text: l.Text, at: at, k: k, split: l.Split, want: l.Want}
			} else {
				if l.Split {
					sc.missed++
					sc.errors = append(sc.errors, fmt.Sprintf("%s #%d %q: a name alone, not held", scene.Name, k+1, l.Text))
				}
				decide(k, l.Speaker, l.Text, at, l.Want)
			}
			at = at.Add(time.Duration(len(strings.Fields(l.Text))) * 300 * time.Millisecond)
		}
		expire(at.Add(time.Hour))
	}
	return sc
}

// TestAddressingCorpus reports addressing precision and recall on the
// corpus, and the split vocatives merged; the targets are 0.95 each and
// every split vocative merged.
func TestAddressingCorpus(t *testing.T) {
	sc := playCorpus(t, "testdata/addressing-corpus.yaml")
	t.Logf("addressing corpus: %d lines, precision %.3f (%d/%d), recall %.3f (%d/%d); split vocatives merged %d, missed %d, wrongly held %d",
		sc.lines, sc.precision(), sc.tp, sc.tp+sc.fp, sc.recall(), sc.tp, sc.tp+sc.fn, sc.merged, sc.missed, sc.wrongHolds)
	for _, e := range sc.errors {
		t.Log(e)
	}
	if sc.lines < 100 {
		t.Errorf("only %d lines scored", sc.lines)
	}
	if sc.precision() < 0.95 || sc.recall() < 0.95 {
		t.Errorf("precision %.3f, recall %.3f: the target is 0.95 each", sc.precision(), sc.recall())
	}
	if sc.missed > 0 || sc.wrongHolds > 0 || sc.merged == 0 {
		t.Errorf("split vocatives: %d merged, %d missed, %d lines wrongly held", sc.merged, sc.missed, sc.wrongHolds)
	}
}

// TestAddressingHeldOut reports the same scores on a corpus written after
// the rules were tuned on addressing-corpus.yaml, with other names. Its
// first score was precision 0.889 (24/27), recall 1.000: two misses were
// fixed after it (a long narration starting with a name, German plural
// verbs after two names), so it is held out no longer.
func TestAddressingHeldOut(t *testing.T) {
	sc := playCorpus(t, "testdata/addressing-heldout.yaml")
	t.Logf("held-out addressing corpus: %d lines, precision %.3f (%d/%d), recall %.3f (%d/%d); split vocatives merged %d, missed %d, wrongly held %d",
		sc.lines, sc.precision(), sc.tp, sc.tp+sc.fp, sc.recall(), sc.tp, sc.tp+sc.fn, sc.merged, sc.missed, sc.wrongHolds)
	for _, e := range sc.errors {
		t.Log(e)
	}
	if sc.precision() < 0.95 || sc.recall() < 0.95 {
		t.Errorf("precision %.3f, recall %.3f on the held-out corpus", sc.precision(), sc.recall())
	}
}
