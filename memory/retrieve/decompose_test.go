package retrieve

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

func fakeLLM(t *testing.T, h llmtest.Handler) (*llm.Client, *llmtest.Server) {
	t.Helper()
	srv := llmtest.New(h)
	t.Cleanup(srv.Close)
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", Retries: -1,
		FirstTokenTimeout: 2 * time.Second, Timeout: 5 * time.Second})
	check(t, err)
	return c, srv
}

func TestLLMDecomposer(t *testing.T) {
	cases := []struct {
		name  string
		reply llmtest.Reply
		want  []string
		fails bool
	}{
		{"numbered", llmtest.Reply{Text: "1. Who is the sister of the harbourmaster?\n2. What did she say about payment?\n"},
			[]string{"Who is the sister of the harbourmaster?", "What did she say about payment?"}, false},
		{"bullets and blanks", llmtest.Reply{Text: "- a?\n\n* b?\n• c?\n- d?"}, []string{"a?", "b?", "c?"}, false},
		{"unchanged", llmtest.Reply{Text: "Where is the forge?"}, []string{"Where is the forge?"}, false},
		{"empty answer", llmtest.Reply{Text: " \n "}, nil, true},
		{"server error", llmtest.Reply{Status: 500}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl, srv := fakeLLM(t, llmtest.Script(c.reply))
			got, err := LLMDecomposer{LLM: cl}.Decompose(context.Background(), "How did the harbourmaster's sister say they paid?")
			if (err != nil) != c.fails || !slices.Equal(got, c.want) {
				t.Fatalf("got %q, %v; want %q (fails %v)", got, err, c.want, c.fails)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 || len(reqs[0].Messages) != 2 || reqs[0].Messages[0].Role != llm.RoleSystem ||
				!strings.Contains(reqs[0].Messages[1].Content, "harbourmaster's sister") {
				t.Errorf("requests: %+v", reqs)
			}
		})
	}
	if _, err := (LLMDecomposer{}).Decompose(context.Background(), "q"); err == nil {
		t.Error("no LLM: no error")
	}
}

// With a decomposer, hybrid retrieval searches the parts of a question
// that shares no word with the chunks; a failed decomposition searches
// the question alone.
func TestHybridSearchesTheParts(t *testing.T) {
	c, e := small(t)
	ctx := context.Background()
	q := Query{Text: "Which two craftsmen did the party meet?", K: 2}
	plain, err := New(c, e, Config{})
	check(t, err)
	if rs, err := plain.Search(ctx, q); err != nil || len(rs) != 0 {
		t.Fatalf("without parts: %+v, %v; want nothing (no shared word)", rs, err)
	}
	cl, srv := fakeLLM(t, llmtest.Script(llmtest.Reply{Text: "Is the forge hot with new bellows?\nWho will take us across the Greywater in the fog?"}))
	r, err := New(c, e, Config{Decomposer: LLMDecomposer{LLM: cl}})
	check(t, err)
	rs, err := r.Search(ctx, q)
	check(t, err)
	sessions := map[string]bool{}
	for _, x := range rs {
		if x.Kind == KindChunk {
			sessions[x.SessionID] = true
		}
	}
	if !sessions["s1"] || !sessions["s2"] || len(srv.Requests()) != 1 {
		t.Fatalf("with parts: %+v (%d LLM requests); want a chunk of each session", rs, len(srv.Requests()))
	}

	broken, _ := fakeLLM(t, llmtest.Script(llmtest.Reply{Status: 500}))
	r, err = New(c, e, Config{Decomposer: LLMDecomposer{LLM: broken}})
	check(t, err)
	alone, err := r.Search(ctx, Query{Text: "Is the forge hot?", K: 2})
	check(t, err)
	if len(alone) == 0 || alone[0].SessionID != "s1" {
		t.Fatalf("after a failed decomposition: %+v", alone)
	}
}
