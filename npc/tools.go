package npc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/memory"
)

// Graph is what the NPC tools need from the knowledge graph.
type Graph interface {
	Entity(ctx context.Context, id string) (memory.Entity, error)
	VisibleSubgraph(ctx context.Context, npcID string, s memory.VisibilityScope) ([]memory.Entity, []memory.Relationship, error)
	Fact(ctx context.Context, id int64) (memory.Relationship, error)
	// WriteFact records a fact as written by w; an NPC only ever proposes.
	WriteFact(ctx context.Context, w memory.Writer, r memory.Relationship, reason string) (memory.FactWrite, error)
	ReviewThreshold() float64
}

// NPCGraph is an optional capability of a [Graph]: the same graph as one
// NPC may read it (its own secrets, the public part of everything else,
// nothing of another NPC's). When the agent's or the fallback's Graph has
// it, every read of an NPC's turn and every tool call goes through that
// NPC's own graph.
type NPCGraph interface {
	ForNPC(npcID string) (Graph, error)
}

// graphFor is g as npcID reads it.
func graphFor(g Graph, npcID string) (Graph, error) {
	if b, ok := g.(NPCGraph); ok {
		ng, err := b.ForNPC(npcID)
		if err != nil {
			return nil, fmt.Errorf("reading memory as NPC %q: %w", npcID, err)
		}
		return ng, nil
	}
	return g, nil
}

// refusedGraph answers every call with err: the tools of an NPC whose own
// graph could not be had read nothing rather than more than it may see.
type refusedGraph struct{ err error }

func (r refusedGraph) Entity(context.Context, string) (memory.Entity, error) {
	return memory.Entity{}, r.err
}
func (r refusedGraph) VisibleSubgraph(context.Context, string, memory.VisibilityScope) ([]memory.Entity, []memory.Relationship, error) {
	return nil, nil, r.err
}
func (r refusedGraph) Fact(context.Context, int64) (memory.Relationship, error) {
	return memory.Relationship{}, r.err
}
func (r refusedGraph) WriteFact(context.Context, memory.Writer, memory.Relationship, string) (memory.FactWrite, error) {
	return memory.FactWrite{}, r.err
}
func (r refusedGraph) ReviewThreshold() float64 { return 1 }

// HeardSearcher finds transcript lines an NPC heard: said by it or near its
// own lines.
type HeardSearcher interface {
	SearchHeard(ctx context.Context, npcID, query string, limit int) ([]memory.EntryHit, error)
}

// Recollection is one result of a recall.
type Recollection struct {
	Kind      string  `json:"kind"`
	Content   string  `json:"content"`
	SessionID string  `json:"session,omitempty"`
	Score     float64 `json:"-"`
}

// Recaller runs hybrid retrieval (vector, full text, graph, PageRank)
// restricted to what an NPC can know.
type Recaller interface {
	Recall(ctx context.Context, npcID, query string, k int) ([]Recollection, error)
}

// Tool names the model may call.
const (
	ToolSearchSessions = "search_sessions"
	ToolRecall         = "recall"
	ToolQueryEntities  = "query_entities"
	ToolRecallTrace    = "recall_trace"
	ToolProposeFact    = "propose_fact"
)

// ToolBudget bounds the tool use of one turn.
type ToolBudget struct {
	// MaxCalls is the number of tool calls a turn may make (default 4).
	MaxCalls int
	// MaxTime bounds the total time spent in tools (default 2 s).
	MaxTime time.Duration
}

func (b ToolBudget) withDefaults() ToolBudget {
	if b.MaxCalls == 0 {
		b.MaxCalls = 4
	}
	if b.MaxTime == 0 {
		b.MaxTime = 2 * time.Second
	}
	return b
}

// ToolUse records one tool call of a turn, as the DM's audit sees it.
type ToolUse struct {
	Name     string        `json:"name"`
	Args     string        `json:"args"`
	Result   string        `json:"result"`
	Error    string        `json:"error,omitempty"`
	Duration time.Duration `json:"duration"`
}

// toolDefs are the function declarations handed to the model.
func toolDefs() []llm.Tool {
	fn := func(name, desc string, props map[string]any, required ...string) llm.Tool {
		return llm.Tool{Type: llm.ToolTypeFunction, Function: &llm.FunctionDefinition{
			Name: name, Description: desc,
			Parameters: map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false},
		}}
	}
	s := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return []llm.Tool{
		fn(ToolSearchSessions, "Search what you heard in past sessions, by words.", map[string]any{"query": s("words to look for")}, "query"),
		fn(ToolRecall, "Recall memories about a topic: past events, people, places you know.", map[string]any{"query": s("what to remember")}, "query"),
		fn(ToolQueryEntities, "Look up people, places, items or groups you know by name or type, with what you know about them.",
			map[string]any{"name": s("a name or part of one"), "type": s("npc, location, item, faction, event, quest…")}),
		fn(ToolRecallTrace, "Bring back one of your faded memories (a memory trace listed in your context) in full.",
			map[string]any{"id": s("the trace id, e.g. f42")}, "id"),
		fn(ToolProposeFact, "Note a new fact you learned in this conversation. The game master reviews it before it becomes true.",
			map[string]any{"subject": s("who or what the fact is about (a name you know)"),
				"relation":   s("the relationship, e.g. LOCATED_AT, KNOWS, OWNS, HOSTILE_TO"),
				"object":     s("the other name"),
				"confidence": map[string]any{"type": "number", "description": "how sure you are, 0..1"}},
			"subject", "relation", "object"),
	}
}

