package contextmgr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"
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

// OpenAISummarizer summarises through an OpenAI-compatible chat-completions
// endpoint.
type OpenAISummarizer struct {
	client *openai.Client
	model  string
	// MaxTokens caps the summary (default 400).
	MaxTokens int
}

var _ Summarizer = (*OpenAISummarizer)(nil)

// NewOpenAISummarizer returns a summariser using model through client.
func NewOpenAISummarizer(client *openai.Client, model string) *OpenAISummarizer {
	return &OpenAISummarizer{client: client, model: model, MaxTokens: 400}
}

// Summarize asks the model for a summary of msgs.
func (s *OpenAISummarizer) Summarize(ctx context.Context, msgs []Message) (string, error) {
	if s.client == nil || strings.TrimSpace(s.model) == "" {
		return "", errors.New("summariser has no client or model configured")
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
	resp, err := s.client.CreateChatCompletion(ctx, openai.ChatCompletionRequest{
		Model:       s.model,
		MaxTokens:   s.MaxTokens,
		Temperature: 0.2,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: SummaryInstructions},
			{Role: openai.ChatMessageRoleUser, Content: "Transcript:\n" + b.String()},
		},
	})
	if err != nil {
		return "", fmt.Errorf("summary request to model %q: %w", s.model, err)
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("summary request to model %q: the reply has no choices", s.model)
	}
	return resp.Choices[0].Message.Content, nil
}
