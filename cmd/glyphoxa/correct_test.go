package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

const correctionEntities = "../../correction/testdata/entities.yaml"

// runCLIStdin runs glyphoxa with args, feeding stdin.
func runCLIStdin(t *testing.T, vars map[string]string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] }}
	code = run(context.Background(), args, e)
	return code, out.String(), errb.String()
}

// correctJSON is the --json output of glyphoxa correct.
type correctJSON struct {
	Text          string `json:"text"`
	RawText       string `json:"raw_text"`
	Substitutions []struct {
		Start       int     `json:"start"`
		End         int     `json:"end"`
		Original    string  `json:"original"`
		Replacement string  `json:"replacement"`
		EntityID    string  `json:"entity_id"`
		Score       float64 `json:"score"`
		Stage       int     `json:"stage"`
	} `json:"substitutions"`
}

func TestCorrectFromEntitiesFile(t *testing.T) {
	t.Parallel()
	code, out, errs := runCLI(t, nil, "correct", "--entities", correctionEntities, "did you talk to elder nacks yet")
	if code != 0 || out != "did you talk to Eldrinax yet\n" {
		t.Fatalf("correct: %d %q %q", code, out, errs)
	}

	code, out, errs = runCLI(t, nil, "correct", "--campaign", "correction-eval", "--entities", correctionEntities,
		"--json", "we ride back to iron hold's gate")
	if code != 0 {
		t.Fatalf("correct --json: %d %q", code, errs)
	}
	var r correctJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if r.Text != "we ride back to Ironhold's gate" || r.RawText != "we ride back to iron hold's gate" || len(r.Substitutions) != 1 {
		t.Fatalf("result %+v", r)
	}
	s := r.Substitutions[0]
	if r.RawText[s.Start:s.End] != "iron hold" || s.Original != "iron hold" || s.Replacement != "Ironhold" ||
		s.EntityID != "ironhold" || s.Stage != 1 || s.Score != 1 {
		t.Errorf("substitution %+v", s)
	}
}

func TestCorrectStdin(t *testing.T) {
	t.Parallel()
	in := "the tower of whiskers is dark\n\nroll initiative\nask kel tar about it\r\n"
	code, out, errs := runCLIStdin(t, nil, in, "correct", "--entities", correctionEntities)
	if code != 0 {
		t.Fatalf("correct: %d %q", code, errs)
	}
	want := "the Tower of Whispers is dark\n\nroll initiative\nask Kel'thar about it\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}

	code, out, _ = runCLIStdin(t, nil, "roll initiative\nask kel tar\n", "correct", "--json", "--entities", correctionEntities)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 {
		t.Fatalf("--json from stdin: %d %q", code, out)
	}
	var first, second correctJSON
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.Text != "roll initiative" || first.Substitutions == nil || len(first.Substitutions) != 0 {
		t.Errorf("line 1 %q: %+v %v", lines[0], first, err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil || second.Text != "ask Kel'thar" {
		t.Errorf("line 2 %q: %+v %v", lines[1], second, err)
	}
}

func TestCorrectFromDatabase(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	if code, out, errs := runCLI(t, vars, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %q %q", code, out, errs)
	}
	if code, out, errs := runCLI(t, vars, "import", correctionEntities); code != 0 || !strings.Contains(out, "48 entities") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	code, out, errs := runCLI(t, vars, "correct", "--campaign", "correction-eval", "we pray to sell vara and og mar")
	if code != 0 || out != "we pray to Sel'vara and Oghmar\n" {
		t.Fatalf("correct: %d %q %q", code, out, errs)
	}
	// A campaign without entities passes text through, with a warning.
	createCampaign(t, vars["GLYPHOXA_DSN"], "empty-campaign")
	code, out, errs = runCLI(t, vars, "correct", "--campaign", "empty-campaign", "we pray to sell vara")
	if code != 0 || out != "we pray to sell vara\n" || !strings.Contains(errs, "no entities") {
		t.Fatalf("empty campaign: %d %q %q", code, out, errs)
	}
}

func TestCorrectErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("campaign: c\nentities:\n  - {id: a, type: npc}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no campaign", []string{"correct", "hello"}, 2, "--campaign is required"},
		{"campaign mismatch", []string{"correct", "--campaign", "other", "--entities", correctionEntities, "x"}, 2, "does not match"},
		{"bad entities file", []string{"correct", "--entities", bad, "x"}, 1, "line 3"},
		{"missing entities file", []string{"correct", "--entities", filepath.Join(dir, "nope.yaml"), "x"}, 1, "no such file"},
		{"no database", []string{"correct", "--campaign", "c", "x"}, 1, "no database configured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, nil, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.inStderr) {
				t.Errorf("code %d stderr %q; want %d and %q", code, errs, tc.code, tc.inStderr)
			}
		})
	}
}

func TestCorrectWithTheLLMPass(t *testing.T) {
	t.Parallel()
	// The phonetic stage cannot place "zeff"; the model says it is
	// Zephyrine, and also (against its instructions) rewrites "storm",
	// which the guard reverts.
	srv := llmtest.New(func(int, llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: `{"text":"we ride from Ironhold and ask Zephyrine about the tempest",
			"substitutions":[{"original":"zeff","replacement":"Zephyrine","entity_id":"zephyrine"}]}`}
	})
	defer srv.Close()
	vars := map[string]string{"GLYPHOXA_LLM_BASE_URL": srv.URL(), "GLYPHOXA_LLM_MODEL": "fake"}
	code, out, errs := runCLI(t, vars, "correct", "--entities", correctionEntities, "--llm", "--json",
		"we ride from iron hold and ask zeff about the storm")
	if code != 0 {
		t.Fatalf("correct --llm: %d %q", code, errs)
	}
	var r correctJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	if r.Text != "we ride from Ironhold and ask Zephyrine about the storm" || len(r.Substitutions) != 2 ||
		r.Substitutions[1].Stage != 2 || r.Substitutions[1].EntityID != "zephyrine" {
		t.Fatalf("result %+v", r)
	}
	if len(srv.Requests()) != 1 {
		t.Errorf("%d LLM requests", len(srv.Requests()))
	}

	// Without an LLM configured, --llm says what to set.
	code, _, errs = runCLI(t, nil, "correct", "--entities", correctionEntities, "--llm", "zeff")
	if code != 1 || !strings.Contains(errs, "GLYPHOXA_LLM_BASE_URL") {
		t.Errorf("--llm without an LLM: %d %q", code, errs)
	}
}

// TestCorrectHelpExamples runs `glyphoxa correct -h`'s example that reads a
// campaign file: what it pipes in must come out with the sample campaign's
// names ("a lara" is how the sample's transcripts hear Elara).
func TestCorrectHelpExamples(t *testing.T) {
	t.Parallel()
	var ran bool
	for _, ex := range commandExamples("correct") {
		in, cmd, ok := strings.Cut(ex, " | glyphoxa correct ")
		if !ok {
			continue
		}
		text := strings.Trim(strings.TrimPrefix(in, "echo "), `"`)
		args := append([]string{"correct"}, strings.Fields(strings.ReplaceAll(cmd, "testdata/", "../../testdata/"))...)
		code, out, errs := runCLIStdin(t, nil, text+"\n", args...)
		if code != 0 || out != "Elara knows Brannoc\n" {
			t.Errorf("%s: exit %d, %q (stderr %q), want \"Elara knows Brannoc\"", ex, code, out, errs)
		}
		ran = true
	}
	if !ran {
		t.Fatal("no example of correct -h pipes a line into it")
	}
}
