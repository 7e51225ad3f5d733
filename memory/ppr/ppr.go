// Package ppr ranks transcript chunks by Personalized PageRank over a
// campaign's knowledge graph, HippoRAG-style.
//
// A [Graph] holds one campaign's entities and chunks as nodes, and its
// facts (entity–entity) and mentions (entity–chunk) as undirected weighted
// edges, in compact adjacency arrays. It is loaded once from PostgreSQL
// ([Graph.Load]) and then kept current with [Graph.Refresh], which applies
// only what changed: new edges go to a small overlay, removed ones are
// marked dead, and the arrays are compacted only when the overlay has grown
// to a quarter of the graph.
//
// [Graph.Rank] seeds a random walk at the entities a question names and at
// the passages (chunks) that match its words, as HippoRAG 2 does; after
// each step the walker returns to a seed with probability 1-damping. The
// chunks where the walk spends most of its time are those most tightly
// connected to the question's entities and passages, even when they name
// none of them directly: that is how a question reaches across two or
// three hops. A passage seed that mentions no entity (and so is no node of
// the graph) still ranks, as a passage without edges. The push stays
// local to the seeds' neighbourhood (see Config.Tolerance), and
// [Graph.Specificity] says how much naming an entity narrows the answer.
package ppr

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Config tunes the PageRank iteration. Zero fields take the defaults.
type Config struct {
	// Damping is the probability of following an edge rather than
	// returning to a seed (default 0.85).
	Damping float64
	// MaxIterations bounds the rounds of pushes (default 100).
	MaxIterations int
	// Tolerance is the walk mass per unit of weighted degree below which a
	// node's pending mass is no longer spread to its neighbours (default
	// 2e-5): each node's score is within about Tolerance times its degree
	// of the exact PageRank. The default keeps a query local: on a graph
	// of 100k edges (BenchmarkLocality) it touches 15% of the nodes
	// (84% at 1e-6) and returns 99.85% of the exact top 10 chunks.
	// Graphs of fewer than 10,000 nodes are pushed to PreciseTolerance.
	Tolerance float64
}

// Defaults.
const (
	DefaultDamping       = 0.85
	DefaultMaxIterations = 100
	DefaultTolerance     = 2e-5
	// PreciseTolerance is the tolerance of graphs with fewer than
	// 10,000 nodes, whatever Config.Tolerance says, if it is lower.
	PreciseTolerance = 1e-6
)

// localAbove is the number of nodes from which a query keeps to the
// configured tolerance.
const localAbove = 10_000

