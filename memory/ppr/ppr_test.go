package ppr

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// world: a chain a—b—c—d of facts, an island z, and chunks mentioning
// them. Chunk k3 names only d, three hops from a.
func world(t *testing.T) *postgres.Campaign {
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, store, "ppr")
	addNPCs(ctx, t, c, "a", "b", "c", "d", "z", "y")
	for _, f := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"z", "y"}} {
		_, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: f[0], TargetID: f[1], Type: "KNOWS",
			Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceStated}})
		check(t, err)
	}
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k1", SessionID: "s1", Content: "a and b", EntityIDs: []string{"a", "b"}, StartAt: t0},
		{ID: "k2", SessionID: "s1", Content: "c", EntityIDs: []string{"c"}, StartAt: t0},
		{ID: "k3", SessionID: "s1", Content: "d", EntityIDs: []string{"d"}, StartAt: t0},
		{ID: "k9", SessionID: "s1", Content: "z", EntityIDs: []string{"z", "y"}, StartAt: t0},
	}))
	return c
}

// addNPCs writes an NPC of each id to c, named "N" and the id.
func addNPCs(ctx context.Context, t *testing.T, c *postgres.Campaign, ids ...string) {
	t.Helper()
	var es []memory.Entity
	for _, id := range ids {
		es = append(es, memory.Entity{ID: id, Type: memory.EntityNPC, Name: "N" + id})
	}
	check(t, c.Graph().UpsertEntities(ctx, es))
}

// reference computes PageRank densely from the edge list, for comparison.
func reference(edges []postgres.GraphEdge, seeds map[string]float64, d float64) map[string]float64 {
	idx := map[string]int{}
	var keys []string
	node := func(k string) int {
		if i, ok := idx[k]; ok {
			return i
		}
		idx[k] = len(keys)
		keys = append(keys, k)
		return idx[k]
	}
	type e struct {
		a, b int
		w    float64
	}
	var es []e
	for _, x := range edges {
		if x.Kind == postgres.EdgeFact {
			es = append(es, e{node("e:" + x.From), node("e:" + x.To), x.Weight})
		} else {
			es = append(es, e{node("e:" + x.From), node("c:" + x.To), x.Weight})
		}
	}
	n := len(keys)
	deg := make([]float64, n)
	for _, x := range es {
		deg[x.a] += x.w
		deg[x.b] += x.w
	}
	p := make([]float64, n)
	var tot float64
	for id, w := range seeds {
		p[idx["e:"+id]] = w
		tot += w
	}
	for i := range p {
		p[i] /= tot
	}
	r := append([]float64(nil), p...)
	for range 2000 {
		next := make([]float64, n)
		for _, x := range es {
			next[x.b] += d * r[x.a] * x.w / deg[x.a]
			next[x.a] += d * r[x.b] * x.w / deg[x.b]
		}
		for i := range next {
			next[i] += (1 - d) * p[i]
		}
		r = next
	}
	out := map[string]float64{}
	for i, k := range keys {
		out[k] = r[i]
	}
	return out
}

func TestRankMatchesReference(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	g, err := New(c, Config{Tolerance: 1e-12, MaxIterations: 1000})
	check(t, err)
	check(t, g.Load(ctx))
	var edges []postgres.GraphEdge
	_, err = c.LoadGraph(ctx, func(e postgres.GraphEdge) error { edges = append(edges, e); return nil })
	check(t, err)
	seeds := map[string]float64{"a": 1, "c": 0.5}
	want := reference(edges, seeds, DefaultDamping)
	got := g.Rank([]Seed{{"a", 1}, {"c", 0.5}}, nil, 0)
	if len(got.Chunks) != 3 {
		t.Fatalf("chunks reached: %v (the island's chunk must get no mass)", got.Chunks)
	}
	for _, list := range [][]Result{got.Chunks, got.Entities} {
		for _, r := range list {
			key := "e:" + r.ID
			if r.Chunk {
				key = "c:" + r.ID
			}
			if math.Abs(r.Score-want[key]) > 1e-6*want[key] { // weights are stored as float32
				t.Errorf("%s: %.12f, reference %.12f", key, r.Score, want[key])
			}
		}
	}
}

