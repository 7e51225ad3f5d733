package retrieve

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// evalDims is the embedding dimension of the evaluation (the default
// configuration's).
const evalDims = 384

// question is one entry of testdata/eval-questions.yaml.
type question struct {
	Kind   string `yaml:"kind"`
	Q      string `yaml:"q"`
	Expect string `yaml:"expect"`
}

// questionKinds in report order.
var questionKinds = []string{"single", "two_hop", "three_hop", "name_variant", "before_after"}

func loadQuestions(t testing.TB) []question {
	t.Helper()
	b, err := os.ReadFile("testdata/eval-questions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Questions []question `yaml:"questions"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("eval-questions.yaml: %v", err)
	}
	known := map[string]bool{}
	for _, k := range questionKinds {
		known[k] = true
	}
	for i, q := range f.Questions {
		if !known[q.Kind] || q.Q == "" || q.Expect == "" {
			t.Fatalf("eval-questions.yaml: question %d (%q) needs a known kind, a question and an expected phrase", i+1, q.Q)
		}
	}
	return f.Questions
}

// evalCampaign imports testdata/saltmere-eval.yaml into a fresh database,
// chunks and embeds it, and returns the campaign.
func evalCampaign(t testing.TB) (*postgres.Campaign, embed.Embedder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, _ := pgtest.NewStore(t, evalDims)
	f, err := os.Open("testdata/saltmere-eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, "saltmere-eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.InTx(ctx, cf.Campaign, func(c *postgres.Campaign) error {
		_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	camp := pgtest.Campaign(t, store, cf.Campaign)
	e, err := embed.NewOffline(evalDims)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chunk.Process(ctx, camp, e, chunk.Options{}); err != nil {
		t.Fatal(err)
	}
	return camp, e
}

// answered reports whether any result contains the expected phrase.
func answered(rs []Result, expect string) bool {
	want := strings.ToLower(expect)
	for _, r := range rs {
		if strings.Contains(strings.ToLower(r.Content), want) {
			return true
		}
	}
	return false
}

// TestRecall is the recall benchmark: recall@5 of every mode on the
// evaluation campaign, per question kind. Run with -v to see the table
// (`make eval` does). It checks the targets: hybrid answers at least 90%
// of single-hop questions, and on multi-hop questions (two- and
// three-hop) hybrid or ppr recall at least 1.3 times vector-only recall.
func TestRecall(t *testing.T) {
	qs := loadQuestions(t)
	if len(qs) < 60 {
		t.Fatalf("only %d questions; the benchmark needs at least 60", len(qs))
	}
	camp, e := evalCampaign(t)
	r, err := New(camp, e, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const k = 5
	type tally struct{ hit, n int }
	recall := map[Mode]map[string]*tally{}
	var misses []string
	for _, m := range Modes() {
		recall[m] = map[string]*tally{}
		for _, kind := range append(questionKinds, "multi_hop", "all") {
			recall[m][kind] = &tally{}
		}
		for _, q := range qs {
			rs, err := r.Search(ctx, Query{Text: q.Q, Mode: m, K: k})
			if err != nil {
				t.Fatalf("%s %q: %v", m, q.Q, err)
			}
			// Recall counts the answers; the named entities that follow
			// them are not answers.
			rs = slices.DeleteFunc(rs, func(x Result) bool { return x.Kind == KindEntity })
			if len(rs) > k {
				t.Fatalf("%s %q: %d results, asked for %d", m, q.Q, len(rs), k)
			}
			ok := answered(rs, q.Expect)
			kinds := []string{q.Kind, "all"}
			if q.Kind == "two_hop" || q.Kind == "three_hop" {
				kinds = append(kinds, "multi_hop")
			}
			for _, kind := range kinds {
				recall[m][kind].n++
				if ok {
					recall[m][kind].hit++
				}
			}
			if os.Getenv("GLYPHOXA_EVAL_DETAIL") != "" {
				t.Logf("%-8s %-12s %-5v %q", m, q.Kind, ok, q.Q)
			}
			if !ok && m == ModeHybrid {
				misses = append(misses, fmt.Sprintf("%s: %q (want %q)", q.Kind, q.Q, q.Expect))
			}
		}
	}
	rate := func(m Mode, kind string) float64 {
		x := recall[m][kind]
		if x.n == 0 {
			return 0
		}
		return float64(x.hit) / float64(x.n)
	}

	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "recall@%d\t", k)
	cols := append(append([]string{}, questionKinds...), "multi_hop", "all")
	for _, c := range cols {
		fmt.Fprintf(tw, "%s (%d)\t", c, recall[ModeHybrid][c].n)
	}
	fmt.Fprintln(tw)
	for _, m := range Modes() {
		fmt.Fprintf(tw, "%s\t", m)
		for _, c := range cols {
			fmt.Fprintf(tw, "%.2f\t", rate(m, c))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	sort.Strings(misses)
	t.Logf("recall benchmark on %d questions, %d chunks:\n%s\nhybrid misses:\n  %s",
		len(qs), mustCount(t, camp), b.String(), strings.Join(misses, "\n  "))

	if got := rate(ModeHybrid, "single"); got < 0.9 {
		t.Errorf("hybrid single-hop recall@5 = %.2f, target >= 0.90", got)
	}
	vec := rate(ModeVector, "multi_hop")
	best := max(rate(ModeHybrid, "multi_hop"), rate(ModePPR, "multi_hop"))
	if best < 1.3*vec {
		t.Errorf("multi-hop recall@5: best of hybrid and ppr %.2f, vector %.2f; target >= 1.3x vector", best, vec)
	}
}

func mustCount(t testing.TB, c *postgres.Campaign) int {
	cs, err := c.Index().Chunks(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}

// BenchmarkSearch measures one question per mode on the evaluation
// campaign, database round trips included.
func BenchmarkSearch(b *testing.B) {
	qs := loadQuestions(b)
	camp, e := evalCampaign(b)
	r, err := New(camp, e, Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range Modes() {
		b.Run(string(m), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := r.Search(ctx, Query{Text: qs[i%len(qs)].Q, Mode: m, K: 5}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