func (c Config) withDefaults() (Config, error) {
	if c.Damping == 0 {
		c.Damping = DefaultDamping
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.Tolerance == 0 {
		c.Tolerance = DefaultTolerance
	}
	if c.Damping <= 0 || c.Damping >= 1 {
		return c, fmt.Errorf("ppr: damping must be within (0, 1), got %v", c.Damping)
	}
	if c.MaxIterations < 1 {
		return c, fmt.Errorf("ppr: max iterations must be positive, got %d", c.MaxIterations)
	}
	if c.Tolerance < 0 {
		return c, fmt.Errorf("ppr: tolerance must not be negative, got %v", c.Tolerance)
	}
	return c, nil
}

// Source is where a graph is loaded from: a campaign of the PostgreSQL
// store.
type Source interface {
	LoadGraph(ctx context.Context, fn func(postgres.GraphEdge) error) (postgres.GraphCursor, error)
	GraphChanges(ctx context.Context, cur postgres.GraphCursor, fn func(postgres.GraphEdge) error) (postgres.GraphCursor, error)
}

type edge struct {
	a, b int32
	w    float32
	dead bool
}

// Graph is the in-memory retrieval graph of one campaign. It is safe for
// concurrent use: queries share a read lock, refreshes take the write lock.
type Graph struct {
	cfg Config
	src Source

	mu      sync.RWMutex
	cursor  postgres.GraphCursor
	nodes   map[string]int32 // "e:"+entity id or "c:"+chunk id
	keys    []string
	isChunk []bool

	edges []edge
	facts map[int64]int32 // fact id → edge index
	// mentions holds each chunk linked to an entity (the graph's chunks,
	// as the specificity of a name counts them): chunk node → edge indices.
	mentions map[int32][]int32
	deg      []float64 // weighted degree of live edges
	df       []int32   // live chunk links of each entity node
	dead     int

	// Compact adjacency of edges[:built]: node u's neighbours are
	// nbr[off[u]:off[u+1]], with the edge weights in w; a removed edge
	// keeps its entries with weight 0 until the next compaction.
	built int
	off   []int32
	nbr   []int32
	w     []float32
	// pos holds, for each built edge, its two entries in nbr and w, so
	// that removing it zeroes its weight in place.
	pos [][2]int32
	// extra holds the adjacency of edges added since the last build.
	extra map[int32][]int32

	// scratch holds *pushState values for Rank.
	scratch sync.Pool
}

// New returns an empty graph that loads from src.
func New(src Source, cfg Config) (*Graph, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Graph{cfg: c, src: src, nodes: map[string]int32{}, facts: map[int64]int32{},
		mentions: map[int32][]int32{}}
	g.scratch.New = func() any { return new(pushState) }
	g.build()
	return g, nil
}

// Load reads the whole graph from the source, replacing what was loaded.
func (g *Graph) Load(ctx context.Context) error {
	fresh, err := New(g.src, g.cfg)
	if err != nil {
		return err
	}
	// Edges stream straight into the list; the arrays are laid out once at
	// the end.
	fresh.off = nil
	cur, err := g.src.LoadGraph(ctx, func(e postgres.GraphEdge) error { fresh.apply(e); return nil })
	if err != nil {
		return fmt.Errorf("loading the retrieval graph: %w", err)
	}
	fresh.build()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cursor = cur
	g.nodes, g.keys, g.isChunk = fresh.nodes, fresh.keys, fresh.isChunk
	g.edges, g.facts, g.mentions, g.deg, g.df, g.dead = fresh.edges, fresh.facts, fresh.mentions, fresh.deg, fresh.df, fresh.dead
	g.built, g.off, g.nbr, g.w, g.pos, g.extra = fresh.built, fresh.off, fresh.nbr, fresh.w, fresh.pos, fresh.extra
	return nil
}

// Refresh applies what changed in the source since the last Load or
// Refresh, and reports how many edge changes it applied.
func (g *Graph) Refresh(ctx context.Context) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	cur, err := g.src.GraphChanges(ctx, g.cursor, func(e postgres.GraphEdge) error { g.apply(e); n++; return nil })
	if err != nil {
		return n, fmt.Errorf("refreshing the retrieval graph: %w", err)
	}
	g.cursor = cur
	if added := len(g.edges) - g.built; added*4 > g.built+16 || g.dead*4 > len(g.edges)+16 {
		g.compact()
	}
	return n, nil
}

// Stats describes the graph's size.
type Stats struct {
	// Chunks counts the chunks linked to an entity.
	Nodes, Chunks, Edges int
	// Overlay is the number of edges added since the arrays were last
	// compacted.
	Overlay int
}

// Stats returns the graph's size.
func (g *Graph) Stats() Stats {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return Stats{Nodes: len(g.keys), Chunks: len(g.mentions), Edges: len(g.edges) - g.dead, Overlay: len(g.edges) - g.built}
}

// node returns the node of prefix+id ("e:" or "c:" and an id), adding it
// if it is new. The key is built in a stack buffer, so looking up a node
// already held allocates nothing (most edges of a load name known nodes).
func (g *Graph) node(prefix, id string, chunk bool) int32 {
	var buf [64]byte
	k := append(append(buf[:0], prefix...), id...)
	if i, ok := g.nodes[string(k)]; ok {
		return i
	}
	key := string(k)
	i := int32(len(g.keys))
	g.nodes[key] = i
	g.keys = append(g.keys, key)
	g.isChunk = append(g.isChunk, chunk)
	g.deg = append(g.deg, 0)
	g.df = append(g.df, 0)
	return i
}

// apply records one change. Called with the write lock held (or on a
// graph nobody else sees yet).
func (g *Graph) apply(e postgres.GraphEdge) {
	switch e.Kind {
	case postgres.EdgeFact:
		if i, ok := g.facts[e.FactID]; ok {
			g.kill(i)
			delete(g.facts, e.FactID)
		}
		if !e.Removed && e.From != e.To {
			g.facts[e.FactID] = g.add(g.node("e:", e.From, false), g.node("e:", e.To, false), e.Weight)
		}
	case postgres.EdgeMention:
		c := g.node("c:", e.To, true)
		if e.Removed {
			for _, i := range g.mentions[c] {
				g.kill(i)
			}
			delete(g.mentions, c)
			return
		}
		g.mentions[c] = append(g.mentions[c], g.add(g.node("e:", e.From, false), c, e.Weight))
	}
}

