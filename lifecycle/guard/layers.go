package guard

import (
	"context"
	"errors"
	"fmt"

	"github.com/glyphoxa/glyphoxa/memory"
)

// ErrDegraded is wrapped by the errors of knowledge-graph and semantic-index
// calls that cannot be served while the database is unreachable. Unlike
// session-log writes, these are not spooled: they are rare (a DM's or an
// NPC tool's edit) and their callers can retry.
var ErrDegraded = errors.New("memory is degraded: the database is unreachable")

// Graph is a knowledge graph (L3) guarded by a Guard: while it is degraded,
// listing reads return empty results, single-item reads and writes fail at
// once with an error wrapping ErrDegraded (and, for reads, memory.ErrNotFound),
// and a call that meets an outage degrades the guard.
type Graph struct {
	g  *Guard
	kg memory.KnowledgeGraph
}

var _ memory.KnowledgeGraph = (*Graph)(nil)

// Graph returns kg guarded by g.
func (g *Guard) Graph(kg memory.KnowledgeGraph) *Graph { return &Graph{g: g, kg: kg} }

// Index is a semantic index (L2) guarded by a Guard, on the same terms as
// Graph.
type Index struct {
	g  *Guard
	ix memory.SemanticIndex
}

var _ memory.SemanticIndex = (*Index)(nil)

// Index returns ix guarded by g.
func (g *Guard) Index(ix memory.SemanticIndex) *Index { return &Index{g: g, ix: ix} }

// call runs f unless degraded; an outage degrades the guard. Errors while
// degraded wrap ErrDegraded, and also memory.ErrNotFound when notFound.
func call[T any](g *Guard, ctx context.Context, what string, notFound bool, f func(context.Context) (T, error)) (T, error) {
	var zero T
	degraded := func() error {
		if notFound {
			return fmt.Errorf("%s: %w (%w)", what, memory.ErrNotFound, ErrDegraded)
		}
		return fmt.Errorf("%s: %w", what, ErrDegraded)
	}
	if g.degraded.Load() {
		return zero, degraded()
	}
	ctx, cancel := context.WithTimeout(ctx, g.cfg.WriteTimeout)
	defer cancel()
	v, err := f(ctx)
	if err != nil && g.cfg.IsOutage(err) && !errors.Is(err, context.Canceled) {
		g.degrade(err)
		return zero, errors.Join(degraded(), err)
	}
	return v, err
}

// list is call for listing reads: empty and no error while degraded.
func list[T any](g *Guard, ctx context.Context, what string, f func(context.Context) (T, error)) (T, error) {
	return read(g, ctx, what, f)
}

func write(g *Guard, ctx context.Context, what string, f func(context.Context) error) error {
	_, err := call(g, ctx, what, false, func(ctx context.Context) (struct{}, error) { return struct{}{}, f(ctx) })
	return err
}

// UpsertEntity implements memory.KnowledgeGraph.
func (x *Graph) UpsertEntity(ctx context.Context, e memory.Entity) error {
	return write(x.g, ctx, "saving entity "+e.ID, func(ctx context.Context) error { return x.kg.UpsertEntity(ctx, e) })
}

// UpsertEntities implements memory.KnowledgeGraph.
func (x *Graph) UpsertEntities(ctx context.Context, es []memory.Entity) error {
	return write(x.g, ctx, "saving entities", func(ctx context.Context) error { return x.kg.UpsertEntities(ctx, es) })
}

// Entity implements memory.KnowledgeGraph.
func (x *Graph) Entity(ctx context.Context, id string) (memory.Entity, error) {
	return call(x.g, ctx, "reading entity "+id, true, func(ctx context.Context) (memory.Entity, error) { return x.kg.Entity(ctx, id) })
}

// UpdateEntity implements memory.KnowledgeGraph.
func (x *Graph) UpdateEntity(ctx context.Context, id string, u memory.EntityUpdate) (memory.Entity, error) {
	return call(x.g, ctx, "updating entity "+id, false, func(ctx context.Context) (memory.Entity, error) { return x.kg.UpdateEntity(ctx, id, u) })
}

// DeleteEntity implements memory.KnowledgeGraph.
func (x *Graph) DeleteEntity(ctx context.Context, id string) error {
	return write(x.g, ctx, "deleting entity "+id, func(ctx context.Context) error { return x.kg.DeleteEntity(ctx, id) })
}

// FindEntities implements memory.KnowledgeGraph.
func (x *Graph) FindEntities(ctx context.Context, f memory.EntityFilter) ([]memory.Entity, error) {
	return list(x.g, ctx, "finding entities", func(ctx context.Context) ([]memory.Entity, error) { return x.kg.FindEntities(ctx, f) })
}

