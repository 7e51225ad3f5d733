// Package hotctx assembles an NPC's hot context: what it is told on every
// turn without asking.
//
// The hot context has three parts: the identity snapshot (the NPC and the
// facts it can see, with the entities they connect), the last few minutes
// of the session's transcript, and the scene (where the NPC is and who is
// talking). [Assembler.Assemble] reads them in two queries and returns a
// structured [Context] with its prompt text, cut to a token budget (one
// token taken as four characters).
//
// When the facts do not all fit, they are ranked by the product of three
// percentiles among the visible facts: recency (last update), connectedness
// (edges of the entities they join) and richness (the length of their
// attributes and of their entities' descriptions). Facts updated in the
// last seven days are always kept. The best facts go into the text; the
// rest become memory traces, an id and a few words the NPC can recall in
// full on demand. Nothing is deleted.
package hotctx

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// Defaults.
const (
	DefaultRecent = 5 * time.Minute
	// DefaultKeepFresh is how recently updated a fact must be to be kept
	// whatever its rank.
	DefaultKeepFresh = 7 * 24 * time.Hour
	// CharsPerToken converts the token budget to characters.
	CharsPerToken = 4
)

// Config configures an Assembler. Zero fields take the defaults.
type Config struct {
	// Recent is the transcript window (default 5 minutes).
	Recent time.Duration
	// KeepFresh keeps facts updated this recently (default 7 days).
	KeepFresh time.Duration
	// Scope is what the NPC sees through (default: memory's default
	// knowledge scope, 3 hops).
	Scope memory.VisibilityScope
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NowWith, when set, tells the NPC who holds now an item it handed on
	// (lifecycle/ledger.NowWithOf); nil leaves its handovers as recorded.
	NowWith NowWith
}

// Assembler builds hot contexts for the NPCs of one campaign. It is safe
// for concurrent use.
type Assembler struct {
	camp *access.Campaign
	cfg  Config
}