func (g *Graph) add(a, b int32, w float64) int32 {
	if w <= 0 {
		w = 1e-3
	}
	i := int32(len(g.edges))
	g.edges = append(g.edges, edge{a: a, b: b, w: float32(w)})
	g.deg[a] += w
	g.deg[b] += w
	if g.isChunk[b] {
		g.df[a]++
	}
	if g.off != nil {
		g.extra[a] = append(g.extra[a], i)
		g.extra[b] = append(g.extra[b], i)
	}
	return i
}

func (g *Graph) kill(i int32) {
	e := &g.edges[i]
	if e.dead {
		return
	}
	e.dead = true
	g.dead++
	if int(i) < g.built {
		p := g.pos[i]
		g.w[p[0]], g.w[p[1]] = 0, 0
	}
	g.deg[e.a] -= float64(e.w)
	g.deg[e.b] -= float64(e.w)
	if g.isChunk[e.b] {
		g.df[e.a]--
	}
	if g.deg[e.a] < 1e-9 {
		g.deg[e.a] = 0
	}
	if g.deg[e.b] < 1e-9 {
		g.deg[e.b] = 0
	}
}

// compact drops dead edges and rebuilds the arrays.
func (g *Graph) compact() {
	live := make([]edge, 0, len(g.edges)-g.dead)
	remap := make([]int32, len(g.edges))
	for i, e := range g.edges {
		if e.dead {
			remap[i] = -1
			continue
		}
		remap[i] = int32(len(live))
		live = append(live, e)
	}
	for id, i := range g.facts {
		g.facts[id] = remap[i]
	}
	for c, is := range g.mentions {
		out := is[:0]
		for _, i := range is {
			if remap[i] >= 0 {
				out = append(out, remap[i])
			}
		}
		g.mentions[c] = out
	}
	g.edges, g.dead = live, 0
	g.build()
}

// build lays out the adjacency arrays for all current edges.
func (g *Graph) build() {
	n := len(g.keys)
	off := make([]int32, n+1)
	for _, e := range g.edges {
		off[e.a+1]++
		off[e.b+1]++
	}
	for i := 1; i <= n; i++ {
		off[i] += off[i-1]
	}
	m := off[n]
	nbr, w := make([]int32, m), make([]float32, m)
	at := make([]int32, n)
	copy(at, off[:n])
	pos := make([][2]int32, len(g.edges))
	for i, e := range g.edges {
		p := at[e.a]
		nbr[p], w[p] = e.b, e.w
		at[e.a]++
		q := at[e.b]
		nbr[q], w[q] = e.a, e.w
		at[e.b]++
		pos[i] = [2]int32{p, q}
		if e.dead {
			w[p], w[q] = 0, 0
		}
	}
	g.off, g.nbr, g.w, g.pos = off, nbr, w, pos
	g.built = len(g.edges)
	g.extra = map[int32][]int32{}
}

// Seed is an entity a question names, with the weight of its match.
type Seed struct {
	EntityID string
	Weight   float64
}

// Result is a node ranked by PageRank mass.
type Result struct {
	// ID is the chunk or entity id.
	ID    string
	Chunk bool
	Score float64
}

// Ranking is the outcome of one query.
type Ranking struct {
	Chunks   []Result
	Entities []Result
	// Iterations is the number of rounds of pushes run.
	Iterations int
	// Touched is the number of nodes the walk reached: how local the
	// query stayed.
	Touched int
}

