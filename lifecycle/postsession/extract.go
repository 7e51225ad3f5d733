package postsession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/memory"
)

// Extraction is what an extractor found in a span of transcript.
type Extraction struct {
	Entities      []ExtractedEntity       `json:"entities"`
	Relationships []ExtractedRelationship `json:"relationships"`
}

// ExtractedEntity is an entity mentioned in the transcript.
type ExtractedEntity struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Aliases []string `json:"aliases,omitempty"`
	// Description is a short note on what the transcript says about it.
	Description string `json:"description,omitempty"`
}

// ExtractedRelationship is a fact the transcript states or implies.
type ExtractedRelationship struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Type   string `json:"type"`
	// Confidence is 0..1.
	Confidence float64 `json:"confidence"`
	// Basis is "stated" (somebody said it) or "inferred".
	Basis string `json:"basis"`
	// Evidence quotes or paraphrases the line it rests on.
	Evidence string `json:"evidence,omitempty"`
	// Attributes are the fact's details: of a promise, debt or handover
	// (lifecycle/ledger) what, due, said_at and entry. Only LedgerAttributes are
	// kept.
	Attributes map[string]any `json:"attributes,omitempty"`
}

// LedgerAttributes are the attributes an extracted fact keeps: what was
// promised, owed or given, by when, when the line was said, and the key
// that tells it apart from another between the same two.
var LedgerAttributes = []string{"what", "due", "said_at", "entry"}

// Extractor finds entities and relationships in transcript entries. known
// lists the campaign's entities so that it can use their names.
type Extractor interface {
	Extract(ctx context.Context, known []memory.Entity, entries []memory.TranscriptEntry) (Extraction, error)
}

// ExtractionInstructions is the system prompt of OpenAIExtractor.
const ExtractionInstructions = `You extract a knowledge graph from the transcript of a tabletop role-playing session.
Reply with one JSON object and nothing else:
{"entities":[{"name":"...","type":"npc|player|location|item|faction|event|quest|concept","aliases":["..."],"description":"..."}],
 "relationships":[{"source":"<entity name>","target":"<entity name>","type":"UPPER_SNAKE_CASE","confidence":0.0,"basis":"stated|inferred","evidence":"..."}]}
Rules:
- Use the exact name of a known entity when the transcript refers to it, even if misspelt.
- Every relationship's source and target must be listed in entities or be known entities.
- basis is "stated" when somebody says the fact outright, "inferred" when you deduce it.
- confidence is your probability (0..1) that the fact holds in the game world. Be honest: guesses stay below 0.7.
- Leave out table talk about the real world and rules discussions.
- Promises, debts and handovers get these types, from who promised, owes or gave to whom:
  PROMISED, OWES, GAVE, with "attributes":{"what":"<what, in the line's words>","due":"<by when, if said>"} and the line quoted in evidence.
  Only what the table treats as real: not a promise said in jest, not a handover the DM takes back.`

// extractionTimeout bounds one extraction request: a window of transcript
// and up to MaxTokens of JSON take a slow local model minutes.
const extractionTimeout = 5 * time.Minute

// OpenAIExtractor extracts through an OpenAI-compatible chat-completions
// endpoint in JSON mode.
type OpenAIExtractor struct {
	client llm.Completer
	model  string
	// MaxTokens caps the reply (default 1500).
	MaxTokens int
	// JSONMode asks for response_format json_object (default true);
	// servers that do not support it can turn it off.
	JSONMode bool
}

var _ Extractor = (*OpenAIExtractor)(nil)

// NewOpenAIExtractor returns an extractor using model through client (an
// *llm.Client, with its timeouts and retries; empty model: the client's).
func NewOpenAIExtractor(client llm.Completer, model string) *OpenAIExtractor {
	return &OpenAIExtractor{client: client, model: model, MaxTokens: 1500, JSONMode: true}
}

// Extract asks the model for the entities and relationships of entries.
func (x *OpenAIExtractor) Extract(ctx context.Context, known []memory.Entity, entries []memory.TranscriptEntry) (Extraction, error) {
	if x.client == nil {
		return Extraction{}, errors.New("extractor has no client configured")
	}
	var b strings.Builder
	if len(known) > 0 {
		b.WriteString("Known entities:\n")
		for _, e := range known {
			fmt.Fprintf(&b, "- %s (%s)", e.Name, e.Type)
			if len(e.Aliases) > 0 {
				fmt.Fprintf(&b, ", also called %s", strings.Join(e.Aliases, ", "))
			}
			b.WriteByte('\n')
		}
		b.WriteByte('\n')
	}
	b.WriteString("Transcript:\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "[%s] %s: %s\n", e.At.UTC().Format(time.TimeOnly), e.SpeakerName, e.Text)
	}
	temp := float32(0)
	req := llm.Request{
		Model:       x.model,
		MaxTokens:   x.MaxTokens,
		Temperature: &temp,
		JSON:        x.JSONMode,
		Timeout:     extractionTimeout,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: ExtractionInstructions},
			{Role: llm.RoleUser, Content: b.String()},
		},
	}
	resp, err := x.client.Complete(ctx, req)
	if err != nil {
		return Extraction{}, fmt.Errorf("extraction request to model %q: %w", x.model, err)
	}
	return ParseExtraction(resp.Text)
}

// ParseExtraction decodes a model's JSON reply. It tolerates a Markdown code
// fence around the object and rejects anything else that is not the schema.
func ParseExtraction(s string) (Extraction, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "```"))
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	var x Extraction
	if err := dec.Decode(&x); err != nil {
		return Extraction{}, fmt.Errorf("the extraction reply is not the expected JSON (%w): %.120q", err, s)
	}
	if dec.More() {
		return Extraction{}, fmt.Errorf("the extraction reply has data after the JSON object: %.120q", s)
	}
	return x, nil
}