// toolRun executes the tool calls of one turn with one NPC's permissions.
type toolRun struct {
	npc       Persona
	sessionID string
	graph     Graph
	heard     HeardSearcher
	recall    Recaller
	traces    map[string]int64 // trace id → fact id, from this turn's hot context
	budget    ToolBudget
	used      int
	spent     time.Duration

	visibleE []memory.Entity
	visibleR []memory.Relationship
	loaded   bool
}

// errBudget tells the model to stop using tools.
var errBudget = errors.New("tool budget for this reply is used up; answer now with what you know")

// exhausted reports whether the turn may make no more calls.
func (t *toolRun) exhausted() bool { return t.used >= t.budget.MaxCalls || t.spent >= t.budget.MaxTime }

// call runs one tool call and returns the result text for the model. Tool
// failures become results the model can read, so a reply still happens.
func (t *toolRun) call(ctx context.Context, name, args string) ToolUse {
	use := ToolUse{Name: name, Args: args}
	if t.exhausted() {
		use.Error = errBudget.Error()
		use.Result = jsonText(map[string]string{"error": use.Error})
		return use
	}
	t.used++
	ctx, cancel := context.WithTimeout(ctx, t.budget.MaxTime-t.spent)
	defer cancel()
	start := time.Now()
	res, err := t.dispatch(ctx, name, args)
	use.Duration = time.Since(start)
	t.spent += use.Duration
	if err != nil {
		use.Error = err.Error()
		use.Result = jsonText(map[string]string{"error": err.Error()})
		return use
	}
	use.Result = jsonText(res)
	return use
}

func (t *toolRun) dispatch(ctx context.Context, name, args string) (any, error) {
	var a struct {
		Query      string   `json:"query"`
		Name       string   `json:"name"`
		Type       string   `json:"type"`
		ID         string   `json:"id"`
		Subject    string   `json:"subject"`
		Relation   string   `json:"relation"`
		Object     string   `json:"object"`
		Confidence *float64 `json:"confidence"`
	}
	if strings.TrimSpace(args) != "" {
		if err := json.Unmarshal([]byte(args), &a); err != nil {
			return nil, fmt.Errorf("arguments are not valid JSON: %v", err)
		}
	}
	switch name {
	case ToolSearchSessions:
		if strings.TrimSpace(a.Query) == "" {
			return nil, errors.New("query is required")
		}
		if t.heard == nil {
			return nil, errors.New("session search is not available")
		}
		hits, err := t.heard.SearchHeard(ctx, t.npc.ID, a.Query, 5)
		if err != nil {
			return nil, fmt.Errorf("search failed: %w", err)
		}
		type line struct {
			Session string `json:"session"`
			At      string `json:"at"`
			Speaker string `json:"speaker"`
			Text    string `json:"text"`
		}
		out := []line{}
		for _, h := range hits {
			out = append(out, line{h.Entry.SessionID, h.Entry.At.Format("2006-01-02 15:04"), h.Entry.SpeakerName, h.Entry.Text})
		}
		return out, nil
	case ToolRecall:
		if strings.TrimSpace(a.Query) == "" {
			return nil, errors.New("query is required")
		}
		if t.recall == nil {
			return nil, errors.New("recall is not available")
		}
		rs, err := t.recall.Recall(ctx, t.npc.ID, a.Query, 5)
		if err != nil {
			return nil, fmt.Errorf("recall failed: %w", err)
		}
		if rs == nil {
			rs = []Recollection{}
		}
		return rs, nil
	case ToolQueryEntities:
		return t.queryEntities(ctx, a.Name, a.Type)
	case ToolRecallTrace:
		return t.recallTrace(ctx, a.ID)
	case ToolProposeFact:
		return t.proposeFact(ctx, a.Subject, a.Relation, a.Object, a.Confidence)
	}
	return nil, fmt.Errorf("there is no tool %q", name)
}

// visible loads (once per turn) what the NPC can know.
func (t *toolRun) visible(ctx context.Context) ([]memory.Entity, []memory.Relationship, error) {
	if !t.loaded {
		e, r, err := t.graph.VisibleSubgraph(ctx, t.npc.ID, memory.VisibilityScope{RelTypes: t.npc.KnowledgeScope})
		if err != nil {
			return nil, nil, fmt.Errorf("reading what %s knows: %w", t.npc.Name, err)
		}
		t.visibleE, t.visibleR, t.loaded = e, r, true
	}
	return t.visibleE, t.visibleR, nil
}

