package npc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
)

// ContextSource assembles an NPC's hot context for one turn (a
// *hotctx.Assembler): Prepare reads what the NPC can see, which needs
// nothing of the utterance and so can start while the player speaks;
// Complete adds what the turn brings.
type ContextSource interface {
	Prepare(ctx context.Context, npcID string, scope []string) (*hotctx.Prepared, error)
	Complete(ctx context.Context, p *hotctx.Prepared, req hotctx.Request) (hotctx.Context, error)
}

// ErrNoLLM is returned by Turn when no LLM is configured and no fallback
// answers; the result still carries the messages the LLM would have got.
var ErrNoLLM = errors.New("no LLM is configured (providers.llm)")

// Message is one earlier line of the conversation the NPC is in, or a
// summary of older conversation.
type Message struct {
	// Summary marks a summary of older conversation (sent, like every
	// line, as a user message: it retells what people said).
	Summary bool
	// SpeakerID and Speaker say who said the line; NPCID is set when an
	// NPC said it. Only the answering NPC's own lines reach its LLM as its
	// own (assistant) words: other NPCs' lines come labelled with their
	// names, like the players'.
	SpeakerID string
	Speaker   string
	NPCID     string
	Text      string
	// At is when the line was said.
	At time.Time
}

// TurnInput is one utterance to answer.
type TurnInput struct {
	NPCID       string
	SessionID   string
	SpeakerID   string
	SpeakerName string
	// Text is the corrected utterance.
	Text string
	// History is the conversation so far (oldest first): the running
	// summary, then the recent lines.
	History []Message
	// Live is set by a running table: History holds the recent lines, so
	// the hot context does not repeat them.
	Live bool
	// Direction is the DM's standing instruction for the NPC's replies
	// (/npc direct): it steers what the NPC does without scripting its
	// words. Empty: none.
	Direction string
	// Digest is the NPC's digest of this session as it witnessed it
	// (lifecycle/witness), sent ahead of the conversation.
	Digest string
	// Said are earlier lines of this session, older than History, that
	// the NPC heard from others and that bear on Text (those said to it
	// first); never its own replies. A non-nil Said (even empty) means
	// the caller chose them: the hot context then searches no earlier
	// lines of its own.
	Said []Message
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
	// Messages is the exact message list of the first LLM request (the one
	// it would have got, without an LLM).
	Messages []llm.Message
	// Context is the hot context the turn used.
	Context HotContext
	// Degraded is set when memory could not be read (a database outage):
	// the NPC answered from its persona and the conversation alone.
	Degraded bool
	// Fallback is set when the answer came from the fallback, not the LLM.
	Fallback bool
}

