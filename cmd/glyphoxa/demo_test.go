package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/npc/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

func TestDemo(t *testing.T) {
	audiotest.Need(t, "espeak-ng")
	audiotest.Need(t, "pocketsphinx_continuous")
	sample := "../../testdata/campaigns/ironhold-saga.yaml"

	t.Run("offline", func(t *testing.T) {
		vars := map[string]string{"GLYPHOXA_DSN": pgtest.NewDatabase(t)}
		code, out, errs := runCLI(t, vars, "demo", "--file", sample, "--out", t.TempDir())
		if code != 0 {
			t.Fatalf("demo exited %d: %s\n%s", code, errs, out)
		}
		for _, want := range []string{
			"4 utterances",
			`Thorin said   "Brannoc, what do you know about the Ashen Circle?"`,
			"what Brannoc would be told",
			"You are Brannoc",
			"fact extraction skipped (no LLM configured)",
			`asking the campaign's memory`,
			"[chunk s3-demo",
			"facts waiting for the DM's review",
			"Vexa Thorn -MEMBER_OF-> Ashen Circle",
			"recap of the scene",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the demo's output lacks %q:\n%s", want, out)
			}
		}
		// Run again: the session is already in memory and nothing doubles.
		code, out2, errs := runCLI(t, vars, "demo", "--file", sample, "--out", t.TempDir())
		if code != 0 {
			t.Fatalf("second demo exited %d: %s", code, errs)
		}
		if strings.Count(out2, "[chunk s3-demo") > strings.Count(out, "[chunk s3-demo") {
			t.Errorf("the second run found more demo chunks:\n%s", out2)
		}
	})

	t.Run("with an LLM", func(t *testing.T) {
		llm := llmtest.New(func(_ int, req openai.ChatCompletionRequest) llmtest.Reply {
			if strings.Contains(req.Messages[0].Content, "extract a knowledge graph") {
				return llmtest.Reply{Text: `{"entities":[{"name":"Brannoc","type":"npc"},{"name":"Ashen Circle","type":"faction"}],
"relationships":[{"source":"Brannoc","target":"Ashen Circle","type":"FEARS","confidence":0.6,"basis":"inferred"}]}`}
			}
			return llmtest.Reply{Text: "Keep your voice down. The Circle has ears in this tavern."}
		})
		defer llm.Close()
		vars := map[string]string{"GLYPHOXA_DSN": pgtest.NewDatabase(t), "GLYPHOXA_LLM_BASE_URL": llm.URL(), "GLYPHOXA_LLM_MODEL": "fake"}
		dir := t.TempDir()
		code, out, errs := runCLI(t, vars, "demo", "--file", sample, "--out", dir)
		if code != 0 {
			t.Fatalf("demo exited %d: %s\n%s", code, errs, out)
		}
		for _, want := range []string{
			`Brannoc: "Keep your voice down. The Circle has ears in this tavern."`,
			"waiting for the DM",
			"Brannoc -FEARS-> Ashen Circle",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("the demo's output lacks %q:\n%s", want, out)
			}
		}
		b, err := os.ReadFile(filepath.Join(dir, "01-brannoc.wav"))
		if err != nil {
			t.Fatalf("the NPC's reply was not spoken: %v", err)
		}
		pcm, err := audio.DecodeWAV(b)
		if err != nil || pcm.Duration() < 2 || pcm.RMS() < -40 {
			t.Errorf("the reply's WAV: %.1f s at %.0f dBFS, %v", pcm.Duration(), pcm.RMS(), err)
		}
	})
}