// New returns an assembler for campaign c.
func New(c *access.Campaign, cfg Config) *Assembler {
	if cfg.Recent <= 0 {
		cfg.Recent = DefaultRecent
	}
	if cfg.KeepFresh <= 0 {
		cfg.KeepFresh = DefaultKeepFresh
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Assembler{camp: c, cfg: cfg}
}

// Fact is a visible fact, ranked.
type Fact struct {
	Relationship memory.Relationship
	// Text is the fact in words ("Hadrik Emberfell FORGED Ember Blade").
	Text string
	// Score is the product of the three percentiles, in (0, 1].
	Score float64
	// Fresh is true when the fact was updated within KeepFresh.
	Fresh bool
}

// Trace is a fact left out of the text.
type Trace struct {
	// ID names the trace for recall ("f12").
	ID      string
	FactID  int64
	Summary string
}

// Scene is where the NPC is and who is around.
type Scene struct {
	// Location is where the NPC is (its newest LOCATED_AT fact), if known.
	Location *memory.Entity
	// Present are the speakers heard in the recent window, the NPC aside.
	Present []string
}

// Context is a hot context.
type Context struct {
	NPC memory.Entity
	// Facts are the facts in the text, best first.
	Facts  []Fact
	Traces []Trace
	Recent []memory.TranscriptEntry
	// Earlier are lines of this session older than the recent window that
	// share words with what the NPC is answering, best first; never the
	// NPC's own lines. Empty when the request is Witnessed (a running
	// table sends those lines itself, from what the NPC witnessed).
	Earlier []memory.TranscriptEntry
	Scene   Scene
	// Text is the prompt text, at most budget×4 characters.
	Text string
}

// Request is what one NPC turn asks of the hot context.
type Request struct {
	NPCID     string
	SessionID string
	// Budget is the size of the text, in tokens.
	Budget int
	// Query is what the NPC is answering. Lines of the session older than
	// the recent window that share words with it come back as Earlier.
	Query string
	// Scope is the relationship types the NPC's knowledge travels along
	// (its persona's knowledge_scope); empty means Config.Scope.
	Scope []string
	// Live is set by a running table, which sends the NPC the recent
	// conversation itself (speaker by speaker, see package npc): the text
	// then leaves the transcript out, and the scene's speakers and the
	// recent window come from Recent, measured from Config.Now.
	Live   bool
	Recent []memory.TranscriptEntry
	// Witnessed is set when the caller sends the NPC the earlier lines
	// that bear on Query itself (a running table, from what the NPC
	// witnessed; see lifecycle/witness): the session log is then not
	// searched for Earlier.
	Witnessed bool
}

// Assemble builds the hot context of npcID for a turn in sessionID within
// budgetTokens, with the session's last minutes of transcript read from
// the session log.
func (a *Assembler) Assemble(ctx context.Context, npcID, sessionID string, budgetTokens int) (Context, error) {
	return a.AssembleTurn(ctx, Request{NPCID: npcID, SessionID: sessionID, Budget: budgetTokens})
}

// maxEarlier bounds the earlier lines of a hot context.
const maxEarlier = 4

// AssembleTurn builds the hot context of one turn.
func (a *Assembler) AssembleTurn(ctx context.Context, req Request) (Context, error) {
	p, err := a.Prepare(ctx, req.NPCID, req.Scope)
	if err != nil {
		return Context{}, err
	}
	return a.Complete(ctx, p, req)
}

// Prepared is the part of a hot context that does not depend on what was
// just said: what the NPC can see, ranked. An NPC's turn can prepare it
// while the player is still speaking.
type Prepared struct {
	npcID string
	byID  map[string]memory.Entity
	rels  []memory.Relationship
	facts []Fact
}

// Prepare reads and ranks what npcID can see through scope (empty:
// Config.Scope).
func (a *Assembler) Prepare(ctx context.Context, npcID string, scope []string) (*Prepared, error) {
	sc := a.cfg.Scope
	if len(scope) > 0 {
		sc.RelTypes = scope
	}
	// The NPC reads as itself: another NPC's secrets, DM-only attributes
	// and pending facts are left out in SQL.
	as, err := a.camp.As(memory.NPCViewer(npcID))
	if err != nil {
		return nil, fmt.Errorf("hot context of %q: %w", npcID, err)
	}
	ents, rels, err := as.Graph().VisibleSubgraph(ctx, npcID, sc)
	if err != nil {
		return nil, fmt.Errorf("hot context of %q: %w", npcID, err)
	}
	if rels, err = handedOn(ctx, a.cfg.NowWith, as, npcID, rels); err != nil {
		return nil, err
	}
	byID := make(map[string]memory.Entity, len(ents))
	for _, e := range ents {
		byID[e.ID] = e
	}
	return &Prepared{npcID: npcID, byID: byID, rels: rels, facts: a.rank(rels, byID)}, nil
}

// Complete finishes a prepared hot context for req: the recent
// transcript, the earlier lines that bear on req.Query, the scene and the
// text within req.Budget.
func (a *Assembler) Complete(ctx context.Context, p *Prepared, req Request) (Context, error) {
	var hc Context
	npcID, sessionID, budgetTokens := p.npcID, req.SessionID, req.Budget
	if budgetTokens <= 0 {
		return hc, fmt.Errorf("%w: hot context budget must be positive, got %d tokens", memory.ErrInvalid, budgetTokens)
	}
	now := a.cfg.Now()
	var recent []memory.TranscriptEntry
	switch {
	case req.Live:
		for _, e := range req.Recent {
			if !e.At.Before(now.Add(-a.cfg.Recent)) {
				recent = append(recent, e)
			}
		}
	case sessionID != "":
		var err error
		recent, err = a.camp.Sessions().GetRecent(ctx, sessionID, a.cfg.Recent)
		if err != nil {
			return hc, fmt.Errorf("hot context of %q: %w", npcID, err)
		}
	}
	if sessionID != "" && strings.TrimSpace(req.Query) != "" && !req.Witnessed {
		before := now.Add(-a.cfg.Recent)
		if !req.Live && len(recent) > 0 {
			before = recent[0].At
		}
		hits, err := a.camp.Sessions().Search(ctx, req.Query, memory.SearchOpts{SessionID: sessionID, Before: before,
			Limit: 2 * maxEarlier, Any: true})
		if err != nil {
			return hc, fmt.Errorf("hot context of %q: earlier lines: %w", npcID, err)
		}
		for _, h := range hits {
			// Never the NPC's own replies: they would crowd out what
			// others said and make it quote itself.
			if h.Entry.NPCID == npcID || h.Entry.SpeakerID == npcID || len(hc.Earlier) == maxEarlier {
				continue
			}
			hc.Earlier = append(hc.Earlier, h.Entry)
		}
	}
	hc.NPC = p.byID[npcID]
	for _, e := range recent {
		if !e.NonCanon {
			hc.Recent = append(hc.Recent, e)
		}
	}
	hc.Scene = scene(npcID, p.rels, p.byID, hc.Recent)
	shown := hc
	if req.Live {
		shown.Recent = nil // the conversation carries them
	}
	hc.Text, hc.Facts, hc.Traces = render(shown, p.facts, budgetTokens*CharsPerToken)
	return hc, nil
}

func scene(npcID string, rels []memory.Relationship, byID map[string]memory.Entity, recent []memory.TranscriptEntry) Scene {
	var s Scene
	var newest time.Time
	for _, r := range rels {
		if r.SourceID == npcID && r.Type == "LOCATED_AT" && !r.UpdatedAt.Before(newest) {
			if e, ok := byID[r.TargetID]; ok {
				e := e
				s.Location, newest = &e, r.UpdatedAt
			}
		}
	}
	seen := map[string]bool{}
	for _, e := range recent {
		name := e.SpeakerName
		if name == "" {
			name = e.SpeakerID
		}
		if e.SpeakerID == npcID || e.NPCID == npcID || name == "" || seen[name] {
			continue
		}
		seen[name] = true
		s.Present = append(s.Present, name)
	}
	return s
}

// rank scores every visible fact by the product of its recency,
// connectedness and richness percentiles.
func (a *Assembler) rank(rels []memory.Relationship, byID map[string]memory.Entity) []Fact {
	n := len(rels)
	if n == 0 {
		return nil
	}
	degree := map[string]int{}
	for _, r := range rels {
		degree[r.SourceID]++
		degree[r.TargetID]++
	}
	recency := make([]float64, n)
	connected := make([]float64, n)
	rich := make([]float64, n)
	// An entity's attributes are measured once, not once per fact.
	entLen := make(map[string]int, len(byID))
	lenOf := func(id string) int {
		l, ok := entLen[id]
		if !ok {
			l = textLen(byID[id].Attributes)
			entLen[id] = l
		}
		return l
	}
	for i, r := range rels {
		recency[i] = float64(r.UpdatedAt.UnixNano())
		connected[i] = float64(degree[r.SourceID] + degree[r.TargetID])
		rich[i] = float64(textLen(r.Attributes) + lenOf(r.SourceID) + lenOf(r.TargetID))
	}
	pr, pc, pi := percentiles(recency), percentiles(connected), percentiles(rich)
	now := a.cfg.Now()
	facts := make([]Fact, n)
	for i, r := range rels {
		facts[i] = Fact{Relationship: r, Text: factText(r, byID), Score: pr[i] * pc[i] * pi[i],
			Fresh: now.Sub(r.UpdatedAt) < a.cfg.KeepFresh}
	}
	slices.SortStableFunc(facts, func(a, b Fact) int {
		switch {
		case a.Fresh != b.Fresh:
			if a.Fresh {
				return -1
			}
			return 1
		case a.Score != b.Score:
			return cmp.Compare(b.Score, a.Score)
		}
		return cmp.Compare(a.Relationship.ID, b.Relationship.ID)
	})
	return facts
}

// percentiles maps each value to the share of values at or below it, ties
// sharing their average rank; results are in (0, 1].
func percentiles(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(v[a], v[b]) })
	out := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		p := (float64(i+j)/2 + 1) / float64(len(v))
		for k := i; k <= j; k++ {
			out[idx[k]] = p
		}
		i = j + 1
	}
	return out
}