// Config configures an Agent.
type Config struct {
	// LLM answers; nil leaves answering to Fallback.
	LLM     llm.Streamer
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
	// OnUsage, if set, receives the tokens of every LLM request.
	OnUsage func(llm.Usage)
	Logger  *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Agent runs NPC turns. It is safe for concurrent use; each turn is
// independent.
type Agent struct {
	cfg Config

	mu       sync.Mutex
	prefetch map[string]*prefetched // by NPC id
	personas map[string]Persona     // last persona read, for outages
}

type prefetched struct {
	at   time.Time
	done chan struct{}
	p    *hotctx.Prepared
	err  error
	// persona is the NPC's persona, read beside the hot context (ok:
	// read from memory, not the copy kept for outages).
	persona   Persona
	personaOK bool
}

// NewAgent returns an agent.
func NewAgent(cfg Config) (*Agent, error) {
	if cfg.Context == nil || cfg.Graph == nil {
		return nil, errors.New("npc agent needs a context source and a knowledge graph")
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
	return &Agent{cfg: cfg, prefetch: map[string]*prefetched{}, personas: map[string]Persona{}}, nil
}

// Prefetch starts preparing an NPC's hot context and reading its persona
// before the player has finished speaking (neither depends on the words);
// the next Turn for that NPC uses them if they are still fresh, so its
// reply path makes no round trip to memory for them. It returns at once.
func (a *Agent) Prefetch(ctx context.Context, npcID, sessionID string) {
	scope := a.scopeOf(npcID)
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
		read := make(chan struct{})
		go func() {
			defer close(read)
			persona, stale, err := a.persona(ctx, npcID)
			p.persona, p.personaOK = persona, err == nil && !stale
		}()
		p.p, p.err = a.cfg.Context.Prepare(ctx, npcID, scope)
		<-read
	}()
}

// scopeOf is the knowledge scope of an NPC's last known persona.
func (a *Agent) scopeOf(npcID string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.personas[npcID].KnowledgeScope
}

// takePrefetched returns a fresh prefetch for the NPC, waiting for one
// under way; nil when there is none.
func (a *Agent) takePrefetched(ctx context.Context, npcID string) *prefetched {
	a.mu.Lock()
	p, ok := a.prefetch[npcID]
	delete(a.prefetch, npcID)
	a.mu.Unlock()
	if !ok || a.cfg.Now().Sub(p.at) > a.cfg.PrefetchTTL {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil
	}
	return p
}

// begin takes the NPC's prefetch (nil when there is none) and its
// persona: the prefetched one when it was read from memory, else read now.
func (a *Agent) begin(ctx context.Context, npcID string) (Persona, bool, *prefetched, error) {
	pre := a.takePrefetched(ctx, npcID)
	if pre != nil && pre.personaOK {
		return pre.persona, false, pre, nil
	}
	persona, stale, err := a.persona(ctx, npcID)
	return persona, stale, pre, err
}

// persona loads an NPC's persona; during an outage the last one read
// stands in.
func (a *Agent) persona(ctx context.Context, npcID string) (Persona, bool, error) {
	g, err := graphFor(a.cfg.Graph, npcID)
	var ent memory.Entity
	if err == nil {
		ent, err = g.Entity(ctx, npcID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		p := PersonaFromEntity(ent)
		a.personas[npcID] = p
		return p, false, nil
	}
	if p, ok := a.personas[npcID]; ok && !errors.Is(err, memory.ErrNotFound) {
		return p, true, nil
	}
	return Persona{}, false, fmt.Errorf("loading NPC %q: %w", npcID, err)
}

// hotContext assembles the turn's hot context. When memory cannot be read
// the turn goes on without it (degraded) rather than failing.
func (a *Agent) hotContext(ctx context.Context, p Persona, in TurnInput, pre *prefetched) (HotContext, bool, bool) {
	var prep *hotctx.Prepared
	spec := pre != nil && pre.err == nil
	if spec {
		prep = pre.p
	}
	var err error
	if !spec {
		if prep, err = a.cfg.Context.Prepare(ctx, in.NPCID, p.KnowledgeScope); err != nil {
			a.cfg.Logger.Warn("the NPC's memory cannot be read; it answers from its persona and the conversation",
				"npc", in.NPCID, "err", err)
			return HotContext{}, false, true
		}
	}
	req := hotctx.Request{NPCID: in.NPCID, SessionID: in.SessionID, Budget: a.hotBudget(in), Query: in.Text,
		Live: in.Live, Scope: p.KnowledgeScope, Witnessed: in.Said != nil}
	for _, m := range in.History {
		if !m.Summary {
			req.Recent = append(req.Recent, memory.TranscriptEntry{SessionID: in.SessionID, SpeakerID: m.SpeakerID,
				SpeakerName: m.Speaker, NPCID: m.NPCID, Text: m.Text, At: m.At})
		}
	}
	hc, err := a.cfg.Context.Complete(ctx, prep, req)
	if err != nil {
		a.cfg.Logger.Warn("the NPC's memory cannot be read; it answers from its persona and the conversation",
			"npc", in.NPCID, "err", err)
		return HotContext{}, spec, true
	}
	return hc, spec, false
}

// maxRounds bounds LLM requests per turn (tool rounds plus the answer).
const maxRounds = 4

// Turn answers one utterance as the NPC. Each completed sentence goes to
// onSentence as soon as it is written, so it can be spoken while the model
// writes the next.
//
// Without an LLM, or when the LLM fails before saying anything, the
// configured Fallback answers from memory; without one, the result still
// carries the messages the LLM would have got, and the error says why no
// one answered.
func (a *Agent) Turn(ctx context.Context, in TurnInput, onSentence func(string)) (TurnResult, error) {
	start := a.cfg.Now()
	since := func() time.Duration { return a.cfg.Now().Sub(start) }
	res := TurnResult{NPCID: in.NPCID}

	persona, stale, pre, err := a.begin(ctx, in.NPCID)
	if err != nil {
		return res, err
	}
	in = a.fitWitness(in)
	hc, spec, degraded := a.hotContext(ctx, persona, in, pre)
	res.Timings.ContextReady, res.Timings.Speculative = since(), spec
	res.Context, res.Degraded = hc, degraded || stale

	g, err := graphFor(a.cfg.Graph, persona.ID)
	if err != nil {
		return res, err
	}
	run := &toolRun{npc: persona, sessionID: in.SessionID, graph: g, heard: a.cfg.Heard, recall: a.cfg.Recall,
		budget: a.cfg.Budget, traces: map[string]int64{}}
	for _, t := range hc.Traces {
		run.traces[t.ID] = t.FactID
	}
	msgs := buildMessages(persona, hc, in)
	res.Messages = append([]llm.Message(nil), msgs...)
	if a.cfg.LLM == nil {
		return a.fallback(ctx, persona, hc, in, res, ErrNoLLM, onSentence)
	}
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
		if a.cfg.OnUsage != nil {
			a.cfg.OnUsage(resp.Usage)
		}
		res.Usage.PromptTokens += resp.Usage.PromptTokens
		res.Usage.CompletionTokens += resp.Usage.CompletionTokens
		res.Usage.Estimated = res.Usage.Estimated || resp.Usage.Estimated
		if err != nil {
			emit(splitter.Flush())
			res.Text = strings.TrimSpace(text.String())
			if res.Text == "" && ctx.Err() == nil {
				return a.fallback(ctx, persona, hc, in, res, fmt.Errorf("%s's reply: %w", persona.Name, err), onSentence)
			}
			return res, fmt.Errorf("%s's reply: %w", persona.Name, err)
		}
		if len(resp.ToolCalls) == 0 {
			break
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			use := run.call(ctx, tc.Function.Name, tc.Function.Arguments)
			res.Tools = append(res.Tools, use)
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID,
				Name: tc.Function.Name, Content: use.Result})
		}
	}
	emit(splitter.Flush())
	res.Text = strings.TrimSpace(text.String())
	res.Timings.Done = since()
	return res, nil
}

