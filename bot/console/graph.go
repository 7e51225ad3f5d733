package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/npc"
)

// graphNode and graphEdge are the graph page's JSON: no attributes, which
// are fetched per entity.
type graphNode struct {
	ID      string   `json:"id"`
	Name    string   `json:"name"`
	Type    string   `json:"type"`
	Aliases []string `json:"aliases,omitempty"`
	// Hops is the distance from the focus in a local view.
	Hops int `json:"hops,omitempty"`
}

type graphEdge struct {
	ID      int64  `json:"id"`
	Source  string `json:"s"`
	Target  string `json:"t"`
	Type    string `json:"type"`
	Status  string `json:"status"`
	Secret  bool   `json:"secret,omitempty"`
	Session string `json:"session,omitempty"`
}

type graphData struct {
	Nodes []graphNode `json:"nodes"`
	Edges []graphEdge `json:"edges"`
	// Focus and Depth describe a local view (Focus empty: the whole
	// graph); Total is how many entities the filters let through before
	// the local view cut them to Depth steps around Focus.
	Focus string `json:"focus,omitempty"`
	Depth int    `json:"depth,omitempty"`
	Total int    `json:"total"`
}

// Local views of the graph page.
const (
	// localAbove is the size above which the graph page opens on a local
	// view (around the best-connected entity) rather than the whole
	// graph: a thousand entities at once is a hairball, and slow to draw.
	localAbove = 300
	// defaultDepth and maxDepth bound a local view's steps.
	defaultDepth = 2
	maxDepth     = 4
)

// campaignSnapshot opens the request's campaign and its graph snapshot
// (graphSnapshot).
func (s *Server) campaignSnapshot(ctx context.Context) (*access.Campaign, *snapshot, error) {
	camp, err := s.openCampaign(ctx)
	if err != nil {
		return nil, nil, err
	}
	sn, err := s.graphSnapshot(ctx, camp)
	return camp, sn, err
}