func (t *toolRun) queryEntities(ctx context.Context, name, typ string) (any, error) {
	ents, rels, err := t.visible(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, e := range ents {
		names[e.ID] = e.Name
	}
	type known struct {
		Name    string         `json:"name"`
		Type    string         `json:"type"`
		Aliases []string       `json:"aliases,omitempty"`
		About   map[string]any `json:"about,omitempty"`
		Facts   []string       `json:"facts,omitempty"`
	}
	out := []known{}
	q := strings.ToLower(strings.TrimSpace(name))
	for _, e := range ents {
		if typ != "" && !strings.EqualFold(e.Type, typ) {
			continue
		}
		if q != "" && !slices.ContainsFunc(append([]string{e.Name}, e.Aliases...), func(n string) bool {
			return strings.Contains(strings.ToLower(n), q)
		}) {
			continue
		}
		k := known{Name: e.Name, Type: e.Type, Aliases: e.Aliases, About: e.Attributes}
		if e.ID == t.npc.ID {
			k.About = nil // the NPC's own sheet is in its prompt already
		}
		for _, r := range rels {
			if r.SourceID == e.ID || r.TargetID == e.ID {
				k.Facts = append(k.Facts, factSentence(r, names))
			}
		}
		out = append(out, k)
		if len(out) == 8 {
			break
		}
	}
	return out, nil
}

func (t *toolRun) recallTrace(ctx context.Context, id string) (any, error) {
	factID, ok := t.traces[strings.TrimSpace(id)]
	if !ok {
		return nil, fmt.Errorf("you have no memory trace %q", id)
	}
	ents, rels, err := t.visible(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, e := range ents {
		names[e.ID] = e.Name
	}
	for _, r := range rels {
		if r.ID == factID {
			return map[string]any{"memory": factSentence(r, names), "details": r.Attributes,
				"since_session": r.Provenance.SessionID}, nil
		}
	}
	return nil, fmt.Errorf("that memory is gone")
}

func (t *toolRun) proposeFact(ctx context.Context, subject, relation, object string, conf *float64) (any, error) {
	ents, _, err := t.visible(ctx)
	if err != nil {
		return nil, err
	}
	find := func(name string) (memory.Entity, error) {
		n := strings.ToLower(strings.TrimSpace(name))
		for _, e := range ents {
			if strings.ToLower(e.Name) == n || e.ID == n || slices.ContainsFunc(e.Aliases, func(a string) bool { return strings.ToLower(a) == n }) {
				return e, nil
			}
		}
		return memory.Entity{}, fmt.Errorf("you do not know anyone or anything called %q", name)
	}
	src, err := find(subject)
	if err != nil {
		return nil, err
	}
	dst, err := find(object)
	if err != nil {
		return nil, err
	}
	rel := strings.ToUpper(strings.Join(strings.FieldsFunc(relation, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}), "_"))
	if rel == "" {
		return nil, errors.New("relation is required")
	}
	claimed := 0.5
	if conf != nil && *conf >= 0 && *conf <= 1 {
		claimed = *conf
	}
	// An NPC's claim never becomes canon by itself: the store keeps it as
	// the NPC's own proposal, below the review threshold, for the DM. The
	// answer is the same whether or not canon already holds the fact, and
	// whether the NPC's earlier proposal of it waits for the DM or was
	// rejected: the NPC, and the player it may tell, learn nothing about
	// facts hidden from it or about the DM's rulings.
	stored := min(claimed, max(0, t.graph.ReviewThreshold()-0.01))
	_, err = t.graph.WriteFact(ctx, memory.NPCWriter(t.npc.ID), memory.Relationship{
		SourceID: src.ID, TargetID: dst.ID, Type: rel,
		Attributes: map[string]any{"claimed_confidence": claimed},
		Provenance: memory.Provenance{SessionID: t.sessionID, Timestamp: time.Now(), Confidence: stored, Source: memory.SourceStated},
	}, "")
	if err != nil {
		return nil, fmt.Errorf("could not note that: %w", err)
	}
	return map[string]any{"status": "noted; the game master will review it", "fact": fmt.Sprintf("%s %s %s", src.Name, rel, dst.Name)}, nil
}

// factSentence renders a relationship for the model: "Grimjaw LOCATED_AT Ironhold".
func factSentence(r memory.Relationship, names map[string]string) string {
	n := func(id string) string {
		if s, ok := names[id]; ok {
			return s
		}
		return id
	}
	return fmt.Sprintf("%s %s %s", n(r.SourceID), r.Type, n(r.TargetID))
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"error":"unprintable result"}`
	}
	return string(b)
}