// fallback answers without the LLM, when a Fallback is configured;
// otherwise it returns cause. The result keeps what the turn prepared.
func (a *Agent) fallback(ctx context.Context, _ Persona, _ HotContext, in TurnInput, res TurnResult, cause error,
	onSentence func(string)) (TurnResult, error) {
	if a.cfg.Fallback == nil {
		return res, cause
	}
	reason := cause.Error()
	if errors.Is(cause, ErrNoLLM) {
		reason = "no LLM configured"
	}
	fb, err := a.cfg.Fallback.Turn(ctx, in, reason, onSentence)
	if err != nil {
		return res, errors.Join(cause, fmt.Errorf("the fallback answer: %w", err))
	}
	fb.Messages, fb.Context, fb.Degraded = res.Messages, res.Context, res.Degraded
	fb.Timings.ContextReady, fb.Timings.Speculative = res.Timings.ContextReady, res.Timings.Speculative
	fb.Usage, fb.Rounds, fb.Tools = res.Usage, res.Rounds, append(res.Tools, fb.Tools...)
	return fb, nil
}

// Shares of the hot context budget the witness parts may take.
const (
	digestShare = 4 // a quarter for the digest
	saidShare   = 5 // a fifth for the lines said earlier
)

// fitWitness cuts in's digest and earlier lines to their shares of the hot
// context budget: the digest to a quarter, the earlier lines (best first)
// to a fifth.
func (a *Agent) fitWitness(in TurnInput) TurnInput {
	room := a.cfg.ContextTokens * hotctx.CharsPerToken
	if d := strings.TrimSpace(in.Digest); len(d) > room/digestShare {
		in.Digest = clipText(d, room/digestShare)
	}
	if in.Said == nil {
		return in
	}
	used, kept := 0, make([]Message, 0, len(in.Said))
	for _, m := range in.Said {
		n := len(saidLine(m))
		if used+n > room/saidShare {
			break
		}
		used += n
		kept = append(kept, m)
	}
	in.Said = kept
	return in
}

// hotBudget is the hot context's budget once the witness parts have theirs.
func (a *Agent) hotBudget(in TurnInput) int {
	used := len(in.Digest)
	for _, m := range in.Said {
		used += len(saidLine(m))
	}
	return max(a.cfg.ContextTokens-(used+hotctx.CharsPerToken-1)/hotctx.CharsPerToken, a.cfg.ContextTokens/4)
}

func saidLine(m Message) string {
	return fmt.Sprintf("- %s (%s): %s\n", m.Speaker, m.At.UTC().Format("15:04"), strings.TrimSpace(m.Text))
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s[:n])
	if len(r) > 0 && r[len(r)-1] == '\uFFFD' {
		r = r[:len(r)-1]
	}
	return string(r)
}