// UpsertRelationship implements memory.KnowledgeGraph.
func (x *Graph) UpsertRelationship(ctx context.Context, r memory.Relationship) (memory.Relationship, error) {
	return call(x.g, ctx, "saving a fact", false, func(ctx context.Context) (memory.Relationship, error) { return x.kg.UpsertRelationship(ctx, r) })
}

// Relationships implements memory.KnowledgeGraph.
func (x *Graph) Relationships(ctx context.Context, id string, o memory.TraversalOpts) ([]memory.Relationship, error) {
	return list(x.g, ctx, "reading relationships", func(ctx context.Context) ([]memory.Relationship, error) { return x.kg.Relationships(ctx, id, o) })
}

// Fact implements memory.KnowledgeGraph.
func (x *Graph) Fact(ctx context.Context, id int64) (memory.Relationship, error) {
	return call(x.g, ctx, fmt.Sprintf("reading fact %d", id), true, func(ctx context.Context) (memory.Relationship, error) { return x.kg.Fact(ctx, id) })
}

// Neighbors implements memory.KnowledgeGraph.
func (x *Graph) Neighbors(ctx context.Context, id string, depth int, o memory.TraversalOpts) ([]memory.Neighbor, error) {
	return list(x.g, ctx, "reading neighbours", func(ctx context.Context) ([]memory.Neighbor, error) { return x.kg.Neighbors(ctx, id, depth, o) })
}

// FindPath implements memory.KnowledgeGraph.
func (x *Graph) FindPath(ctx context.Context, from, to string, maxDepth int) ([]memory.PathStep, error) {
	return call(x.g, ctx, "finding a path", true, func(ctx context.Context) ([]memory.PathStep, error) { return x.kg.FindPath(ctx, from, to, maxDepth) })
}

// VisibleSubgraph implements memory.KnowledgeGraph.
func (x *Graph) VisibleSubgraph(ctx context.Context, npcID string, s memory.VisibilityScope) ([]memory.Entity, []memory.Relationship, error) {
	type pair struct {
		es []memory.Entity
		rs []memory.Relationship
	}
	p, err := list(x.g, ctx, "reading what an NPC knows", func(ctx context.Context) (pair, error) {
		es, rs, err := x.kg.VisibleSubgraph(ctx, npcID, s)
		return pair{es, rs}, err
	})
	return p.es, p.rs, err
}

// IdentitySnapshot implements memory.KnowledgeGraph; while degraded it is
// empty.
func (x *Graph) IdentitySnapshot(ctx context.Context, npcID string) (memory.NPCIdentity, error) {
	return list(x.g, ctx, "reading an NPC's identity", func(ctx context.Context) (memory.NPCIdentity, error) { return x.kg.IdentitySnapshot(ctx, npcID) })
}

// PendingFacts implements memory.KnowledgeGraph.
func (x *Graph) PendingFacts(ctx context.Context, f memory.FactFilter) ([]memory.Relationship, error) {
	return list(x.g, ctx, "listing pending facts", func(ctx context.Context) ([]memory.Relationship, error) { return x.kg.PendingFacts(ctx, f) })
}

// ConfirmFact implements memory.KnowledgeGraph.
func (x *Graph) ConfirmFact(ctx context.Context, id int64) (memory.Relationship, error) {
	return call(x.g, ctx, fmt.Sprintf("confirming fact %d", id), false, func(ctx context.Context) (memory.Relationship, error) { return x.kg.ConfirmFact(ctx, id) })
}

// RejectFact implements memory.KnowledgeGraph.
func (x *Graph) RejectFact(ctx context.Context, id int64) (memory.Relationship, error) {
	return call(x.g, ctx, fmt.Sprintf("rejecting fact %d", id), false, func(ctx context.Context) (memory.Relationship, error) { return x.kg.RejectFact(ctx, id) })
}

// IndexChunks implements memory.SemanticIndex.
func (x *Index) IndexChunks(ctx context.Context, cs []memory.Chunk) error {
	return write(x.g, ctx, "indexing chunks", func(ctx context.Context) error { return x.ix.IndexChunks(ctx, cs) })
}

// Search implements memory.SemanticIndex; while degraded it finds nothing.
func (x *Index) Search(ctx context.Context, embedding []float32, topK int, f memory.ChunkFilter) ([]memory.ChunkResult, error) {
	return list(x.g, ctx, "searching the semantic index", func(ctx context.Context) ([]memory.ChunkResult, error) {
		return x.ix.Search(ctx, embedding, topK, f)
	})
}

// Dimensions implements memory.SemanticIndex.
func (x *Index) Dimensions() int { return x.ix.Dimensions() }
