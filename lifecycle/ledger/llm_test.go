package ledger_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
)

// scriptedAnswers are the fake model's answers by scene name
// (testdata/llm.yaml).
func scriptedAnswers(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/llm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Scenes []struct{ Name, Answer string }
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("testdata/llm.yaml: %v", err)
	}
	out := map[string]string{}
	for _, s := range f.Scenes {
		out[s.Name] = s.Answer
	}
	return out
}

// lineOf is the index of the line a fact's evidence quotes: the line
// whose text holds the quote, or which the quote holds ("Lyra: …"); -1
// when it quotes none.
func lineOf(es []memory.TranscriptEntry, evidence string) int {
	ev := strings.ToLower(strings.TrimSpace(evidence))
	if ev == "" {
		return -1
	}
	for i, e := range es {
		t := strings.ToLower(e.Text)
		if strings.Contains(t, ev) || strings.Contains(ev, t) {
			return i
		}
	}
	return -1
}

// entriesOf turns the ledger facts of an extraction into entries scored
// like Find's.
func entriesOf(es []memory.TranscriptEntry, x postsession.Extraction) []ledger.Entry {
	var out []ledger.Entry
	for _, r := range x.Relationships {
		k := ledger.KindOf(r.Type)
		if k == "" {
			continue
		}
		what, _ := r.Attributes["what"].(string)
		due, _ := r.Attributes["due"].(string)
		out = append(out, ledger.Entry{Kind: k, From: r.Source, To: r.Target, What: what, Due: due, Line: lineOf(es, r.Evidence)})
	}
	return out
}

// TestLedgerWithLLM measures the ledger as the table's post-session
// processing finds it with an LLM: each scene of both corpora goes
// through ledger.Extractor wrapping the real OpenAI extractor, talking to
// a fake model that answers what testdata/llm.yaml scripts for the scene
// (a real model's plausible answer, mistakes included). It reports
// precision and recall with and without the LLM on each corpus; it fails
// only when the LLM's path finds nothing right.
func TestLedgerWithLLM(t *testing.T) {
	answers := scriptedAnswers(t)
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "{}"}))
	defer srv.Close()
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "extract-model", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	x := ledger.Extractor{Next: postsession.NewOpenAIExtractor(client, "")}
	type tally struct{ tp, fp, fn int }
	f := func(s tally) (float64, float64) {
		return float64(s.tp) / float64(max(s.tp+s.fp, 1)), float64(s.tp) / float64(max(s.tp+s.fn, 1))
	}
	var tuned [2]tally
	for _, file := range []string{"corpus", "heldout", "heldout2"} {
		var with, without tally
		for _, s := range loadCorpus(t, "testdata/"+file+".yaml").Scenes {
			a, ok := answers[s.Name]
			if !ok {
				t.Fatalf("testdata/llm.yaml has no answer for the scene %q", s.Name)
			}
			srv.SetHandler(llmtest.Script(llmtest.Reply{Text: a}))
			es, people := s.entries()
			known := make([]memory.Entity, 0, len(people))
			for _, p := range people {
				known = append(known, memory.Entity{ID: strings.ToLower(p.Name), Name: p.Name, Type: p.Type})
			}
			got, err := x.Extract(context.Background(), known, es)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			n, fp, fn := score(s, entriesOf(es, got))
			with = tally{with.tp + n, with.fp + len(fp), with.fn + len(fn)}
			for _, m := range fp {
				t.Logf("%s, with the LLM, false: %s", file, m)
			}
			for _, m := range fn {
				t.Logf("%s, with the LLM, missed: %s", file, m)
			}
			n, fp, fn = score(s, ledger.Find(es, people))
			without = tally{without.tp + n, without.fp + len(fp), without.fn + len(fn)}
		}
		pw, rw := f(with)
		po, ro := f(without)
		t.Logf("%s: with the LLM %d right, %d false, %d missed: precision %.2f, recall %.2f; without: %d right, %d false, %d missed: precision %.2f, recall %.2f",
			file, with.tp, with.fp, with.fn, pw, rw, without.tp, without.fp, without.fn, po, ro)
		if file == "corpus" {
			tuned = [2]tally{with, without}
		}
	}
	if len(srv.Requests()) == 0 {
		t.Fatal("the fake model was never asked")
	}
	// It only reports (the LLM's figures are those of a script), but the
	// path must work: the model's entries reach the ledger.
	if tuned[0].tp == 0 {
		t.Fatal("with the LLM, nothing right was found on the corpus")
	}
}
