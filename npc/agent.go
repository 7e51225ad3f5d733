package npc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/npc/llm"
)

// ContextSource assembles an NPC's hot context for one turn.
type ContextSource interface {
	HotContext(ctx context.Context, npcID, sessionID string, budgetTokens int) (HotContext, error)
}

// Streamer is the LLM an agent talks to (an *llm.Client).
type Streamer interface {
	Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error)
}

// Message is one earlier line of the conversation the NPC is in.
type Message struct {
	// Role is "user" for players and the DM, "assistant" for this NPC, and
	// "system" for summaries of older conversation.
	Role    string
	Speaker string
	Text    string
}

// TurnInput is one utterance to answer.
type TurnInput struct {
	NPCID       string
	SessionID   string
	SpeakerID   string
	SpeakerName string
	// Text is the corrected utterance.
	Text string
	// History is the conversation so far (oldest first), managed by the
	// session's context manager.
	History []Message
}

// TurnTimings marks a turn's progress, measured from its start.
type TurnTimings struct {
	ContextReady  time.Duration
	FirstToken    time.Duration
	FirstSentence time.Duration
	Done          time.Duration
	// Speculative is true when the hot context was assembled ahead of time
	// from an interim transcript.
	Speculative bool
}

// TurnResult is an NPC's reply.
type TurnResult struct {
	NPCID     string
	Text      string
	Sentences []string
	Tools     []ToolUse
	Usage     llm.Usage
	Timings   TurnTimings
	// Rounds is the number of LLM requests (1 + one per tool round).
	Rounds int
	// Fallback is true when the reply was extracted from memory without
	// the LLM (see [Fallback]).
	Fallback bool
}

