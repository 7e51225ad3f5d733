package postgres

import (
	"context"
	"fmt"

	"github.com/glyphoxa/glyphoxa/memory"
)

// npcVisibleSQL is the SQL predicate true when the relationship r of
// campaign $1 (g's) may be known by the NPC $2 ([view.npcFact]): not
// secret, not told only in a split scene and about entities it may see, a
// secret one it is an end of, or one listing it in known_by.
func (g *Graph) npcVisibleSQL() string { return view{campaign: g.campaign}.npcFact("r", "$2", "$1") }

// npcView is the view of the NPC npcID of g's campaign, for the NPC paths
// that take the NPC as an argument rather than from [Campaign.As].
func (g *Graph) npcView(npcID string) view {
	return view{v: memory.NPCViewer(npcID), campaign: g.campaign}
}

// ownView refuses the NPC paths (identity snapshot, visible subgraph) to a
// handle that is neither the DM's, the server's own, nor bound to that NPC:
// they hold the NPC's secret knowledge.
func (g *Graph) ownView(npcID string) error {
	if g.view.system() || (g.view.v.Role == memory.RoleNPC && g.view.v.NPCID == npcID) {
		return nil
	}
	return fmt.Errorf("%w: a handle bound to %s reads only its own view", memory.ErrForbidden, g.view.v)
}

// IdentitySnapshot returns the NPC, its active edges (both directions) it
// may know ([view.npcFact]) and the entities at their other ends, in one
// query. Related entities come without
// their secret knowledge; the edges' attributes are those the NPC may read
// (no DM-only key: see [view.factAttrs]).
//
// Like [Graph.VisibleSubgraph], only the DM, the server and that NPC's own
// handle may read it.
func (g *Graph) IdentitySnapshot(ctx context.Context, npcID string) (memory.NPCIdentity, error) {
	var id memory.NPCIdentity
	if err := g.ownView(npcID); err != nil {
		return id, fmt.Errorf("reading the identity of %q: %w", npcID, err)
	}
	var edges, related []byte
	e := &id.Entity
	err := g.db.QueryRow(ctx, `
		WITH edges AS (
		    SELECT r.* FROM relationships r
		    WHERE r.campaign_id = $1 AND r.source_id = $2 AND r.status = 'active' AND `+g.npcVisibleSQL()+`
		    UNION ALL
		    SELECT r.* FROM relationships r
		    WHERE r.campaign_id = $1 AND r.target_id = $2 AND r.source_id <> $2 AND r.status = 'active' AND `+g.npcVisibleSQL()+`
		), related AS (
		    SELECT e.id, e.type, e.name, e.aliases, `+publicAttrs("e")+` AS attributes, e.created_at, e.public_updated_at AS updated_at
		    FROM entities e
		    WHERE e.campaign_id = $1 AND e.id <> $2 AND e.id IN (
		        SELECT CASE WHEN source_id = $2 THEN target_id ELSE source_id END FROM edges)
		)
		SELECT `+prefixed("n", entityColumns)+`,
		       (SELECT coalesce(jsonb_agg(`+g.npcView(npcID).factJSON("edges")+` ORDER BY `+g.npcView(npcID).updatedCol("edges")+` DESC, edges.id), '[]') FROM edges),
		       (SELECT coalesce(jsonb_agg(to_jsonb(related) ORDER BY lower(related.name), related.id), '[]') FROM related)
		FROM entities n WHERE n.campaign_id = $1 AND n.id = $2`, g.campaign, npcID).
		Scan(&e.ID, &e.Type, &e.Name, &e.Aliases, &e.Attributes, &e.CreatedAt, &e.UpdatedAt, &edges, &related)
	if isNoRows(err) {
		return id, fmt.Errorf("identity of %q: %w", npcID, memory.ErrNotFound)
	}
	if err != nil {
		return id, fmt.Errorf("reading the identity of %q: %w", npcID, err)
	}
	if e.Attributes == nil {
		e.Attributes = map[string]any{}
	}
	rels, err := decodeJSON[[]relJSON](edges, "identity relationships")
	if err != nil {
		return id, err
	}
	for _, r := range rels {
		id.Relationships = append(id.Relationships, r.relationship())
	}
	ents, err := decodeJSON[[]entityJSON](related, "identity related entities")
	if err != nil {
		return id, err
	}
	for _, x := range ents {
		id.RelatedEntities = append(id.RelatedEntities, x.entity())
	}
	return id, nil
}

