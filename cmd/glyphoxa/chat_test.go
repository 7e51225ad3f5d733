package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestChatRunsTheTurnPipeline(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "Stolen, not lost! Find my steel."}))
	defer srv.Close()
	vars["GLYPHOXA_LLM_BASE_URL"] = srv.URL()
	vars["GLYPHOXA_LLM_MODEL"] = "fake"

	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader("Grimjaw, any news about the shipment?\n\n"), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] }}
	if code := run(context.Background(), []string{"chat", "--campaign", "ironhold-saga", "--npc", "grimjaw", "--as", "Thorin", "--session", "prep"}, e); code != 0 {
		t.Fatalf("chat exited %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Grimjaw: Stolen, not lost! Find my steel.") {
		t.Errorf("the reply is not shown:\n%s", out.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[0].Content, "You are Grimjaw") {
		t.Fatalf("the model was not asked in character: %d requests", len(reqs))
	}

	// Both sides of the conversation are in the session log, the reply with
	// the NPC's id.
	store, err := postgres.NewStore(context.Background(), dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	entries, err := camp.Sessions().Entries(context.Background(), "prep")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries in session prep, want 2: %+v", len(entries), entries)
	}
	if entries[0].SpeakerName != "Thorin" || entries[0].NPCID != "" || entries[1].NPCID != "grimjaw" || entries[1].Text != "Stolen, not lost! Find my steel." {
		t.Errorf("entries %+v", entries)
	}
}

func TestChatWithoutAnLLMAnswersFromMemory(t *testing.T) {
	t.Parallel()
	dsn := sampleUnprocessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader("Where is Elara?\n\n"), stdout: &out, stderr: &errb,
		getenv: func(k string) string { return vars[k] }}
	if code := run(context.Background(), []string{"chat", "--campaign", "ironhold-saga", "--npc", "grimjaw", "--as", "Lyra"}, e); code != 0 {
		t.Fatalf("chat exited %d: %s", code, errb.String())
	}
	for _, want := range []string{"Elara Moonwhisper is at Tower of Whispers.", "[fallback: answered from memory without the language model]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("chat output lacks %q:\n%s", want, out.String())
		}
	}
	// It says what to set for real replies.
	if !strings.Contains(errb.String(), "GLYPHOXA_LLM_BASE_URL") || !strings.Contains(errb.String(), "providers.llm.base_url") {
		t.Errorf("stderr %q does not say how to configure a model", errb.String())
	}
	// Chat without an LLM is a mode it names, not an invalid configuration.
	if strings.Contains(errb.String(), "invalid configuration") || !strings.Contains(errb.String(), "No LLM is configured") {
		t.Errorf("stderr %q takes the missing LLM for a configuration error", errb.String())
	}
}