// Config configures an Agent.
type Config struct {
	LLM     Streamer
	Context ContextSource
	Graph   Graph
	// Heard and Recall back the search_sessions and recall tools; nil
	// leaves a tool unavailable (it says so to the model).
	Heard  HeardSearcher
	Recall Recaller
	// Fallback, when set, answers without the LLM when LLM is nil or
	// fails before saying anything.
	Fallback *Fallback
	// ContextTokens is the hot context budget (default 1500 tokens).
	ContextTokens int
	Budget        ToolBudget
	// PrefetchTTL is how long a speculatively assembled context stays
	// usable (default 15 s).
	PrefetchTTL time.Duration
	Logger      *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Agent runs NPC turns. It is safe for concurrent use; each turn is
// independent.
type Agent struct {
	cfg Config

	mu       sync.Mutex
	prefetch map[string]*prefetched // by NPC id
}

type prefetched struct {
	at   time.Time
	done chan struct{}
	hc   HotContext
	err  error
}

// NewAgent returns an agent.
func NewAgent(cfg Config) (*Agent, error) {
	if (cfg.LLM == nil && cfg.Fallback == nil) || cfg.Context == nil || cfg.Graph == nil {
		return nil, errors.New("npc agent needs an LLM (or a fallback), a context source and a knowledge graph")
	}
	if cfg.ContextTokens == 0 {
		cfg.ContextTokens = 1500
	}
	cfg.Budget = cfg.Budget.withDefaults()
	if cfg.PrefetchTTL == 0 {
		cfg.PrefetchTTL = 15 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Agent{cfg: cfg, prefetch: map[string]*prefetched{}}, nil
}

// Prefetch starts assembling an NPC's hot context from an interim
// transcript, before the player has finished speaking; the next Turn for
// that NPC uses it if it is still fresh. It returns at once.
func (a *Agent) Prefetch(ctx context.Context, npcID, sessionID string) {
	p := &prefetched{at: a.cfg.Now(), done: make(chan struct{})}
	a.mu.Lock()
	if old, ok := a.prefetch[npcID]; ok {
		select {
		case <-old.done:
		default:
			a.mu.Unlock()
			return // one is already under way
		}
	}
	a.prefetch[npcID] = p
	a.mu.Unlock()
	go func() {
		defer close(p.done)
		p.hc, p.err = a.cfg.Context.HotContext(ctx, npcID, sessionID, a.cfg.ContextTokens)
	}()
}

// takePrefetched returns a fresh prefetched context for the NPC, waiting for
// one under way.
func (a *Agent) takePrefetched(ctx context.Context, npcID string) (HotContext, bool) {
	a.mu.Lock()
	p, ok := a.prefetch[npcID]
	delete(a.prefetch, npcID)
	a.mu.Unlock()
	if !ok || a.cfg.Now().Sub(p.at) > a.cfg.PrefetchTTL {
		return HotContext{}, false
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return HotContext{}, false
	}
	return p.hc, p.err == nil
}

// maxRounds bounds LLM requests per turn (tool rounds plus the answer).
const maxRounds = 4

// Turn answers one utterance as the NPC. Each completed sentence goes to
// onSentence as soon as it is written, so it can be spoken while the model
// writes the next.
func (a *Agent) Turn(ctx context.Context, in TurnInput, onSentence func(string)) (TurnResult, error) {
	if a.cfg.LLM == nil {
		return a.cfg.Fallback.Turn(ctx, in, "no LLM configured", onSentence)
	}
	res, err := a.turn(ctx, in, onSentence)
	if err != nil && a.cfg.Fallback != nil && len(res.Sentences) == 0 && ctx.Err() == nil {
		return a.cfg.Fallback.Turn(ctx, in, err.Error(), onSentence)
	}
	return res, err
}

func (a *Agent) turn(ctx context.Context, in TurnInput, onSentence func(string)) (TurnResult, error) {
	start := a.cfg.Now()
	since := func() time.Duration { return a.cfg.Now().Sub(start) }
	res := TurnResult{NPCID: in.NPCID}

	ent, err := a.cfg.Graph.Entity(ctx, in.NPCID)
	if err != nil {
		return res, fmt.Errorf("loading NPC %q: %w", in.NPCID, err)
	}
	persona := PersonaFromEntity(ent)
	hc, spec := a.takePrefetched(ctx, in.NPCID)
	if !spec {
		if hc, err = a.cfg.Context.HotContext(ctx, in.NPCID, in.SessionID, a.cfg.ContextTokens); err != nil {
			return res, fmt.Errorf("assembling the hot context of %s: %w", persona.Name, err)
		}
	}
	res.Timings.ContextReady, res.Timings.Speculative = since(), spec

	run := &toolRun{npc: persona, sessionID: in.SessionID, graph: a.cfg.Graph, heard: a.cfg.Heard, recall: a.cfg.Recall,
		budget: a.cfg.Budget, traces: map[string]int64{}}
	for _, t := range hc.Traces {
		run.traces[t.ID] = t.FactID
	}
	msgs := buildMessages(persona, hc, in)
	var splitter SentenceSplitter
	var text strings.Builder
	emit := func(ss []string) {
		for _, s := range ss {
			if res.Timings.FirstSentence == 0 {
				res.Timings.FirstSentence = since()
			}
			res.Sentences = append(res.Sentences, s)
			if onSentence != nil {
				onSentence(s)
			}
		}
	}
	for round := 0; round < maxRounds; round++ {
		req := llm.Request{Messages: msgs}
		if !run.exhausted() && round < maxRounds-1 {
			req.Tools = toolDefs()
		}
		resp, err := a.cfg.LLM.Stream(ctx, req, func(s string) {
			if res.Timings.FirstToken == 0 {
				res.Timings.FirstToken = since()
			}
			text.WriteString(s)
			emit(splitter.Write(s))
		})
		res.Rounds++
		res.Usage.PromptTokens += resp.Usage.PromptTokens
		res.Usage.CompletionTokens += resp.Usage.CompletionTokens
		res.Usage.Estimated = res.Usage.Estimated || resp.Usage.Estimated
		if err != nil {
			emit(splitter.Flush())
			res.Text = strings.TrimSpace(text.String())
			return res, fmt.Errorf("%s's reply: %w", persona.Name, err)
		}
		if len(resp.ToolCalls) == 0 {
			break
		}
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			use := run.call(ctx, tc.Function.Name, tc.Function.Arguments)
			res.Tools = append(res.Tools, use)
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID,
				Name: tc.Function.Name, Content: use.Result})
		}
	}
	emit(splitter.Flush())
	res.Text = strings.TrimSpace(text.String())
	res.Timings.Done = since()
	return res, nil
}

// buildMessages lays out the request: the system prompt, the conversation
// so far, and the utterance to answer, each player line labelled with its
// speaker.
func buildMessages(p Persona, hc HotContext, in TurnInput) []openai.ChatCompletionMessage {
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: systemPrompt(p, hc)}}
	for _, m := range in.History {
		switch m.Role {
		case openai.ChatMessageRoleAssistant:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: m.Text})
		case openai.ChatMessageRoleSystem:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: m.Text})
		default:
			msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: labelled(m.Speaker, m.Text)})
		}
	}
	return append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: labelled(in.SpeakerName, in.Text)})
}

func labelled(speaker, text string) string {
	if speaker == "" {
		return text
	}
	return speaker + ": " + text
}