func textLen(attrs map[string]any) int {
	if len(attrs) == 0 {
		return 0
	}
	b, err := json.Marshal(attrs)
	if err != nil {
		return 0
	}
	return len(b)
}

func name(id string, byID map[string]memory.Entity) string {
	if e, ok := byID[id]; ok {
		return e.Name
	}
	return id
}

func factText(r memory.Relationship, byID map[string]memory.Entity) string {
	s := fmt.Sprintf("%s %s %s", name(r.SourceID, byID), r.Type, name(r.TargetID, byID))
	var extra []string
	keys := make([]string, 0, len(r.Attributes))
	for k := range r.Attributes {
		if k != memory.AttrSecret && k != memory.AttrKnownBy {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra = append(extra, fmt.Sprintf("%s: %v", k, r.Attributes[k]))
	}
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, "; ") + ")"
	}
	return s
}

// render lays out the text within limit characters: who the NPC is and
// the scene, then the facts, then the earlier lines that bear on the
// question (up to a fifth of the room), then the recent transcript (newest
// lines kept). Fresh facts are placed first and may use all the room; the
// transcript then gets up to 40% of what is left, and the other facts, best
// first, fill the rest. Facts that do not fit become traces.
func render(hc Context, facts []Fact, limit int) (string, []Fact, []Trace) {
	var head strings.Builder
	if hc.NPC.ID != "" {
		fmt.Fprintf(&head, "You are %s", hc.NPC.Name)
		if hc.NPC.Type != "" {
			fmt.Fprintf(&head, " (%s)", hc.NPC.Type)
		}
		head.WriteString(".\n")
	}
	if hc.Scene.Location != nil {
		fmt.Fprintf(&head, "You are at %s.\n", hc.Scene.Location.Name)
	}
	if len(hc.Scene.Present) > 0 {
		fmt.Fprintf(&head, "Talking here just now: %s.\n", strings.Join(hc.Scene.Present, ", "))
	}
	headText := clip(head.String(), limit)
	left := limit - len(headText)

	// Earlier lines that bear on the question, best first, in a fifth of
	// the room: reserved before the facts, which may otherwise fill it.
	earlierText := ""
	if len(hc.Earlier) > 0 {
		const earlierTitle = "Said earlier this session, which may bear on this:\n"
		room := left / 5
		var b strings.Builder
		for _, e := range hc.Earlier {
			who := e.SpeakerName
			if who == "" {
				who = e.SpeakerID
			}
			l := fmt.Sprintf("%s (%s): %s\n", who, e.At.UTC().Format("15:04"), strings.TrimSpace(e.Text))
			if len(earlierTitle)+b.Len()+len(l) > room {
				break
			}
			b.WriteString(l)
		}
		if b.Len() > 0 {
			earlierText = earlierTitle + b.String()
		}
	}
	left -= len(earlierText)

	const factsTitle = "What you know:\n"
	var kept []Fact
	var traces []Trace
	var fb strings.Builder
	place := func(f Fact, room int) bool {
		l := "- " + f.Text + "\n"
		need := len(l)
		if fb.Len() == 0 {
			need += len(factsTitle)
		}
		if need > room {
			return false
		}
		if fb.Len() == 0 {
			fb.WriteString(factsTitle)
		}
		fb.WriteString(l)
		left -= need
		kept = append(kept, f)
		return true
	}
	trace := func(f Fact) {
		traces = append(traces, Trace{ID: fmt.Sprintf("f%d", f.Relationship.ID), FactID: f.Relationship.ID,
			Summary: summary(f.Text)})
	}
	var rest []Fact
	for _, f := range facts {
		if !f.Fresh {
			rest = append(rest, f)
		} else if !place(f, left) {
			trace(f)
		}
	}

	// The recent transcript, newest first until its share is used.
	var lines []string
	recentRoom := left * 2 / 5
	used := 0
	const recentTitle = "Said in the last minutes:\n"
	for i := len(hc.Recent) - 1; i >= 0; i-- {
		e := hc.Recent[i]
		who := e.SpeakerName
		if who == "" {
			who = e.SpeakerID
		}
		l := fmt.Sprintf("%s: %s\n", who, strings.TrimSpace(e.Text))
		if used+len(l)+len(recentTitle) > recentRoom {
			break
		}
		lines = append(lines, l)
		used += len(l)
	}
	recentText := ""
	if len(lines) > 0 {
		var b strings.Builder
		b.WriteString(recentTitle)
		for i := len(lines) - 1; i >= 0; i-- {
			b.WriteString(lines[i])
		}
		recentText = b.String()
	}
	left -= len(recentText)

	for _, f := range rest {
		if !place(f, left) {
			trace(f)
		}
	}
	return headText + fb.String() + earlierText + recentText, kept, traces
}

// summary is the first few words of a fact.
func summary(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		s = s[:i]
	}
	words := strings.Fields(s)
	if len(words) > 8 {
		words = append(words[:8], "…")
	}
	return strings.Join(words, " ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	for len(string(r)) > n {
		r = r[:len(r)-1]
	}
	return string(r)
}
