package correction

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/voice/stt"
)

var pipelineEntities = []Entity{
	{ID: "ironhold", Name: "Ironhold"},
	{ID: "zephyrine", Name: "Zephyrine"},
	{ID: "stormwatch", Name: "Stormwatch Keep"},
}

// heard is the utterance of the stage-2 tests: stage 1 restores "iron
// hold"; "zeff" is too short a rendering of Zephyrine for it.
const heard = "we ride from iron hold and ask zeff about the storm"

// words are the recogniser's confidences for heard: only "zeff" is unsure.
func heardWords() []stt.Word {
	var ws []stt.Word
	for _, w := range strings.Fields(heard) {
		c := 0.95
		if w == "zeff" {
			c = 0.3
		}
		ws = append(ws, stt.Word{Text: w, Confidence: c})
	}
	return ws
}

func replyJSON(t *testing.T, text string, subs ...llmSubstitution) string {
	t.Helper()
	b, err := json.Marshal(llmReply{Text: text, Substitutions: subs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newTestPipeline(t *testing.T, srv *llmtest.Server, opts ...LLMOption) *Pipeline {
	t.Helper()
	c, err := NewLLMCorrector(srv.URL(), "test-key", "fake-model", append([]LLMOption{WithHTTPClient(srv.Client())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPipeline(WithLLM(c), WithEntities(pipelineEntities))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRefineGoodReply(t *testing.T) {
	srv := llmtest.New(func(int, llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: replyJSON(t, "we ride from Ironhold and ask Zephyrine about the storm",
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine", EntityID: "zephyrine"})}
	})
	defer srv.Close()
	p := newTestPipeline(t, srv)
	u := Utterance{Text: heard, Words: heardWords()}
	r1 := p.Correct(u)
	if r1.Text != "we ride from Ironhold and ask zeff about the storm" {
		t.Fatalf("stage 1: %q", r1.Text)
	}
	r2, err := p.Refine(context.Background(), u, r1)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Text != "we ride from Ironhold and ask Zephyrine about the storm" || r2.RawText != heard {
		t.Fatalf("stage 2: %+v", r2)
	}
	if len(r2.Substitutions) != 2 {
		t.Fatalf("substitutions %+v", r2.Substitutions)
	}
	s := r2.Substitutions[1]
	if s.Stage != StageLLM || s.EntityID != "zephyrine" || heard[s.Start:s.End] != "zeff" || s.Original != "zeff" {
		t.Errorf("stage-2 substitution %+v (raw span %q)", s, heard[s.Start:s.End])
	}
	if s0 := r2.Substitutions[0]; s0.Stage != StagePhonetic || heard[s0.Start:s0.End] != "iron hold" {
		t.Errorf("stage-1 substitution %+v", s0)
	}

	// The request: low temperature, JSON answer, only the unsure word as a
	// candidate, and the entity list.
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	req := reqs[0]
	if req.Temperature != DefaultTemperature || req.Model != "fake-model" || !llmtest.AsksJSON(req) {
		t.Errorf("request settings: temperature %v, model %q, format %+v", req.Temperature, req.Model, req.ResponseFormat)
	}
	var body llmRequest
	if err := json.Unmarshal([]byte(req.Messages[len(req.Messages)-1].Content), &body); err != nil {
		t.Fatal(err)
	}
	if body.Text != r1.Text || strings.Join(body.Candidates, ",") != "zeff" || len(body.Entities) != len(pipelineEntities) {
		t.Errorf("request body %+v", body)
	}
}

func TestRefineRevertsMaliciousChanges(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		want  string
	}{
		{"undeclared rewrites", replyJSON(t, "we flew from Ironhold and ask Zephyrine about the dragon!",
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine", EntityID: "zephyrine"}),
			"we ride from Ironhold and ask Zephyrine about the storm"},
		{"declared change of a sure word", replyJSON(t, "we ride from Ironhold and ask zeff about the Stormwatch Keep",
			llmSubstitution{Original: "storm", Replacement: "Stormwatch Keep", EntityID: "stormwatch"}),
			"we ride from Ironhold and ask zeff about the storm"},
		{"replacement not a name of the entity", replyJSON(t, "we ride from Ironhold and ask Zephyr about the storm",
			llmSubstitution{Original: "zeff", Replacement: "Zephyr", EntityID: "zephyrine"}),
			"we ride from Ironhold and ask zeff about the storm"},
		{"wrong entity id", replyJSON(t, "we ride from Ironhold and ask Zephyrine about the storm",
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine", EntityID: "ironhold"}),
			"we ride from Ironhold and ask zeff about the storm"},
		{"undoing stage 1", replyJSON(t, "we ride from iron hold and ask Zephyrine about the storm",
			llmSubstitution{Original: "Ironhold", Replacement: "iron hold", EntityID: "ironhold"},
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine", EntityID: "zephyrine"}),
			"we ride from Ironhold and ask Zephyrine about the storm"},
		{"inserted words", replyJSON(t, "we ride from Ironhold and ask Zephyrine the wise about the storm",
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine the wise", EntityID: "zephyrine"}),
			"we ride from Ironhold and ask zeff about the storm"},
		// The dropped words merge with the declared change into one
		// undeclared change: all of it is reverted.
		{"deleted words", replyJSON(t, "we ride from Ironhold and ask Zephyrine",
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine", EntityID: "zephyrine"}),
			"we ride from Ironhold and ask zeff about the storm"},
		{"deleted word elsewhere", replyJSON(t, "we ride from Ironhold and ask Zephyrine about storm",
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine", EntityID: "zephyrine"}),
			"we ride from Ironhold and ask Zephyrine about the storm"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: tc.reply}))
			defer srv.Close()
			p := newTestPipeline(t, srv)
			u := Utterance{Text: heard, Words: heardWords()}
			r, err := p.Refine(context.Background(), u, p.Correct(u))
			if err != nil {
				t.Fatal(err)
			}
			if r.Text != tc.want {
				t.Errorf("got %q, want %q", r.Text, tc.want)
			}
			if r.RawText != heard {
				t.Errorf("raw text %q", r.RawText)
			}
			if apply(heard, r.Substitutions) != r.Text {
				t.Errorf("substitutions %+v do not rebuild %q", r.Substitutions, r.Text)
			}
		})
	}
}

func TestRefineFallsBack(t *testing.T) {
	cases := []struct {
		name  string
		reply llmtest.Reply
		want  string // in the error
	}{
		{"broken response body", llmtest.Reply{Text: "{}", Broken: true}, "LLM correction request"},
		{"prose instead of JSON", llmtest.Reply{Text: "Sure! The corrected text is: we ride from Ironhold"}, "not the correction JSON"},
		{"empty JSON", llmtest.Reply{Text: "{}"}, "empty text"},
		{"server error", llmtest.Reply{Status: http.StatusInternalServerError}, "500"},
		// Never in time: only this case runs into the timeout, so no case
		// passes or fails by how fast a loaded machine answers.
		{"late reply", llmtest.Reply{Text: `{"text": "late"}`, Delay: time.Hour}, "deadline exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.New(llmtest.Script(tc.reply))
			defer srv.Close()
			timeout := time.Minute
			if tc.reply.Delay > 0 {
				timeout = 200 * time.Millisecond
			}
			p := newTestPipeline(t, srv, WithLLMTimeout(timeout))
			u := Utterance{Text: heard, Words: heardWords()}
			r1 := p.Correct(u)
			r2, err := p.Refine(context.Background(), u, r1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
			if r2.Text != r1.Text || len(r2.Substitutions) != len(r1.Substitutions) {
				t.Errorf("fallback %+v, want the stage-1 result %+v", r2, r1)
			}
		})
	}
}

func TestRefineCandidatesWithoutConfidences(t *testing.T) {
	srv := llmtest.New(func(int, llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: replyJSON(t, "we ride from Ironhold and ask Zephyrine about the storm",
			llmSubstitution{Original: "zeff", Replacement: "Zephyrine", EntityID: "zephyrine"})}
	})
	defer srv.Close()
	p := newTestPipeline(t, srv)
	u := Utterance{Text: heard}
	r, err := p.Refine(context.Background(), u, p.Correct(u))
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "we ride from Ironhold and ask Zephyrine about the storm" {
		t.Errorf("got %q", r.Text)
	}
	var body llmRequest
	if err := json.Unmarshal([]byte(srv.Requests()[0].Messages[1].Content), &body); err != nil {
		t.Fatal(err)
	}
	// "zeff" is not English; its neighbour "ask" comes along, the function
	// word "about" and stage 1's "Ironhold" do not.
	if got := strings.Join(body.Candidates, ","); got != "ask,zeff" {
		t.Errorf("candidates %q", got)
	}
}

func TestRefineSkipsWithoutCandidates(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "{}"}))
	defer srv.Close()
	p := newTestPipeline(t, srv)
	u := Utterance{Text: "we ride from iron hold and talk about the storm"}
	r, err := p.Refine(context.Background(), u, p.Correct(u))
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "we ride from Ironhold and talk about the storm" {
		t.Errorf("got %q", r.Text)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests for an utterance without candidates", n)
	}
}

func TestPipelineWithoutLLM(t *testing.T) {
	p, err := NewPipeline(WithEntities(pipelineEntities), WithLowConfidence(0.4))
	if err != nil {
		t.Fatal(err)
	}
	if p.HasLLM() {
		t.Error("HasLLM without an LLM")
	}
	u := Utterance{Text: heard}
	r1 := p.Correct(u)
	r2, err := p.Refine(context.Background(), u, r1)
	if err != nil || r2.Text != r1.Text {
		t.Errorf("Refine without LLM: %+v, %v", r2, err)
	}
	if err := p.SetEntities(nil); err != nil {
		t.Fatal(err)
	}
	if r := p.Correct(u); r.Changed() {
		t.Errorf("no entities, still changed: %q", r.Text)
	}
}

func TestPipelineErrors(t *testing.T) {
	if _, err := NewPipeline(WithLowConfidence(2)); !errors.Is(err, ErrThreshold) {
		t.Errorf("low confidence 2: %v", err)
	}
	if _, err := NewPipeline(WithEntities([]Entity{{ID: "x"}})); !errors.Is(err, ErrNoName) {
		t.Errorf("nameless entity: %v", err)
	}
	if _, err := NewPipeline(WithMatcher(nil)); err == nil {
		t.Error("nil matcher accepted")
	}
	for _, tc := range []struct {
		url, model string
		opts       []LLMOption
	}{
		{"", "m", nil},
		{"http://x/v1", " ", nil},
		{"http://x/v1", "m", []LLMOption{WithTemperature(3)}},
		{"http://x/v1", "m", []LLMOption{WithLLMTimeout(-1)}},
		{"http://x/v1", "m", []LLMOption{WithMaxEntities(0)}},
	} {
		if _, err := NewLLMCorrector(tc.url, "", tc.model, tc.opts...); !errors.Is(err, ErrLLMConfig) {
			t.Errorf("NewLLMCorrector(%q, %q): %v", tc.url, tc.model, err)
		}
	}
}

func TestDiffTokens(t *testing.T) {
	a := tokenize("we ride from Ironhold and ask zeff about the storm")
	b := tokenize("We ride, from Ironhold and ask Zephyrine about storm!")
	got := diffTokens(a, b)
	want := []hunk{{6, 7, 6, 7}, {8, 9, 8, 8}}
	if len(got) != len(want) {
		t.Fatalf("hunks %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hunk %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestFindNamesMemo: a text searched again gives the same names, a caller
// changing what it got changes nothing for the next, and new entities are
// searched anew.
func TestFindNamesMemo(t *testing.T) {
	p, err := NewPipeline(WithEntities(pipelineEntities))
	if err != nil {
		t.Fatal(err)
	}
	text := "we ride from iron hold to Stormwatch Keep"
	first := p.FindNames(text)
	if len(first) != 2 || first[0].EntityID != "ironhold" || first[1].EntityID != "stormwatch" {
		t.Fatalf("FindNames = %+v", first)
	}
	first[0].EntityID = "changed"
	again := p.FindNames(text)
	if len(again) != 2 || again[0].EntityID != "ironhold" {
		t.Fatalf("FindNames again = %+v", again)
	}
	for i := range memoTexts + 1 {
		p.FindNames(strings.Repeat("x", i+1) + " Ironhold")
	}
	if got := p.FindNames(text); len(got) != 2 {
		t.Fatalf("FindNames after the memo turned over = %+v", got)
	}
	if err := p.SetEntities(append(pipelineEntities, Entity{ID: "vexa", Name: "Vexa"})); err != nil {
		t.Fatal(err)
	}
	if got := p.FindNames("ask Vexa about Ironhold"); len(got) != 2 || got[0].EntityID != "vexa" {
		t.Fatalf("FindNames with a new entity = %+v", got)
	}
	if got := p.FindNames(text); len(got) != 2 {
		t.Fatalf("FindNames with new entities = %+v", got)
	}
}
