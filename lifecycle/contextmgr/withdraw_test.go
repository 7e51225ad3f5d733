package contextmgr_test

import (
	"context"
	"errors"
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestWithdraw: a withdrawn line (a reply the DM withdrew) leaves the
// conversation and its tokens; withdrawing it again, or an unknown key,
// changes nothing.

func TestWithdraw(t *testing.T) {
	never := contextmgr.SummarizerFunc(func(context.Context, []contextmgr.Message) (string, error) {
		return "", errors.New("not summarising in this test")
	})
	m, err := contextmgr.New(contextmgr.Config{MaxTokens: 100000, Summarizer: never, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, k := range []string{"a", "b", "c"} {
		m.Add(contextmgr.Message{Role: "user", Content: "line " + k, Entry: memory.TranscriptEntry{IdempotencyKey: k}})
	}
	before := m.Tokens()
	tests := []struct {
		key  string
		want bool
	}{{"b", true}, {"b", false}, {"", false}, {"zz", false}}
	for _, tt := range tests {
		if got := m.Withdraw(tt.key); got != tt.want {
			t.Errorf("Withdraw(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
	var keys []string
	for _, x := range m.Messages() {
		keys = append(keys, x.Entry.IdempotencyKey)
	}
	if len(keys) != 2 || keys[0] != "a" || keys[1] != "c" {
		t.Errorf("left %v, want [a c]", keys)
	}
	if m.Tokens() != before-contextmgr.Tokens("line b") {
		t.Errorf("tokens %d, want %d", m.Tokens(), before-contextmgr.Tokens("line b"))
	}
}
