package retrieve

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/glyphoxa/glyphoxa/internal/llm"
)

// A Decomposer splits a question that needs several facts ("what did the
// harbourmaster's sister say…") into simpler questions, each answerable
// from one passage. With Config.Decomposer set, hybrid retrieval searches
// the question and each of its parts and fuses the rankings; without one
// (the default), multi-hop questions are left to the graph walk.
type Decomposer interface {
	Decompose(ctx context.Context, question string) ([]string, error)
}

// MaxSubQuestions bounds how many parts of a question are searched.
const MaxSubQuestions = 3

// LLMDecomposer decomposes questions with an LLM (an *llm.Client).
type LLMDecomposer struct {
	LLM llm.Completer
}

// decomposePrompt asks for the parts of a question, one a line.
const decomposePrompt = `You split questions about a tabletop role-playing campaign into simpler questions for a search engine over the session transcripts.
Write at most 3 short questions, one per line, nothing else. Each must be answerable from a single passage; put what the first answer finds into the next question in general words ("the sister of the harbourmaster", then "what did that sister say about payment").
If the question is already simple, write it unchanged on one line.`

// Decompose asks the LLM for the question's parts. It returns at most
// MaxSubQuestions non-empty lines; an empty or failed answer is an error.
func (d LLMDecomposer) Decompose(ctx context.Context, question string) ([]string, error) {
	if d.LLM == nil {
		return nil, fmt.Errorf("decomposing %q: no LLM", question)
	}
	temp := float32(0)
	resp, err := d.LLM.Complete(ctx, llm.Request{
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: decomposePrompt},
			{Role: llm.RoleUser, Content: question},
		},
		Temperature: &temp,
		MaxTokens:   150,
	})
	if err != nil {
		return nil, fmt.Errorf("decomposing %q: %w", question, err)
	}
	parts := parseParts(resp.Text)
	if len(parts) == 0 {
		return nil, fmt.Errorf("decomposing %q: the LLM answered no question (%q)", question, resp.Text)
	}
	return parts, nil
}

// parseParts reads one question a line, dropping list marks ("1.", "-")
// and blank lines; at most MaxSubQuestions.
func parseParts(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimLeftFunc(line, func(r rune) bool {
			return unicode.IsDigit(r) || r == '.' || r == ')' || r == '-' || r == '*' || r == '•' || unicode.IsSpace(r)
		})
		if line == "" {
			continue
		}
		out = append(out, line)
		if len(out) == MaxSubQuestions {
			break
		}
	}
	return out
}