// VisibleSubgraph returns what an NPC can know. It sees its own edges (any
// type, both directions) and the entities at their ends; beyond those, its
// knowledge travels outward along the scope's relationship types, up to
// MaxDepth hops. Secret edges are visible only to their ends and to the NPCs
// listed in their known_by attribute, an edge told only in a split scene
// only to the NPCs its known_by lists (see [view.npcFact]), no entity but the
// NPC itself comes with its secret knowledge, and no edge with a DM-only
// attribute or a quote of a split scene's line.
//
// It is the NPC's own view, secret knowledge included, so only the DM, the
// server's own code and a handle bound to that NPC may read it: a player's
// handle, or another NPC's, is refused.
//
// It is one statement. The walk is breadth-first, like [Graph.Neighbors]'s:
// level 1 is the other ends of the NPC's own edges; each further level
// reads the scoped edges of its whole frontier in one index scan
// (relationships_out) and keeps the entities not visited before, so no
// entity is expanded twice. The edges among the visible entities, and the
// entities themselves, are then read by index from the visited array. (A
// walk of one row per entity and depth re-expanded an entity for every
// depth it was reached at, and joining it to the relationships hashed the
// whole campaign's edges at every level: in the 1k bench campaign it
// cost the database about ten times as much.)
func (g *Graph) VisibleSubgraph(ctx context.Context, npcID string, s memory.VisibilityScope) ([]memory.Entity, []memory.Relationship, error) {
	if err := g.ownView(npcID); err != nil {
		return nil, nil, fmt.Errorf("reading what %q can see: %w", npcID, err)
	}
	types := s.RelTypes
	if len(types) == 0 {
		types = memory.DefaultKnowledgeScope()
	}
	depth := s.MaxDepth
	if depth <= 0 {
		depth = 3
	}
	var ents, rels []byte
	err := g.db.QueryRow(ctx, `
		WITH RECURSIVE own AS MATERIALIZED (
		    SELECT r.* FROM relationships r
		    WHERE r.campaign_id = $1 AND r.status = 'active' AND (r.source_id = $2 OR r.target_id = $2) AND `+g.npcVisibleSQL()+`
		), bfs(depth, frontier, visited) AS (
		    SELECT 1, l.ids, ARRAY[$2::text] || l.ids FROM (
		        SELECT coalesce(array_agg(DISTINCT CASE WHEN o.source_id = $2 THEN o.target_id ELSE o.source_id END)
		            FILTER (WHERE o.source_id <> o.target_id), '{}') AS ids FROM own o) l
		    UNION ALL
		    SELECT b.depth + 1, nxt.ids, b.visited || nxt.ids
		    FROM bfs b
		    CROSS JOIN LATERAL (
		        SELECT array_agg(DISTINCT r.target_id) AS ids FROM relationships r
		        WHERE r.campaign_id = $1 AND r.source_id = ANY(b.frontier) AND r.status = 'active' AND r.rel_type = ANY($3)
		          AND NOT r.target_id = ANY(b.visited) AND `+g.npcVisibleSQL()+`
		    ) nxt
		    WHERE b.depth < $4 AND nxt.ids IS NOT NULL
		), visible AS (
		    SELECT visited AS ids FROM bfs ORDER BY depth DESC LIMIT 1
		), edges AS (
		    SELECT * FROM own
		    UNION
		    SELECT r.* FROM visible v JOIN relationships r
		      ON r.campaign_id = $1 AND r.status = 'active' AND r.source_id = ANY(v.ids)
		    WHERE r.rel_type = ANY($3) AND r.target_id = ANY(v.ids) AND `+g.npcVisibleSQL()+`
		)
		SELECT
		    (SELECT coalesce(jsonb_agg(jsonb_build_object(
		        'id', e.id, 'type', e.type, 'name', e.name, 'aliases', e.aliases,
		        'attributes', CASE WHEN e.id = $2 THEN e.attributes ELSE `+publicAttrs("e")+` END,
		        'created_at', e.created_at, 'updated_at', CASE WHEN e.id = $2 THEN e.updated_at ELSE e.public_updated_at END) ORDER BY e.id <> $2, lower(e.name), e.id), '[]')
		     FROM visible v JOIN entities e ON e.campaign_id = $1 AND e.id = ANY(v.ids)),
		    (SELECT coalesce(jsonb_agg(`+g.npcView(npcID).factJSON("edges")+` ORDER BY edges.id), '[]') FROM edges)`,
		g.campaign, npcID, types, depth).Scan(&ents, &rels)
	if err != nil {
		return nil, nil, fmt.Errorf("reading what %q can see: %w", npcID, err)
	}
	ej, err := decodeJSON[[]entityJSON](ents, "visible entities")
	if err != nil {
		return nil, nil, err
	}
	if len(ej) == 0 {
		return nil, nil, fmt.Errorf("visible subgraph of %q: %w", npcID, memory.ErrNotFound)
	}
	rj, err := decodeJSON[[]relJSON](rels, "visible relationships")
	if err != nil {
		return nil, nil, err
	}
	entities := make([]memory.Entity, len(ej))
	for i, x := range ej {
		entities[i] = x.entity()
	}
	relationships := make([]memory.Relationship, len(rj))
	for i, x := range rj {
		relationships[i] = x.relationship()
	}
	return entities, relationships, nil
}