func TestRankReachesThreeHops(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	g, err := New(c, Config{})
	check(t, err)
	check(t, g.Load(ctx))
	r := g.Rank([]Seed{{"a", 1}}, nil, 10)
	if len(r.Chunks) != 3 || r.Chunks[0].ID != "k1" || r.Chunks[2].ID != "k3" {
		t.Fatalf("ranking from a: %+v", r.Chunks)
	}
	if r.Iterations < 2 || r.Iterations > DefaultMaxIterations {
		t.Errorf("iterations %d", r.Iterations)
	}
	if got := g.Rank([]Seed{{"nobody", 1}}, nil, 10); len(got.Chunks) != 0 {
		t.Errorf("unknown seed ranked %v", got.Chunks)
	}
	if s := g.Stats(); s.Nodes != 10 || s.Chunks != 4 || s.Edges != 4+6 {
		t.Errorf("stats %+v", s)
	}
}

func TestRefreshMatchesReload(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	g, err := New(c, Config{Tolerance: 1e-12, MaxIterations: 500})
	check(t, err)
	check(t, g.Load(ctx))

	// Connect the island, drop a link of the chain, re-link a chunk.
	_, err = c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "d", TargetID: "z", Type: "ALLIED_WITH",
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}})
	check(t, err)
	rels, err := c.Graph().Relationships(ctx, "b", memory.TraversalOpts{Direction: memory.Outgoing})
	check(t, err)
	_, err = c.Graph().RejectFact(ctx, rels[0].ID)
	check(t, err)
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k2", SessionID: "s1", Content: "c and a", EntityIDs: []string{"c", "a"}, StartAt: t0}}))

	n, err := g.Refresh(ctx)
	check(t, err)
	if n == 0 {
		t.Fatal("refresh applied nothing")
	}
	fresh, _ := New(c, Config{Tolerance: 1e-12, MaxIterations: 500})
	check(t, fresh.Load(ctx))
	a := g.Rank([]Seed{{"a", 1}}, nil, 0)
	b := fresh.Rank([]Seed{{"a", 1}}, nil, 0)
	if len(a.Chunks) != len(b.Chunks) {
		t.Fatalf("refreshed %v, reloaded %v", a.Chunks, b.Chunks)
	}
	for i := range a.Chunks {
		if a.Chunks[i].ID != b.Chunks[i].ID || math.Abs(a.Chunks[i].Score-b.Chunks[i].Score) > 1e-6*b.Chunks[i].Score {
			t.Errorf("chunk %d: refreshed %+v, reloaded %+v", i, a.Chunks[i], b.Chunks[i])
		}
	}
	if n, err := g.Refresh(ctx); err != nil || n != 0 {
		t.Errorf("second refresh applied %d changes, %v; want none", n, err)
	}
}

// The chunks one transaction writes share its timestamp: the cursor's id
// keeps a refresh from reading them again.
func TestRefreshWithoutWritesAppliesNothing(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	g, err := New(c, Config{})
	check(t, err)
	check(t, g.Load(ctx))
	for i := range 2 {
		if n, err := g.Refresh(ctx); err != nil || n != 0 {
			t.Fatalf("refresh %d without writes applied %d changes, %v", i, n, err)
		}
	}
	// Two chunks in one transaction, then nothing.
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k4", SessionID: "s1", Content: "a again", EntityIDs: []string{"a"}, StartAt: t0},
		{ID: "k5", SessionID: "s1", Content: "b again", EntityIDs: []string{"b"}, StartAt: t0}}))
	if n, err := g.Refresh(ctx); err != nil || n != 4 {
		t.Fatalf("refresh after two chunks applied %d changes, %v; want 2 removals and 2 links", n, err)
	}
	if n, err := g.Refresh(ctx); err != nil || n != 0 {
		t.Fatalf("refresh after that applied %d changes, %v", n, err)
	}
	if s := g.Stats(); s.Chunks != 6 {
		t.Errorf("stats %+v, want 6 chunks", s)
	}
}