// depths are the choices of a local view's depth.
func depths() []int {
	out := make([]int, maxDepth)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// parseDepth reads a local view's depth: "all" (or a focus-less request)
// is the whole graph, otherwise 1..maxDepth, defaultDepth when absent.
func parseDepth(v string) (int, error) {
	switch v {
	case "":
		return defaultDepth, nil
	case "all":
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxDepth {
		return 0, fmt.Errorf("%w: depth must be 1 to %d or \"all\", got %q", memory.ErrInvalid, maxDepth, v)
	}
	return n, nil
}

func (s *Server) graphPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, sn, err := s.campaignSnapshot(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	ents := sn.entities
	picks := sn.pickers()
	npcs := picks.npcOptions
	sessions, err := pickableSessions(ctx, camp)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if !sessionOf(ctx).DM {
		npcs = "" // what an NPC can see is the DM's business
	}
	// /graph/{id} is the entity's page: the graph around it, its panel open.
	focus, title := r.PathValue("id"), "Graph"
	if focus != "" {
		e, ok := sn.byID.lookup(focus)
		if !ok {
			s.failErr(w, r, fmt.Errorf("entity %q: %w", focus, memory.ErrNotFound))
			return
		}
		title = e.Name
	}
	s.render(w, r, http.StatusOK, "graph.html", page{Title: title, Nav: "graph", Data: map[string]any{
		"Types": picks.types, "NPCs": npcs, "Sessions": sessions, "Count": len(ents), "Focus": focus,
		"Depths": depths(), "DefaultDepth": defaultDepth, "LocalAbove": localAbove}})
}

// graphJSON returns the entities and facts of the graph view, filtered by
// type, by what an NPC can see (DM only) and by the session a fact was
// established in. A player gets what the store shows a player: no secret
// fact, no fact waiting for review.
func (s *Server) graphJSON(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, sn, err := s.campaignSnapshot(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	q := r.URL.Query()
	dm := sessionOf(ctx).DM
	focus := q.Get("focus")
	depth, err := parseDepth(q.Get("depth"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	if focus != "" {
		if _, ok := sn.byID.lookup(focus); !ok {
			s.failErr(w, r, fmt.Errorf("entity %q: %w", focus, memory.ErrNotFound))
			return
		}
	}
	if depth == 0 {
		focus = ""
	}
	// No focus and no depth asked for: the whole graph, unless it is large;
	// then the view around its best-connected entity.
	auto := focus == "" && q.Get("depth") == ""
	f := filterOf(q)
	key := fmt.Sprintf("%t\x00%s\x00%s\x00%d", dm, f.key(), focus, depth)
	body, ok := sn.cachedJSON(key)
	if !ok {
		var d graphData
		whole := f.whole()
		if whole && auto && len(sn.entities) > localAbove {
			focus = sn.hub()
		}
		if whole && focus != "" {
			// The view around an entity of the unfiltered graph is read
			// from the snapshot's index of facts by entity: at the 100k
			// bench scale, listing the whole graph to cut it took most of
			// a view's time after each edit.
			d = sn.around(focus, depth, dm)
		} else {
			if d, err = loadGraph(ctx, camp.Graph(), sn, dm, f.typ, f.npc, f.session); err != nil {
				s.failErr(w, r, err)
				return
			}
			if auto && d.Total > localAbove {
				focus = d.hub()
			}
			if focus != "" {
				d = d.around(focus, depth)
			}
		}
		if body, err = json.Marshal(d); err != nil {
			s.failErr(w, r, err)
			return
		}
		sn.storeJSON(key, body)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
}

// graphFilter is the filters of a graph view (and of its search): an
// entity type, an NPC whose view it is (the DM's only), the session a fact
// was established in; empty: none.
type graphFilter struct{ typ, npc, session string }

func filterOf(q url.Values) graphFilter {
	return graphFilter{typ: q.Get("type"), npc: q.Get("npc"), session: q.Get("session")}
}

// whole reports whether the filter lets the whole graph through.
func (f graphFilter) whole() bool { return f == graphFilter{} }

// key identifies the filter in a snapshot's caches.
func (f graphFilter) key() string { return f.typ + "\x00" + f.npc + "\x00" + f.session }

// maxFound is how many entities the graph page's search lists.
const maxFound = 100

// found is the graph page's search: the entities found, and whether there
// are more.
type found struct {
	Nodes []graphNode `json:"nodes"`
	More  bool        `json:"more"`
}

// graphFind lists the entities the graph view's filters (type, npc,
// session, as /api/graph reads them) let through whose name or an alias
// holds q, without case: the first maxFound by name, all of them when q
// is empty. The graph page's search asks it, so that an entity outside a
// local view is found without the view listing every entity of the
// campaign (5 MB at the 100k bench scale, encoded after each edit).
func (s *Server) graphFind(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	camp, sn, err := s.campaignSnapshot(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	q := r.URL.Query()
	dm := sessionOf(ctx).DM
	text := strings.ToLower(strings.TrimSpace(q.Get("q")))
	out := found{Nodes: []graphNode{}}
	// add lists n, a match, and reports whether to go on.
	add := func(n graphNode) bool {
		if len(out.Nodes) == maxFound {
			out.More = true
			return false
		}
		out.Nodes = append(out.Nodes, n)
		return true
	}
	if f := filterOf(q); f.whole() {
		for _, e := range sn.entities {
			if nameHolds(e.Name, e.Aliases, text) && !add(newGraphNode(e)) {
				break
			}
		}
	} else {
		nodes, err := sn.filtered(fmt.Sprintf("%t\x00%s", dm, f.key()), func() ([]graphNode, error) {
			d, err := loadGraph(ctx, camp.Graph(), sn, dm, f.typ, f.npc, f.session)
			return d.Nodes, err
		})
		if err != nil {
			s.failErr(w, r, err)
			return
		}
		for _, n := range nodes {
			if nameHolds(n.Name, n.Aliases, text) && !add(n) {
				break
			}
		}
	}
	writeJSON(w, out)
}

// nameHolds reports whether name or one of aliases holds text (lower
// case), or text is empty.
func nameHolds(name string, aliases []string, text string) bool {
	if text == "" || strings.Contains(strings.ToLower(name), text) {
		return true
	}
	return slices.ContainsFunc(aliases, func(a string) bool { return strings.Contains(strings.ToLower(a), text) })
}

func loadGraph(ctx context.Context, g *access.Graph, sn *snapshot, dm bool, typ, npcID, session string) (graphData, error) {
	var ents []*memory.Entity
	var facts []*memory.Relationship
	if npcID != "" && dm {
		e, err := g.Entity(ctx, npcID)
		if err != nil {
			return graphData{}, err
		}
		scope := memory.VisibilityScope{RelTypes: npc.PersonaFromEntity(e).KnowledgeScope}
		es, fs, err := g.VisibleSubgraph(ctx, npcID, scope)
		if err != nil {
			return graphData{}, err
		}
		ents, facts = pointers(es), pointers(fs)
	} else {
		ents = sn.entities
		facts = make([]*memory.Relationship, 0, len(sn.facts))
		for _, f := range sn.facts {
			if f.Status != memory.StatusRejected {
				facts = append(facts, &f.Relationship)
			}
		}
	}
	// The entities kept: of the type asked for, or all (then the
	// snapshot's index answers, not a map of 100,000 built per view).
	var keep func(id string) bool
	if typ == "" && npcID == "" {
		keep = func(id string) bool { _, ok := sn.byID.lookup(id); return ok }
	} else {
		kept := make(map[string]bool, len(ents))
		for _, e := range ents {
			if typ == "" || e.Type == typ {
				kept[e.ID] = true
			}
		}
		keep = func(id string) bool { return kept[id] }
	}
	d := graphData{Nodes: make([]graphNode, 0, len(ents)), Edges: make([]graphEdge, 0, len(facts))}
	var touched map[string]bool
	if session != "" {
		touched = map[string]bool{}
	}
	for _, f := range facts {
		if !keep(f.SourceID) || !keep(f.TargetID) || (session != "" && f.Provenance.SessionID != session) {
			continue
		}
		if touched != nil {
			touched[f.SourceID], touched[f.TargetID] = true, true
		}
		d.Edges = append(d.Edges, newGraphEdge(f, dm))
	}
	for _, e := range ents {
		if keep(e.ID) && (touched == nil || touched[e.ID]) {
			d.Nodes = append(d.Nodes, newGraphNode(e))
		}
	}
	slices.SortFunc(d.Edges, func(a, b graphEdge) int { return cmp.Compare(a.ID, b.ID) })
	d.Total = len(d.Nodes)
	return d, nil
}

// newGraphNode is e as the graph's JSON lists it.
func newGraphNode(e *memory.Entity) graphNode {
	return graphNode{ID: e.ID, Name: e.Name, Type: e.Type, Aliases: e.Aliases}
}

// newGraphEdge is f as the graph's JSON lists it (secret marked for the
// DM only).
func newGraphEdge(f *memory.Relationship, dm bool) graphEdge {
	return graphEdge{ID: f.ID, Source: f.SourceID, Target: f.TargetID, Type: f.Type,
		Status: string(f.Status), Secret: dm && memory.IsSecret(f.Attributes), Session: f.Provenance.SessionID}
}

// hub is the entity with the most facts (the first by id on a tie).
func (d graphData) hub() string {
	deg := make(map[string]int, len(d.Nodes))
	for _, e := range d.Edges {
		deg[e.Source]++
		deg[e.Target]++
	}
	best := ""
	for _, n := range d.Nodes {
		if best == "" || deg[n.ID] > deg[best] || (deg[n.ID] == deg[best] && n.ID < best) {
			best = n.ID
		}
	}
	return best
}

// around cuts d to the entities within depth facts of focus (either
// direction) and the facts between them; nothing when the filters left
// the focus out.
func (d graphData) around(focus string, depth int) graphData {
	adj := make(map[string][]string, len(d.Nodes))
	for _, e := range d.Edges {
		adj[e.Source] = append(adj[e.Source], e.Target)
		adj[e.Target] = append(adj[e.Target], e.Source)
	}
	hops := map[string]int{focus: 0}
	frontier := []string{focus}
	for h := 1; h <= depth && len(frontier) > 0; h++ {
		var next []string
		for _, id := range frontier {
			for _, n := range adj[id] {
				if _, seen := hops[n]; !seen {
					hops[n] = h
					next = append(next, n)
				}
			}
		}
		frontier = next
	}
	out := graphData{Nodes: []graphNode{}, Edges: []graphEdge{}, Focus: focus, Depth: depth, Total: d.Total}
	for _, n := range d.Nodes {
		if h, ok := hops[n.ID]; ok {
			n.Hops = h
			out.Nodes = append(out.Nodes, n)
		}
	}
	for _, e := range d.Edges {
		_, a := hops[e.Source]
		_, b := hops[e.Target]
		if a && b {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// holds reports whether the unfiltered graph view draws f: a fact of the
// snapshot that is not rejected, between two of its entities (as
// loadGraph keeps them).
func (sn *snapshot) holds(f *access.FactWithNames) bool {
	return f.Status != memory.StatusRejected && sn.byID.get(f.SourceID) != nil && sn.byID.get(f.TargetID) != nil
}

// hub is the best-connected entity of the unfiltered graph (graphData.hub
// of the whole view: the most facts, the first by id on a tie), found once
// per snapshot, from every fact unless a refresh carried it over.
func (sn *snapshot) hub() string {
	sn.hubOnce.Do(func() {
		deg := make(map[string]int, sn.byEntity.len())
		for _, f := range sn.facts {
			if sn.holds(f) {
				deg[f.SourceID]++
				deg[f.TargetID]++
			}
		}
		for _, e := range sn.entities {
			if sn.hubID == "" || deg[e.ID] > deg[sn.hubID] || (deg[e.ID] == deg[sn.hubID] && e.ID < sn.hubID) {
				sn.hubID = e.ID
			}
		}
		sn.hubDone.Store(true)
	})
	return sn.hubID
}

// nextHub carries old's hub over to sn, a refresh of it in which only the
// entities touched lists may have gained or lost facts in the graph view:
// every other entity lost to old's hub before and still does, so the hub
// is the best of old's and those. When old's hub is among them, or old's
// was never found, sn's is found from every fact when first asked for.
func (sn *snapshot) nextHub(old *snapshot, touched func(yield func(string) bool)) {
	if !old.hubDone.Load() {
		return
	}
	hub := old.hub()
	if sn.byID.get(hub) == nil {
		return
	}
	best, bestDeg := hub, sn.degree(hub)
	for id := range touched {
		if id == hub {
			return
		}
		if sn.byID.get(id) == nil {
			continue
		}
		if d := sn.degree(id); d > bestDeg || (d == bestDeg && id < best) {
			best, bestDeg = id, d
		}
	}
	sn.hubOnce.Do(func() {
		sn.hubID = best
		sn.hubDone.Store(true)
	})
}

// degree is how many facts the unfiltered view draws at id, a fact from
// id to itself twice (as graphData.hub counts).
func (sn *snapshot) degree(id string) int {
	n := 0
	for _, f := range sn.byEntity.get(id) {
		if sn.holds(f) {
			n++
			if f.SourceID == f.TargetID {
				n++
			}
		}
	}
	return n
}

// around is the unfiltered graph's view of depth steps around focus, the
// same as loadGraph's whole view cut by graphData.around, walked through
// the snapshot's index of facts by entity: it reads the neighbourhood, not
// the campaign.
func (sn *snapshot) around(focus string, depth int, dm bool) graphData {
	hops := map[string]int{focus: 0}
	frontier := []string{focus}
	for h := 1; h <= depth && len(frontier) > 0; h++ {
		var next []string
		for _, id := range frontier {
			for _, f := range sn.byEntity.get(id) {
				if !sn.holds(f) {
					continue
				}
				n := f.TargetID
				if n == id {
					n = f.SourceID
				}
				if _, seen := hops[n]; !seen {
					hops[n] = h
					next = append(next, n)
				}
			}
		}
		frontier = next
	}
	out := graphData{Nodes: make([]graphNode, 0, len(hops)), Edges: []graphEdge{}, Focus: focus, Depth: depth,
		Total: len(sn.entities)}
	ents := make([]*memory.Entity, 0, len(hops))
	for id := range hops {
		// A focus the snapshot does not hold (callers check it first) is
		// no node, rather than a nil entity.
		if e := sn.byID.get(id); e != nil {
			ents = append(ents, e)
		}
	}
	slices.SortFunc(ents, byName)
	for _, e := range ents {
		n := newGraphNode(e)
		n.Hops = hops[e.ID]
		out.Nodes = append(out.Nodes, n)
		// Each fact once: from its source's list, which holds it.
		for _, f := range sn.byEntity.get(e.ID) {
			if f.SourceID != e.ID || !sn.holds(f) {
				continue
			}
			if _, ok := hops[f.TargetID]; ok {
				out.Edges = append(out.Edges, newGraphEdge(&f.Relationship, dm))
			}
		}
	}
	slices.SortFunc(out.Edges, func(a, b graphEdge) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// entityFact is one fact of an entity's history.
type entityFact struct {
	ID         int64  `json:"id"`
	Source     string `json:"source"`
	Target     string `json:"target"`
	Type       string `json:"type"`
	Status     string `json:"status"`
	Session    string `json:"session,omitempty"`
	Until      string `json:"until,omitempty"`
	Secret     bool   `json:"secret,omitempty"`
	Provenance string `json:"provenance"`
}

type mention struct {
	Line    int64  `json:"line"`
	Session string `json:"session"`
	At      string `json:"at"`
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

type entityInfo struct {
	ID         string       `json:"id"`
	Name       string       `json:"name"`
	Type       string       `json:"type"`
	Aliases    []string     `json:"aliases"`
	Attributes []attr       `json:"attributes"`
	Facts      []entityFact `json:"facts"`
	Mentions   []mention    `json:"mentions"`
}

// maxEntityFacts bounds an entity's fact history.
const maxEntityFacts = 500

// entityJSON returns an entity's attributes, its facts in the order they
// were established (with the session they stopped holding in), and the
// transcript lines that mention it.
func (s *Server) entityJSON(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	dm := sessionOf(ctx).DM
	camp, sn, err := s.campaignSnapshot(ctx)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	e, ok := sn.byID.lookup(r.PathValue("id"))
	if !ok {
		s.failErr(w, r, fmt.Errorf("entity %q: %w", r.PathValue("id"), memory.ErrNotFound))
		return
	}
	info := entityInfo{ID: e.ID, Name: e.Name, Type: e.Type, Aliases: e.Aliases, Attributes: attrs(*e),
		Facts: []entityFact{}, Mentions: []mention{}}
	if info.Aliases == nil {
		info.Aliases = []string{}
	}
	if info.Attributes == nil {
		info.Attributes = []attr{}
	}
	for _, f := range sn.byEntity.get(e.ID) {
		if len(info.Facts) == maxEntityFacts {
			break
		}
		info.Facts = append(info.Facts, entityFact{ID: f.ID, Source: f.SourceName, Target: f.TargetName, Type: f.Type,
			Status: string(f.Status), Session: f.Provenance.SessionID, Until: f.ValidUntilSession,
			Secret: dm && memory.IsSecret(f.Attributes), Provenance: provenance(f.Relationship)})
	}
	sort.SliceStable(info.Facts, func(a, b int) bool {
		if info.Facts[a].Session != info.Facts[b].Session {
			return info.Facts[a].Session < info.Facts[b].Session
		}
		return info.Facts[a].ID < info.Facts[b].ID
	})
	hits, err := camp.Sessions().Search(ctx, `"`+e.Name+`"`, memory.SearchOpts{Limit: 10})
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	for _, h := range hits {
		if h.Entry.NonCanon {
			continue
		}
		info.Mentions = append(info.Mentions, mention{Line: h.Entry.ID, Session: h.Entry.SessionID,
			At: h.Entry.At.UTC().Format("2006-01-02 15:04"), Speaker: h.Entry.SpeakerName, Text: h.Entry.Text})
	}
	writeJSON(w, info)
}