// Titles of the witness parts of the request.
const (
	DigestTitle = "What you witnessed this session (your notes):"
	SaidTitle   = "Said to you or before you earlier this session, which may bear on this:"
)

// buildMessages lays out the request: the system prompt, the NPC's hot
// context (its notes), its digest of the session and the earlier lines
// that bear on the question, the conversation so far (its summary, then
// its lines, each labelled with its speaker; only the NPC's own lines as
// its own) and the utterance to answer.
//
// Only the NPC's instructions (its sheet, the rules and the DM's
// direction) are in the system role. The hot context, the digest, the
// earlier lines and the summary retell what people at the table said (a
// fact's quote, what was promised, who is talking, the lines themselves),
// and a player can say anything ("the game master directs you…"): they
// go as user messages, as the lines themselves do, so a player's words
// never reach the model as instructions.
func buildMessages(p Persona, hc HotContext, in TurnInput) []llm.Message {
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: systemPrompt(p) + direction(in.Direction)}}
	if k := knowledge(hc); k != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: k})
	}
	if d := strings.TrimSpace(in.Digest); d != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: DigestTitle + "\n" + d})
	}
	if len(in.Said) > 0 {
		var b strings.Builder
		b.WriteString(SaidTitle + "\n")
		for _, m := range in.Said {
			b.WriteString(saidLine(m))
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: strings.TrimRight(b.String(), "\n")})
	}
	for _, m := range in.History {
		switch {
		case m.Summary:
			msgs = append(msgs, llm.Message{Role: llm.RoleUser,
				Content: "Summary of the conversation before the lines below:\n" + m.Text})
		case m.NPCID != "" && m.NPCID == in.NPCID:
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: m.Text})
		default:
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: labelled(m.Speaker, m.Text)})
		}
	}
	return append(msgs, llm.Message{Role: llm.RoleUser, Content: labelled(in.SpeakerName, in.Text)})
}

// direction is the DM's standing instruction, as the system prompt ends.
func direction(d string) string {
	if d = strings.TrimSpace(d); d == "" {
		return ""
	}
	return "\n\nThe game master directs you, for this reply: " + d +
		"\nFollow the direction in your own words and in character; never mention it or the game master."
}

func labelled(speaker, text string) string {
	if speaker == "" {
		return text
	}
	return speaker + ": " + text
}

// Prepared is what a turn sends its model, prepared without calling it:
// for a speech-to-speech engine, which takes the NPC's instructions and
// tools itself.
type Prepared struct {
	Persona  Persona
	Context  HotContext
	Messages []llm.Message
	// Degraded is set when memory could not be read (an outage).
	Degraded bool
}

// Prepare assembles a turn's persona, hot context and messages, as Turn
// does before it calls the LLM.
func (a *Agent) Prepare(ctx context.Context, in TurnInput) (Prepared, error) {
	persona, stale, pre, err := a.begin(ctx, in.NPCID)
	if err != nil {
		return Prepared{}, err
	}
	in = a.fitWitness(in)
	hc, _, degraded := a.hotContext(ctx, persona, in, pre)
	return Prepared{Persona: persona, Context: hc, Messages: buildMessages(persona, hc, in), Degraded: degraded || stale}, nil
}

// Tools are the NPC tools offered to a model, as OpenAI function
// definitions.
func (a *Agent) Tools() []llm.Tool { return toolDefs() }

// ToolSet runs the NPC tools of one prepared turn for a model that calls
// them itself (a speech-to-speech engine), with the same permissions and
// budget as Turn's tool rounds. It is safe for concurrent use.
type ToolSet struct {
	mu  sync.Mutex
	run *toolRun
}

// ToolSet returns the tools of prepared turn p in session sessionID.
func (a *Agent) ToolSet(p Prepared, sessionID string) *ToolSet {
	g, err := graphFor(a.cfg.Graph, p.Persona.ID)
	if err != nil {
		g = refusedGraph{err}
	}
	run := &toolRun{npc: p.Persona, sessionID: sessionID, graph: g, heard: a.cfg.Heard, recall: a.cfg.Recall,
		budget: a.cfg.Budget, traces: map[string]int64{}}
	for _, t := range p.Context.Traces {
		run.traces[t.ID] = t.FactID
	}
	return &ToolSet{run: run}
}

// Call runs one tool call (arguments as JSON) and reports it.
func (t *ToolSet) Call(ctx context.Context, name, args string) ToolUse {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.run.call(ctx, name, args)
}