func TestLooseChunkSeedsRank(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	g, err := New(c, Config{Tolerance: 1e-9})
	check(t, err)
	check(t, g.Load(ctx))
	// "lonely" links no entity: the graph does not hold it, yet as a seed
	// it ranks: alone, and beside an entity seed above the chunks that
	// seed reaches only by a long walk.
	if rk := g.Rank(nil, []Seed{{"lonely", 1}}, 0); len(rk.Chunks) != 1 || rk.Chunks[0].ID != "lonely" || rk.Chunks[0].Score <= 0 {
		t.Fatalf("alone: %+v", rk.Chunks)
	}
	rk := g.Rank([]Seed{{"a", 1}}, []Seed{{"lonely", 1}}, 0)
	var ids []string
	for _, x := range rk.Chunks {
		ids = append(ids, x.ID)
	}
	if fmt.Sprint(ids) != "[k1 lonely k2 k3]" {
		t.Fatalf("chunks %v, want [k1 lonely k2 k3]", ids)
	}
	// An unknown entity seed is still ignored.
	if rk := g.Rank([]Seed{{"nobody", 1}}, nil, 0); len(rk.Chunks) != 0 {
		t.Errorf("unknown entity ranked %v", rk.Chunks)
	}
}

func TestSpecificity(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	g, err := New(c, Config{})
	check(t, err)
	check(t, g.Load(ctx))
	// 4 chunks; a is in one, and a hub in all four says nothing.
	check(t, c.Graph().UpsertEntities(ctx, []memory.Entity{{ID: "hub", Type: memory.EntityPlayer, Name: "Hub"}}))
	for _, id := range []string{"k1", "k2", "k3", "k9"} {
		cs, err := c.Index().ChunksByID(ctx, []string{id})
		check(t, err)
		cs[0].EntityIDs = append(cs[0].EntityIDs, "hub")
		check(t, c.Index().IndexChunks(ctx, cs))
	}
	_, err = g.Refresh(ctx)
	check(t, err)
	a, hub, none := g.Specificity("a"), g.Specificity("hub"), g.Specificity("nobody")
	if !(a > 0.3 && a < 1) || hub > 0.1 || none != 0 {
		t.Errorf("specificity: a %.3f, hub %.3f, unknown %.3f", a, hub, none)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{{Damping: 1}, {Damping: -0.5}, {MaxIterations: -1}, {Tolerance: -1}} {
		if _, err := New(nil, c); err == nil {
			t.Errorf("New(%+v): no error", c)
		}
	}
}

func TestChunkEntities(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	g, err := New(c, Config{})
	check(t, err)
	check(t, g.Load(ctx))
	for _, tc := range []struct{ chunk, want string }{{"k1", "[a b]"}, {"k3", "[d]"}, {"nope", "[]"}} {
		got := g.ChunkEntities(tc.chunk)
		slices.Sort(got)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%s: %v, want %s", tc.chunk, got, tc.want)
		}
	}
	// Re-linked, the chunk's old links are gone.
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "k1", SessionID: "s1", Content: "c", EntityIDs: []string{"c"}, StartAt: t0}}))
	_, err = g.Refresh(ctx)
	check(t, err)
	if got := g.ChunkEntities("k1"); fmt.Sprint(got) != "[c]" {
		t.Errorf("after re-linking: %v", got)
	}
}

// TestRefreshFollowsLinksMovedOrDeleted: a DM's merge moves a duplicate's
// chunk links to the entity it is merged into, and deleting an entity or
// a session's chunks takes their links away, without re-indexing any
// chunk. A resident graph (an NPC's, the MCP server's) must see them on
// its next refresh as a fresh load does, or a question naming the merged
// entity never reaches the duplicate's lines until the process restarts.
func TestRefreshFollowsLinksMovedOrDeleted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		write func(ctx context.Context, c *postgres.Campaign) error
		seed  string
	}{
		{"merge", func(ctx context.Context, c *postgres.Campaign) error {
			_, err := c.Graph().MergeEntities(ctx, "d", "z", "")
			return err
		}, "z"},
		{"delete an entity", func(ctx context.Context, c *postgres.Campaign) error {
			return c.Graph().DeleteEntity(ctx, "b")
		}, "a"},
		{"delete a chunk", func(ctx context.Context, c *postgres.Campaign) error {
			// The session re-chunked without k2.
			_, err := c.Index().DeleteSessionChunks(ctx, "s1", []string{"k1", "k3", "k9"})
			return err
		}, "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := world(t)
			ctx := ctxT(t)
			g, err := New(c, Config{Tolerance: 1e-12, MaxIterations: 500})
			check(t, err)
			check(t, g.Load(ctx))
			check(t, tc.write(ctx, c))
			_, err = g.Refresh(ctx)
			check(t, err)
			sameAsFresh(t, ctx, tc.name, g, c, tc.seed)
		})
	}
}

