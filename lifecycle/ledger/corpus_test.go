package ledger_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
)

type corpusScene struct {
	Name   string
	People []struct{ Name, Type string }
	Lines  []struct{ Speaker, Text string }
	Want   []struct {
		Kind, From, To, What string
		Line                 int
	}
}

type corpus struct{ Scenes []corpusScene }

func loadCorpus(t *testing.T, path string) corpus {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// lines turns a scene into transcript entries, a minute apart; the DM's
// lines have no speaker among the people.
func (s corpusScene) entries() ([]memory.TranscriptEntry, []ledger.Person) {
	start := time.Date(2026, 5, 1, 19, 0, 0, 0, time.UTC)
	var people []ledger.Person
	npc := map[string]bool{}
	for _, p := range s.People {
		people = append(people, ledger.Person{Name: p.Name, Type: p.Type})
		npc[p.Name] = p.Type == memory.EntityNPC
	}
	var es []memory.TranscriptEntry
	for i, l := range s.Lines {
		e := memory.TranscriptEntry{SessionID: "s1", SpeakerName: l.Speaker, SpeakerID: strings.ToLower(l.Speaker), Text: l.Text,
			At: start.Add(time.Duration(i) * time.Minute)}
		if npc[l.Speaker] {
			e.NPCID = strings.ToLower(l.Speaker)
		}
		es = append(es, e)
	}
	return es, people
}

// score counts the found entries that a wanted one matches (kind, both
// ends, the line, and what holds the wanted word) and the wanted ones
// found.
func score(s corpusScene, got []ledger.Entry) (tp int, fp, fn []string) {
	used := make([]bool, len(got))
	for _, w := range s.Want {
		hit := false
		for i, g := range got {
			if !used[i] && string(g.Kind) == w.Kind && g.From == w.From && g.To == w.To && g.Line == w.Line &&
				strings.Contains(strings.ToLower(g.What), strings.ToLower(w.What)) {
				used[i], hit = true, true
				break
			}
		}
		if hit {
			tp++
		} else {
			fn = append(fn, fmt.Sprintf("%s: %s %s→%s %q (line %d)", s.Name, w.Kind, w.From, w.To, w.What, w.Line))
		}
	}
	for i, g := range got {
		if !used[i] {
			fp = append(fp, fmt.Sprintf("%s: %s %s→%s %q (line %d)", s.Name, g.Kind, g.From, g.To, g.What, g.Line))
		}
	}
	return tp, fp, fn
}

// TestLedgerCorpus measures the explicit forms [ledger.Find] catches
// without an LLM on the corpus (promises in passing, debts restated, items
// passed around a table, a retcon, narration). First score, before any
// tuning: see the package's closing note in the README.
func TestLedgerCorpus(t *testing.T) {
	c := loadCorpus(t, "testdata/corpus.yaml")
	var tp, nfp, nfn int
	for _, s := range c.Scenes {
		es, people := s.entries()
		got := ledger.Find(es, people)
		n, fp, fn := score(s, got)
		tp += n
		nfp += len(fp)
		nfn += len(fn)
		for _, x := range fp {
			t.Logf("false: %s", x)
		}
		for _, x := range fn {
			t.Logf("missed: %s", x)
		}
	}
	precision := float64(tp) / float64(max(tp+nfp, 1))
	recall := float64(tp) / float64(max(tp+nfn, 1))
	t.Logf("without an LLM: %d found right, %d false, %d missed: precision %.2f, recall %.2f", tp, nfp, nfn, precision, recall)
	if precision < 0.9 || recall < 0.85 {
		t.Errorf("precision %.2f, recall %.2f; want at least 0.90 and 0.85", precision, recall)
	}
}

// TestLedgerHeldOut reports the extractor on corpora written after the
// tuning above and never tuned on (other names and phrasings; heldout2
// adds retractions and different debts between the same two). It only
// reports: its figures are what a new table can expect without an LLM.
func TestLedgerHeldOut(t *testing.T) {
	for _, file := range []string{"heldout", "heldout2"} {
		c := loadCorpus(t, "testdata/"+file+".yaml")
		var tp, nfp, nfn int
		for _, s := range c.Scenes {
			es, people := s.entries()
			n, fp, fn := score(s, ledger.Find(es, people))
			tp, nfp, nfn = tp+n, nfp+len(fp), nfn+len(fn)
			for _, x := range fp {
				t.Logf("%s, false: %s", file, x)
			}
			for _, x := range fn {
				t.Logf("%s, missed: %s", file, x)
			}
		}
		if tp == 0 {
			t.Fatalf("the held-out corpus %s found nothing right", file)
		}
		t.Logf("%s, without an LLM: %d found right, %d false, %d missed: precision %.2f, recall %.2f",
			file, tp, nfp, nfn, float64(tp)/float64(tp+nfp), float64(tp)/float64(tp+nfn))
	}
}
