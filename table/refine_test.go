package table_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/table"
)

// TestLLMCorrectionRunsAfterTheReply holds the LLM name correction to the
// design: the table answers on the phonetic correction while the LLM
// corrector is still thinking (its fake answers only once the reply has
// been reported), and the LLM's correction then amends the recorded line
// in the session log and the conversation, keeping the raw text.
func TestLLMCorrectionRunsAfterTheReply(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard only
	defer cancel()
	release := make(chan struct{})
	asked := make(chan struct{}, 16)
	corrector := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		var in struct {
			Text       string   `json:"text"`
			Candidates []string `json:"candidates"`
		}
		if err := json.Unmarshal([]byte(req.Messages[len(req.Messages)-1].Content), &in); err != nil {
			t.Errorf("correction request: %v", err)
		}
		out := map[string]any{"text": in.Text, "substitutions": []any{}}
		if slices.Contains(in.Candidates, "shipment") {
			out["text"] = strings.Replace(in.Text, "shipment", "Vault Key", 1)
			out["substitutions"] = []map[string]string{{"original": "shipment", "replacement": "Vault Key", "entity_id": "vault-key"}}
		}
		b, _ := json.Marshal(out)
		return llmtest.Reply{Text: string(b)}
	})
	defer corrector.Close()
	lc, err := correction.NewLLMCorrector(corrector.URL(), "", "fake", correction.WithHTTPClient(corrector.Client()),
		correction.WithLLMTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	amended := make(chan table.Amendment, 1)
	r := newRigWith(t, 0, nil, func(c *table.Config) {
		c.Providers.LLMCorrector = lc
		c.Settings.LowConfidence = 0.99 // every word of the fake recogniser is a candidate
		c.OnAmend = func(a table.Amendment) { amended <- a }
	})
	defer close(release)

	rep, err := r.turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The reply came while the corrector had not answered.
	select {
	case <-asked:
	default:
		t.Fatal("the LLM corrector was never asked")
	}
	if !strings.HasPrefix(rep.Corrected, "Grimjaw, what news of the shipment?") {
		t.Fatalf("recorded %q, want the phonetic correction", rep.Corrected)
	}
	// The line is chunked before the correction arrives.
	if err := r.s.Memory().ConsolidateNow(ctx); err != nil {
		t.Fatal(err)
	}
	chunks, err := r.camp.Index().Chunks(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(chunks, func(c memory.Chunk) bool { return strings.Contains(c.Content, "the shipment?") }) {
		t.Fatalf("the line was not chunked: %+v", chunks)
	}
	release <- struct{}{}

	var a table.Amendment
	select {
	case a = <-amended:
	case <-ctx.Done():
		t.Fatal("no amendment")
	}
	want := strings.Replace(rep.Corrected, "shipment", "Vault Key", 1)
	if a.Text != want || a.Was != rep.Corrected {
		t.Fatalf("amendment %+v, want %q", a, want)
	}
	es, err := r.camp.Sessions().Entries(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range es {
		if e.IdempotencyKey == a.Key {
			found = true
			if e.Text != want || e.RawText != rep.Heard {
				t.Errorf("session log has %q (raw %q), want %q (raw %q)", e.Text, e.RawText, want, rep.Heard)
			}
		}
	}
	if !found {
		t.Fatalf("line %q not in the session log", a.Key)
	}
	// The chunk holding the line follows.
	if err := r.s.Memory().ConsolidateNow(ctx); err != nil {
		t.Fatal(err)
	}
	chunks, err = r.camp.Index().Chunks(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(chunks, func(c memory.Chunk) bool { return strings.Contains(c.Content, "Vault Key?") }) ||
		slices.ContainsFunc(chunks, func(c memory.Chunk) bool { return strings.Contains(c.Content, "the shipment?") }) {
		t.Errorf("no chunk holds the amended line: %+v", chunks)
	}
	for _, m := range r.s.Memory().Messages() {
		if m.Entry.IdempotencyKey == a.Key && m.Content != want {
			t.Errorf("conversation has %q, want %q", m.Content, want)
		}
	}
}