// liveEdges lists a graph's live edges: "m:entity>chunk" for mentions and
// "f:id:from-to" for facts, sorted.
func liveEdges(g *Graph) []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []string
	for c, is := range g.mentions {
		for _, i := range is {
			e := g.edges[i]
			if e.dead {
				continue
			}
			if e.b != c {
				out = append(out, fmt.Sprintf("BAD mention %d of chunk %s", i, g.keys[c]))
			}
			out = append(out, "m:"+g.keys[e.a][2:]+">"+g.keys[e.b][2:])
		}
	}
	for id, i := range g.facts {
		e := g.edges[i]
		if e.dead {
			out = append(out, fmt.Sprintf("BAD fact %d dead", id))
			continue
		}
		out = append(out, fmt.Sprintf("f:%d:%s-%s", id, g.keys[e.a][2:], g.keys[e.b][2:]))
	}
	live := 0
	for _, e := range g.edges {
		if !e.dead {
			live++
		}
	}
	if live != len(out) {
		out = append(out, fmt.Sprintf("BAD %d live edges, %d indexed", live, len(out)))
	}
	slices.Sort(out)
	return out
}

// sameAsFresh loads a fresh graph from src and compares it with g: edges,
// chunk count, the specificity of every entity the fresh graph holds and
// a ranking from each of seeds.
func sameAsFresh(t *testing.T, ctx context.Context, what string, g *Graph, src Source, seeds ...string) {
	t.Helper()
	fresh, err := New(src, g.cfg)
	check(t, err)
	check(t, fresh.Load(ctx))
	a, b := liveEdges(g), liveEdges(fresh)
	if !slices.Equal(a, b) {
		t.Errorf("%s: refreshed edges differ from a fresh load\n  only refreshed: %v\n  only fresh:     %v", what, minus(a, b), minus(b, a))
	}
	if s, f := g.Stats(), fresh.Stats(); s.Edges != f.Edges || s.Chunks != f.Chunks {
		t.Errorf("%s: refreshed %d edges, %d chunks; fresh %d, %d", what, s.Edges, s.Chunks, f.Edges, f.Chunks)
	}
	fresh.mu.RLock()
	var ents []string
	for k := range fresh.nodes {
		if strings.HasPrefix(k, "e:") {
			ents = append(ents, k[2:])
		}
	}
	fresh.mu.RUnlock()
	slices.Sort(ents)
	for _, id := range ents {
		if s, f := g.Specificity(id), fresh.Specificity(id); math.Abs(s-f) > 1e-12 {
			t.Errorf("%s: specificity of %s refreshed %v, fresh %v", what, id, s, f)
		}
	}
	for _, s := range seeds {
		ra, rb := g.Rank([]Seed{{s, 1}}, nil, 0), fresh.Rank([]Seed{{s, 1}}, nil, 0)
		if fmt.Sprint(resultIDs(ra.Chunks), resultIDs(ra.Entities)) != fmt.Sprint(resultIDs(rb.Chunks), resultIDs(rb.Entities)) {
			t.Errorf("%s: rank from %s refreshed %v %v, fresh %v %v", what, s, resultIDs(ra.Chunks), resultIDs(ra.Entities),
				resultIDs(rb.Chunks), resultIDs(rb.Entities))
			continue
		}
		for i := range ra.Chunks {
			if math.Abs(ra.Chunks[i].Score-rb.Chunks[i].Score) > 1e-6*rb.Chunks[i].Score {
				t.Errorf("%s: rank from %s chunk %s scored %v refreshed, %v fresh", what, s, ra.Chunks[i].ID, ra.Chunks[i].Score, rb.Chunks[i].Score)
			}
		}
	}
}

func resultIDs(rs []Result) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	slices.Sort(out)
	return out
}

func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func precise() Config { return Config{Tolerance: 1e-12, MaxIterations: 500} }