// Rank runs Personalized PageRank from the seeds (entities; chunk seeds
// may be given as ChunkSeeds) and returns the k best chunks and entities.
// Entity seeds the graph does not contain (or holds without an edge left)
// are ignored; chunk seeds it does not contain (chunks that mention no
// entity) rank as passages without edges. With no seed left the ranking
// is empty.
//
// The ranking is computed by local forward push: each node holds a
// residual of walk mass not yet spread; pushing a node keeps the share
// 1-damping of its residual as its score and hands the rest to its
// neighbours by edge weight. Only nodes whose residual exceeds Tolerance
// times their weighted degree are pushed, so the work depends on the
// seeds' neighbourhood and the tolerance, not on the size of the graph,
// and hubs (whose share per neighbour is small) are pushed only when much
// mass reaches them. Pushes run in rounds of the nodes due; MaxIterations
// bounds the rounds.
func (g *Graph) Rank(seeds []Seed, chunkSeeds []Seed, k int) Ranking {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var start []nodeWeight
	var total float64
	// Chunk seeds the graph does not hold (chunks that mention no entity)
	// take part as passage nodes without edges, numbered after the graph's
	// own: the walk keeps their share of the reset mass, so a passage
	// found by its words alone still ranks, as in HippoRAG 2.
	n := int32(len(g.keys))
	var loose []string
	for _, group := range []struct {
		prefix string
		seeds  []Seed
	}{{"e:", seeds}, {"c:", chunkSeeds}} {
		for _, s := range group.seeds {
			if s.Weight <= 0 {
				continue
			}
			var i int32
			var ok bool
			if group.prefix == "e:" {
				i, ok = g.entity(s.EntityID)
			} else {
				i, ok = g.nodes[group.prefix+s.EntityID]
			}
			if !ok {
				if group.prefix == "e:" {
					continue
				}
				i = n + int32(len(loose))
				loose = append(loose, s.EntityID)
			}
			start = append(start, nodeWeight{i, s.Weight})
			total += s.Weight
		}
	}
	if total == 0 {
		return Ranking{}
	}
	for i := range start {
		start[i].w /= total
	}
	s := g.scratch.Get().(*pushState)
	defer g.scratch.Put(s)
	s.reset(len(g.keys) + len(loose))
	deg := func(u int32) float64 {
		if u >= n {
			return 0
		}
		return g.deg[u]
	}
	d, eps := g.cfg.Damping, g.cfg.Tolerance
	if len(g.keys) < localAbove {
		// A small graph costs little to push through: push it as far as
		// the precise tolerance, so locality never costs a small
		// campaign an answer.
		eps = min(eps, PreciseTolerance)
	}
	due := func(u int32) bool { return s.res[u] > eps*max(deg(u), 1e-9) }
	give := func(u int32, m float64) {
		if !s.seen[u] {
			s.seen[u] = true
			s.touched = append(s.touched, u)
		}
		s.res[u] += m
		if !s.queued[u] && due(u) {
			s.queued[u] = true
			s.next = append(s.next, u)
		}
	}
	for _, x := range start {
		give(x.i, x.w)
	}
	built := int32(len(g.off) - 1) // nodes covered by the arrays
	iters := 0
	iters = g.push(s, start, d, built, iters, give)
	// Mass still waiting at a node would keep at least the share 1-damping
	// there.
	for _, u := range s.touched {
		s.score[u] += (1 - d) * s.res[u]
	}
	return Ranking{Chunks: g.top(s, k, true, loose), Entities: g.top(s, k, false, nil), Iterations: iters, Touched: len(s.touched)}
}

// push runs rounds of pushes of the due nodes in s until none is due or
// the rounds reach MaxIterations, and returns the rounds run so far.
func (g *Graph) push(s *pushState, start []nodeWeight, d float64, built int32, iters int,
	give func(int32, float64)) int {
	n := int32(len(g.keys))
	for len(s.next) > 0 && iters < g.cfg.MaxIterations {
		iters++
		s.cur, s.next = s.next, s.cur[:0]
		var dangling float64
		for _, u := range s.cur {
			s.queued[u] = false
			ru := s.res[u]
			s.res[u] = 0
			s.score[u] += (1 - d) * ru
			if u >= n || g.deg[u] == 0 {
				dangling += d * ru
				continue
			}
			share := d * ru / g.deg[u]
			if u < built {
				lo, hi := g.off[u], g.off[u+1]
				nb := g.nbr[lo:hi]
				ws := g.w[lo:hi]
				ws = ws[:len(nb)]
				for j, v := range nb {
					if ws[j] > 0 {
						give(v, share*float64(ws[j]))
					}
				}
			}
			for _, ei := range g.extra[u] {
				e := g.edges[ei]
				if e.dead {
					continue
				}
				v := e.a
				if v == u {
					v = e.b
				}
				give(v, share*float64(e.w))
			}
		}
		// The mass of nodes without edges goes back to the seeds.
		if dangling > 0 {
			for _, x := range start {
				give(x.i, dangling*x.w)
			}
		}
	}
	return iters
}

