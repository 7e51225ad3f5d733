package contextmgr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
)

// SummaryInstructions is the system prompt of OpenAISummarizer.
const SummaryInstructions = `You condense part of a tabletop role-playing session so that the game can go on without the full transcript.
Write a concise summary in the past tense. Keep, without fail:
- decisions the players or NPCs made;
- information that was revealed (names, places, secrets, clues);
- emotional states and changes of attitude of NPCs and players;
- promises, deals, threats and debts;
- game-mechanical outcomes (rolls, damage, items gained or lost, money, conditions).
Leave out small talk and table chatter that does not affect the game. Do not invent anything.`

// summaryTimeout bounds one summary request.
const summaryTimeout = 2 * time.Minute

// OpenAISummarizer summarises through an OpenAI-compatible chat-completions
// endpoint (an *llm.Client, with its timeouts and retries).
type OpenAISummarizer struct {
	client llm.Completer
	model  string
	// MaxTokens caps the summary (default 400).
	MaxTokens int
}

var _ Summarizer = (*OpenAISummarizer)(nil)

// NewOpenAISummarizer returns a summariser using model through client
// (empty: the client's model).
func NewOpenAISummarizer(client llm.Completer, model string) *OpenAISummarizer {
	return &OpenAISummarizer{client: client, model: model, MaxTokens: 400}
}

// Summarize asks the model for a summary of msgs.
func (s *OpenAISummarizer) Summarize(ctx context.Context, msgs []Message) (string, error) {
	if s.client == nil {
		return "", errors.New("summariser has no client configured")
	}
	var b strings.Builder
	for _, m := range msgs {
		switch {
		case m.Summary:
			fmt.Fprintf(&b, "(earlier summary) %s\n", strings.TrimPrefix(m.Content, SummaryPrefix+"\n"))
		case m.Name != "":
			fmt.Fprintf(&b, "%s: %s\n", m.Name, m.Content)
		default:
			fmt.Fprintf(&b, "%s: %s\n", m.Role, m.Content)
		}
	}
	temp := float32(0.2)
	resp, err := s.client.Complete(ctx, llm.Request{
		Model:       s.model,
		MaxTokens:   s.MaxTokens,
		Temperature: &temp,
		Timeout:     summaryTimeout,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: SummaryInstructions},
			{Role: llm.RoleUser, Content: "Transcript:\n" + b.String()},
		},
	})
	if err != nil {
		return "", fmt.Errorf("summary request to model %q: %w", s.model, err)
	}
	return resp.Text, nil
}
