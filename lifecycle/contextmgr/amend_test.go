package contextmgr_test

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/memory"
)

func TestAmend(t *testing.T) {
	srv := llmtest.New(llmtest.Script(llmtest.Reply{Text: "summary"}))
	defer srv.Close()
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: 1000, Summarizer: summarizer(srv), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e := memory.TranscriptEntry{IdempotencyKey: "k1", Text: "what news of the shipment", RawText: "what news of the ship mint"}
	m.Add(contextmgr.Message{Role: "user", Name: "Thorin", Content: e.Text, Entry: e})
	before := m.Tokens()
	for i, want := range []bool{true, false} {
		if got := m.Amend("k1", "what news of the Vault Key, friend"); got != want {
			t.Fatalf("amend %d = %v, want %v", i+1, got, want)
		}
	}
	if m.Amend("unknown", "x") || m.Amend("", "x") {
		t.Error("amended a line it does not hold")
	}
	msgs := m.Messages()
	if len(msgs) != 1 || msgs[0].Content != "what news of the Vault Key, friend" || msgs[0].Entry.Text != msgs[0].Content ||
		msgs[0].Entry.RawText != "what news of the ship mint" {
		t.Fatalf("after amending: %+v", msgs)
	}
	if want := before + contextmgr.Tokens(msgs[0].Content) - contextmgr.Tokens(e.Text); m.Tokens() != want {
		t.Errorf("tokens %d, want %d", m.Tokens(), want)
	}
}