type nodeWeight struct {
	i int32
	w float64
}

// pushState is the scratch space of one Rank call, reused across calls.
// Only the entries of touched nodes are ever non-zero.
type pushState struct {
	score, res   []float64
	seen, queued []bool
	touched      []int32
	cur, next    []int32
}

// reset readies s for a graph of n nodes.
func (s *pushState) reset(n int) {
	for _, u := range s.touched {
		if int(u) < len(s.score) {
			s.score[u], s.res[u], s.seen[u], s.queued[u] = 0, 0, false, false
		}
	}
	if len(s.score) != n {
		s.score, s.res = make([]float64, n), make([]float64, n)
		s.seen, s.queued = make([]bool, n), make([]bool, n)
	}
	s.touched, s.cur, s.next = s.touched[:0], s.cur[:0], s.next[:0]
}

// top returns the k best chunks (or entities) the push reached, best
// first; all of them when k <= 0.
func (g *Graph) top(st *pushState, k int, chunks bool, loose []string) []Result {
	better := func(a, b Result) bool {
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		return a.ID < b.ID
	}
	// A bounded min-heap of the k best: worst at the root.
	var h []Result
	down := func(i int) {
		for {
			l, m := 2*i+1, i
			if l < len(h) && better(h[m], h[l]) {
				m = l
			}
			if l+1 < len(h) && better(h[m], h[l+1]) {
				m = l + 1
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for _, i := range st.touched {
		s := st.score[i]
		var id string
		switch {
		case int(i) >= len(g.keys):
			if !chunks {
				continue
			}
			id = loose[int(i)-len(g.keys)]
		case g.isChunk[i] != chunks:
			continue
		default:
			id = g.keys[i][2:]
		}
		if s <= 0 {
			continue
		}
		x := Result{ID: id, Chunk: chunks, Score: s}
		switch {
		case k <= 0 || len(h) < k:
			h = append(h, x)
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if !better(h[p], h[j]) {
					break
				}
				h[p], h[j] = h[j], h[p]
				j = p
			}
		case better(x, h[0]):
			h[0] = x
			down(0)
		}
	}
	sort.Slice(h, func(i, j int) bool { return better(h[i], h[j]) })
	return h
}

// Degree is the weighted number of edges of an entity (0 when the graph
// does not hold it): how many facts and chunks it is tied to.
func (g *Graph) Degree(entityID string) float64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if i, ok := g.nodes["e:"+entityID]; ok {
		return g.deg[i]
	}
	return 0
}

// entity returns the node of an entity the graph holds: one with an edge
// left. A node whose edges a refresh removed is not held, as a load of the
// same graph would not hold it. Called with the lock held.
func (g *Graph) entity(id string) (int32, bool) {
	i, ok := g.nodes["e:"+id]
	return i, ok && g.deg[i] > 0
}

// Specificity is how much naming an entity says about which chunk is
// meant, from 1 (linked to no chunk) towards 0 (linked to every chunk):
// its inverse document frequency over the graph's chunks, as full-text
// search weighs a word (log(1 + (N - df + 0.5)/(df + 0.5))), divided by
// that of an entity no chunk mentions. An entity the graph does not hold
// (or holds without an edge left) has specificity 0.
func (g *Graph) Specificity(entityID string) float64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	i, ok := g.entity(entityID)
	if !ok {
		return 0
	}
	n, df := float64(len(g.mentions)), float64(g.df[i])
	return math.Log(1+(n-df+0.5)/(df+0.5)) / math.Log(1+(n+0.5)/0.5)
}

// ChunkEntities returns the entities a chunk of the graph is linked to
// (none for a chunk the graph does not hold).
func (g *Graph) ChunkEntities(chunkID string) []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	c, ok := g.nodes["c:"+chunkID]
	if !ok {
		return nil
	}
	var out []string
	for _, i := range g.mentions[c] {
		if e := g.edges[i]; !e.dead {
			out = append(out, g.keys[e.a][2:])
		}
	}
	return out
}
