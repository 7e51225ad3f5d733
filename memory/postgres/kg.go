package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// The memory-tool view of a campaign (the MCP kg_* tools): the knowledge
// graph as nodes with a one-line gist, light links (touches) and notes,
// and edges, on two levels:
//
//   - KGCampaign is the campaign's entities (nodes) and canon facts (edges),
//     shared with the table;
//   - KGDM is the DM's private notes, kept in tables of their own that no
//     player, NPC or retrieval path reads.
//
// Compaction (see CompactKG) keeps what an agent reads within a token
// budget: low-scored nodes are archived, hidden from KGRead but recallable;
// edges from active to archived nodes stay visible as memory traces.
//
// An edge's end is a node id or an artifact reference (see
// IsArtifactRef): a path or path:line outside the graph. At the campaign
// level an edge between two entities is a fact; an edge with an artifact
// end is kept in kg_edges.

// KGLevel is one of the two levels of the memory-tool view.
type KGLevel string

// Levels.
const (
	KGCampaign KGLevel = "campaign"
	KGDM       KGLevel = "dm"
)

// Valid reports whether l is a known level.
func (l KGLevel) Valid() bool { return l == KGCampaign || l == KGDM }

// Compaction defaults.
const (
	// DefaultKGTokenLimit is a new campaign's token budget.
	DefaultKGTokenLimit = 5000
	// KGProtected is how long after its last update a node is never
	// archived.
	KGProtected = 7 * 24 * time.Hour
	// KGGrace is how long an archived DM node with no active connection is
	// kept before it is deleted.
	KGGrace = 30 * 24 * time.Hour
	// kgTarget is the share of the limit compaction brings the estimate to.
	kgTarget = 0.9
)

// KGNode is a node as agents see it.
type KGNode struct {
	Level     KGLevel   `json:"level"`
	ID        string    `json:"id"`
	Name      string    `json:"name,omitempty"`
	Type      string    `json:"type,omitempty"`
	Gist      string    `json:"gist"`
	Touches   []string  `json:"touches"`
	Notes     []string  `json:"notes"`
	UpdatedAt time.Time `json:"updated_at"`
	Archived  bool      `json:"archived,omitempty"`
}

// KGEdge is an edge as agents see it. A trace is an edge from an active node
// to an archived one: it shows that something is there to recall.
type KGEdge struct {
	Level KGLevel  `json:"level"`
	From  string   `json:"from"`
	To    string   `json:"to"`
	Rel   string   `json:"rel"`
	Notes []string `json:"notes"`
	Trace bool     `json:"trace,omitempty"`

	id   int64
	kind string // the change-log kind of its row: fact, kg_edge or dm_edge
}

// IsArtifactRef reports whether an edge end names an artifact (a file
// path, a path:line, a URL) rather than a node: it holds a '/', a '.' or
// a ':'. Node ids are kebab-case words and hold none of them.
func IsArtifactRef(s string) bool { return strings.ContainsAny(s, "/.:") }

// notesOf reads notes stored as a JSON string or list (entity and fact
// attributes): strings are kept, an object's "text" is taken, anything
// else is left out.
func notesOf(raw string) []string {
	out := []string{}
	var v any
	if raw == "" || json.Unmarshal([]byte(raw), &v) != nil {
		return out
	}
	add := func(x any) {
		switch y := x.(type) {
		case string:
			if y != "" {
				out = append(out, y)
			}
		case map[string]any:
			if t, ok := y["text"].(string); ok && t != "" {
				out = append(out, t)
			}
		}
	}
	if l, ok := v.([]any); ok {
		for _, x := range l {
			add(x)
		}
	} else {
		add(v)
	}
	return out
}

// KGView is what kg_read returns.
type KGView struct {
	Nodes  []KGNode `json:"nodes"`
	Edges  []KGEdge `json:"edges"`
	Traces []KGEdge `json:"traces"`
	// Tokens is the estimate compaction keeps under the limit.
	Tokens int `json:"tokens"`
	// LevelTokens is Tokens per level.
	LevelTokens map[KGLevel]int `json:"-"`
}

// KGRel is a relation as the memory-tool API shows it: kebab-case
// (LOCATED_AT is located-at).
func KGRel(rel string) string {
	return strings.ReplaceAll(strings.ToLower(rel), "_", "-")
}

// kgGraph is one level loaded for reading or compaction.
type kgGraph struct {
	level KGLevel
	nodes []KGNode
	edges []KGEdge
}

func nodeTokens(n KGNode) int {
	return tokens(len(n.ID) + len(n.Name) + len(n.Type) + len(n.Gist) + notesLen(n.Notes) + len(strings.Join(n.Touches, " ")))
}

func edgeTokens(e KGEdge) int {
	return tokens(len(e.From) + len(e.Rel) + len(e.To) + notesLen(e.Notes))
}

func notesLen(ns []string) int {
	n := 0
	for _, x := range ns {
		n += len(x) + 1
	}
	return n
}

func traceTokens(e KGEdge) int { return tokens(len(e.From) + len(e.Rel) + len(e.To)) }

// tokens estimates the tokens of n characters of text and its framing: four
// characters a token, plus a few for the structure around it.
func tokens(n int) int { return (n+3)/4 + 4 }

// loadKG reads one level. Secret facts are left out unless withSecrets; the
// DM's level is read only withSecrets (that is, for the DM).
func (c *Campaign) loadKG(ctx context.Context, level KGLevel, withSecrets bool) (kgGraph, error) {
	g := kgGraph{level: level}
	db := c.l1.db
	var nodeSQL, edgeSQL string
	switch level {
	case KGCampaign:
		nodeSQL = c.kgNodeSQL(`ORDER BY e.id`)
		edgeSQL = `SELECT 'fact', r.id, r.source_id, r.target_id, r.rel_type, coalesce((` + c.view.factAttrs("r") + `)->'notes', 'null')::text
			FROM relationships r WHERE r.campaign_id = $1 AND r.status = 'active'
			  AND ($2 OR r.attributes->'secret' IS DISTINCT FROM 'true'::jsonb) AND ` + c.view.factVisible("r") + `
			UNION ALL
			SELECT 'kg_edge', k.id, k.from_ref, k.to_ref, k.rel, array_to_json(k.notes)::text FROM kg_edges k WHERE k.campaign_id = $1
			  AND NOT EXISTS (SELECT 1 FROM entities ke WHERE ke.campaign_id = $1 AND ke.id IN (k.from_ref, k.to_ref)
			                  AND NOT ` + c.view.entityVisible("ke") + `)
			ORDER BY 1, 2`
	case KGDM:
		nodeSQL = `SELECT id, '', '', gist, array_to_json(notes)::text, array_to_json(touches)::text, updated_at, archived_at IS NOT NULL
			FROM dm_nodes WHERE campaign_id = $1 ORDER BY id`
		edgeSQL = `SELECT 'dm_edge', id, from_id, to_id, rel, array_to_json(notes)::text FROM dm_edges WHERE campaign_id = $1 AND $2 ORDER BY id`
	default:
		return g, fmt.Errorf("%w: unknown level %q (campaign or dm)", memory.ErrInvalid, level)
	}
	rows, err := db.Query(ctx, nodeSQL, c.id)
	if err != nil {
		return g, fmt.Errorf("reading %s nodes: %w", level, err)
	}
	g.nodes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (KGNode, error) {
		return scanKGNode(row, level)
	})
	if err != nil {
		return g, fmt.Errorf("reading %s nodes: %w", level, err)
	}
	rows, err = db.Query(ctx, edgeSQL, c.id, withSecrets)
	if err != nil {
		return g, fmt.Errorf("reading %s edges: %w", level, err)
	}
	g.edges, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (KGEdge, error) {
		e := KGEdge{Level: level}
		var notes string
		err := row.Scan(&e.kind, &e.id, &e.From, &e.To, &e.Rel, &notes)
		e.Notes = notesOf(notes)
		return e, err
	})
	if err != nil {
		return g, fmt.Errorf("reading %s edges: %w", level, err)
	}
	return g, nil
}

// kgNodeSQL selects the campaign level's nodes (entities e the viewer may
// see, [view.entityVisible], then rest: a condition on $2 and an order) in
// the columns scanKGNode reads. Gist, notes
// and touches come from the attributes the campaign's viewer may read
// (view.entityAttrs): for a player, an object marked secret or a DM-only key
// is gone before its text is taken.
func (c *Campaign) kgNodeSQL(rest string) string {
	return `SELECT e.id, e.name, e.type, coalesce(v.a->>'gist', v.a->>'description', ''), coalesce(v.a->'notes', 'null')::text,
			CASE WHEN jsonb_typeof(v.a->'touches') = 'array' THEN v.a->>'touches' ELSE '' END, ` + c.view.updatedCol("e") + `,
			e.kg_archived_at IS NOT NULL OR coalesce(e.attributes->'archived' = 'true'::jsonb, false)
		FROM entities e CROSS JOIN LATERAL (SELECT ` + c.view.entityAttrs("e") + ` AS a) v
		WHERE e.campaign_id = $1 AND ` + c.view.entityVisible("e") + ` ` + rest
}

func scanKGNode(row pgx.CollectableRow, level KGLevel) (KGNode, error) {
	n := KGNode{Level: level, Touches: []string{}}
	var touches, notes string
	if err := row.Scan(&n.ID, &n.Name, &n.Type, &n.Gist, &notes, &touches, &n.UpdatedAt, &n.Archived); err != nil {
		return n, err
	}
	n.Notes = notesOf(notes)
	if touches != "" && touches != "[]" && json.Unmarshal([]byte(touches), &n.Touches) != nil {
		// Not all strings: keep the strings.
		var ts []any
		if err := json.Unmarshal([]byte(touches), &ts); err != nil {
			return n, fmt.Errorf("node %q: touches: %w", n.ID, err)
		}
		n.Touches = []string{}
		for _, t := range ts {
			if s, ok := t.(string); ok {
				n.Touches = append(n.Touches, s)
			}
		}
	}
	return n, nil
}

// view renders a level as kg_read shows it and estimates its tokens.
func (g kgGraph) view() KGView {
	v := KGView{Nodes: make([]KGNode, 0, len(g.nodes)), Edges: make([]KGEdge, 0, len(g.edges)), Traces: []KGEdge{}}
	archived := make(map[string]bool, len(g.nodes))
	for _, n := range g.nodes {
		archived[n.ID] = n.Archived
		if !n.Archived {
			v.Nodes = append(v.Nodes, n)
			v.Tokens += nodeTokens(n)
		}
	}
	for _, e := range g.edges {
		fa, fok := archived[e.From]
		ta, tok := archived[e.To]
		// An artifact end is outside the graph: never archived.
		if !fok && IsArtifactRef(e.From) {
			fok = true
		}
		if !tok && IsArtifactRef(e.To) {
			tok = true
		}
		switch {
		case !fok || !tok || (fa && ta):
		case fa || ta:
			e.Trace, e.Notes = true, []string{}
			v.Traces = append(v.Traces, e)
			v.Tokens += traceTokens(e)
		default:
			v.Edges = append(v.Edges, e)
			v.Tokens += edgeTokens(e)
		}
	}
	return v
}

// KGRead returns the active nodes of the campaign level, and of the DM's
// level when dm is true, with the edges among them and the traces to
// archived nodes. Secret facts are shown to the DM only.
func (c *Campaign) KGRead(ctx context.Context, dm bool) (KGView, error) {
	levels := []KGLevel{KGCampaign}
	if dm {
		levels = append(levels, KGDM)
	}
	var out KGView
	for _, l := range levels {
		g, err := c.loadKG(ctx, l, dm)
		if err != nil {
			return KGView{}, err
		}
		v := g.view()
		if out.Nodes == nil {
			out = v
			out.LevelTokens = map[KGLevel]int{l: v.Tokens}
			continue
		}
		out.LevelTokens[l] = v.Tokens
		out.Nodes = append(out.Nodes, v.Nodes...)
		out.Edges = append(out.Edges, v.Edges...)
		out.Traces = append(out.Traces, v.Traces...)
		out.Tokens += v.Tokens
	}
	return out, nil
}

// KGNodeInput is a node to write.
type KGNodeInput struct {
	ID      string
	Gist    string
	Touches []string
	Notes   []string
	// Name and Type of a new campaign entity (default: the id, concept).
	Name, Type string
}

// KGPutNode creates or updates a node and marks it active and fresh (as of
// now). At the campaign level it is an entity: gist, touches and notes are
// its attributes. Only the DM writes nodes; others propose (see Propose).
func (c *Campaign) KGPutNode(ctx context.Context, level KGLevel, n KGNodeInput, now time.Time) (KGNode, error) {
	n.ID = strings.TrimSpace(n.ID)
	if n.ID == "" {
		return KGNode{}, fmt.Errorf("%w: a node needs an id", memory.ErrInvalid)
	}
	if strings.TrimSpace(n.Gist) == "" {
		return KGNode{}, fmt.Errorf("%w: node %q needs a gist (a one-line summary)", memory.ErrInvalid, n.ID)
	}
	touches := nonNil(n.Touches)
	db := c.l1.db
	switch level {
	case KGCampaign:
		attrs := map[string]any{"gist": n.Gist, "touches": touches}
		if len(n.Notes) > 0 {
			attrs["notes"] = n.Notes
		}
		typ, name := strings.TrimSpace(n.Type), strings.TrimSpace(n.Name)
		_, err := db.Exec(ctx, `
			INSERT INTO entities (campaign_id, id, type, name, aliases, attributes, updated_at)
			VALUES ($1, $2, coalesce(nullif($3, ''), 'concept'), coalesce(nullif($4, ''), $2), '{}', $5, $6)
			ON CONFLICT (campaign_id, id) DO UPDATE SET
			    type = coalesce(nullif($3, ''), entities.type), name = coalesce(nullif($4, ''), entities.name),
			    attributes = (entities.attributes || excluded.attributes) - 'archived',
			    kg_archived_at = NULL, updated_at = excluded.updated_at`,
			c.id, n.ID, typ, name, attrs, now)
		if err != nil {
			return KGNode{}, fmt.Errorf("writing node %q: %w", n.ID, err)
		}
	case KGDM:
		_, err := db.Exec(ctx, `
			INSERT INTO dm_nodes (campaign_id, id, gist, touches, notes, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6)
			ON CONFLICT (campaign_id, id) DO UPDATE SET gist = excluded.gist, touches = excluded.touches,
			    notes = excluded.notes, archived_at = NULL, updated_at = excluded.updated_at`,
			c.id, n.ID, n.Gist, touches, nonNil(n.Notes), now)
		if err != nil {
			return KGNode{}, fmt.Errorf("writing DM node %q: %w", n.ID, err)
		}
	default:
		return KGNode{}, fmt.Errorf("%w: unknown level %q (campaign or dm)", memory.ErrInvalid, level)
	}
	return c.KGNode(ctx, level, n.ID)
}

// KGNode returns one node, archived or not.
func (c *Campaign) KGNode(ctx context.Context, level KGLevel, id string) (KGNode, error) {
	var q string
	switch level {
	case KGCampaign:
		q = c.kgNodeSQL(`AND e.id = $2`)
	case KGDM:
		q = `SELECT id, '', '', gist, array_to_json(notes)::text, array_to_json(touches)::text, updated_at, archived_at IS NOT NULL FROM dm_nodes WHERE campaign_id = $1 AND id = $2`
	default:
		return KGNode{}, fmt.Errorf("%w: unknown level %q (campaign or dm)", memory.ErrInvalid, level)
	}
	rows, err := c.l1.db.Query(ctx, q, c.id, id)
	if err != nil {
		return KGNode{}, fmt.Errorf("reading %s node %q: %w", level, id, err)
	}
	n, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (KGNode, error) { return scanKGNode(row, level) })
	if isNoRows(err) {
		return KGNode{}, fmt.Errorf("%s node %q: %w", level, id, memory.ErrNotFound)
	}
	if err != nil {
		return KGNode{}, fmt.Errorf("reading %s node %q: %w", level, id, err)
	}
	return n, nil
}

// checkEnds checks that each end of an edge is a node of table (dm_nodes
// or entities) or an artifact reference.
func (c *Campaign) checkEnds(ctx context.Context, table string, ends ...string) error {
	for _, id := range ends {
		if strings.TrimSpace(id) == "" {
			return fmt.Errorf("%w: an edge needs both ends", memory.ErrInvalid)
		}
		if IsArtifactRef(id) {
			continue
		}
		var ok bool
		if err := c.l1.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE campaign_id = $1 AND id = $2)`, c.id, id).Scan(&ok); err != nil {
			return fmt.Errorf("reading node %q: %w", id, err)
		}
		if !ok {
			return fmt.Errorf("no node %q: %w (write it with kg_put_node first, or name an artifact such as a path or path:line)", id, memory.ErrNotFound)
		}
	}
	return nil
}

// KGPutDMEdge creates or updates an edge of the DM's level; each end is one
// of the DM's nodes or an artifact reference.
func (c *Campaign) KGPutDMEdge(ctx context.Context, from, to, rel string, notes []string, now time.Time) error {
	rel = strings.TrimSpace(rel)
	if rel == "" {
		return fmt.Errorf("%w: an edge needs a rel", memory.ErrInvalid)
	}
	if err := c.checkEnds(ctx, "dm_nodes", from, to); err != nil {
		return err
	}
	_, err := c.l1.db.Exec(ctx, `
		INSERT INTO dm_edges (campaign_id, from_id, to_id, rel, notes, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (campaign_id, from_id, to_id, rel) DO UPDATE SET notes = excluded.notes, updated_at = excluded.updated_at`,
		c.id, from, to, rel, nonNil(notes), now)
	if err != nil {
		return fmt.Errorf("writing DM edge %s -%s-> %s: %w", from, rel, to, err)
	}
	// Writing an edge refreshes both ends.
	_, err = c.l1.db.Exec(ctx, `UPDATE dm_nodes SET updated_at = $4, archived_at = NULL
		WHERE campaign_id = $1 AND id IN ($2, $3)`, c.id, from, to, now)
	return err
}

// KGDeleteDMNode deletes one of the DM's nodes and its edges.
func (c *Campaign) KGDeleteDMNode(ctx context.Context, id string) error {
	if _, err := c.l1.db.Exec(ctx, `DELETE FROM dm_edges WHERE campaign_id = $1 AND (from_id = $2 OR to_id = $2)`, c.id, id); err != nil {
		return fmt.Errorf("deleting the edges of DM node %q: %w", id, err)
	}
	tag, err := c.l1.db.Exec(ctx, `DELETE FROM dm_nodes WHERE campaign_id = $1 AND id = $2`, c.id, id)
	if err != nil {
		return fmt.Errorf("deleting DM node %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("dm node %q: %w", id, memory.ErrNotFound)
	}
	return nil
}

// KGDeleteDMEdge deletes an edge of the DM's level.
func (c *Campaign) KGDeleteDMEdge(ctx context.Context, from, to, rel string) error {
	return c.deleteEdge(ctx, `DELETE FROM dm_edges WHERE campaign_id = $1 AND from_id = $2 AND to_id = $3 AND rel = $4`,
		"dm edge", from, to, rel)
}

// KGPutArtifactEdge creates or updates an edge of the campaign level with
// an artifact end (see IsArtifactRef); the other end is an entity or an
// artifact. An edge between two entities is a fact instead (WriteFact).
func (c *Campaign) KGPutArtifactEdge(ctx context.Context, from, to, rel string, notes []string, now time.Time) error {
	rel = strings.TrimSpace(rel)
	if rel == "" {
		return fmt.Errorf("%w: an edge needs a rel", memory.ErrInvalid)
	}
	if !IsArtifactRef(from) && !IsArtifactRef(to) {
		return fmt.Errorf("%w: an edge between two entities is a fact, not an artifact edge", memory.ErrInvalid)
	}
	if err := c.checkEnds(ctx, "entities", from, to); err != nil {
		return err
	}
	_, err := c.l1.db.Exec(ctx, `
		INSERT INTO kg_edges (campaign_id, from_ref, to_ref, rel, notes, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6)
		ON CONFLICT (campaign_id, from_ref, to_ref, rel) DO UPDATE SET notes = excluded.notes, updated_at = excluded.updated_at`,
		c.id, from, to, rel, nonNil(notes), now)
	if err != nil {
		return fmt.Errorf("writing edge %s -%s-> %s: %w", from, rel, to, err)
	}
	// Writing an edge refreshes its entity end (its protection from
	// compaction restarts), as at the DM's level; an end the DM deleted
	// stays deleted.
	if _, err := c.l1.db.Exec(ctx, `UPDATE entities SET updated_at = $4, kg_archived_at = NULL
		WHERE campaign_id = $1 AND id IN ($2, $3)`, c.id, from, to, now); err != nil {
		return fmt.Errorf("refreshing the ends of edge %s -%s-> %s: %w", from, rel, to, err)
	}
	return nil
}

// KGDeleteArtifactEdge deletes an edge of the campaign level with an
// artifact end.
func (c *Campaign) KGDeleteArtifactEdge(ctx context.Context, from, to, rel string) error {
	return c.deleteEdge(ctx, `DELETE FROM kg_edges WHERE campaign_id = $1 AND from_ref = $2 AND to_ref = $3 AND rel = $4`,
		"edge", from, to, rel)
}

// KGDeleteArtifactEdgesOf deletes the campaign-level edges between entity
// id and an artifact: what kg_delete_node removes besides retiring the
// entity's facts ("a node and every edge touching it").
func (c *Campaign) KGDeleteArtifactEdgesOf(ctx context.Context, id string) error {
	if _, err := c.l1.db.Exec(ctx, `DELETE FROM kg_edges WHERE campaign_id = $1 AND (from_ref = $2 OR to_ref = $2)`, c.id, id); err != nil {
		return fmt.Errorf("deleting the artifact edges of %q: %w", id, err)
	}
	return nil
}

// deleteEdge runs stmt, a DELETE of one edge keyed by campaign, from, to and
// rel ($1..$4), and says ErrNotFound when there was no such edge; what names
// the edge's kind in errors.
func (c *Campaign) deleteEdge(ctx context.Context, stmt, what, from, to, rel string) error {
	tag, err := c.l1.db.Exec(ctx, stmt, c.id, from, to, rel)
	if err != nil {
		return fmt.Errorf("deleting %s %s -%s-> %s: %w", what, from, rel, to, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s %s -%s-> %s: %w", what, from, rel, to, memory.ErrNotFound)
	}
	return nil
}

// CanonFactID is the id of the canon fact from -rel-> to, or 0.
func (c *Campaign) CanonFactID(ctx context.Context, from, to, rel string) (int64, error) {
	var id int64
	err := c.l1.db.QueryRow(ctx, `SELECT id FROM relationships WHERE campaign_id = $1 AND source_id = $2 AND target_id = $3
		AND rel_type = $4 AND status = 'active' AND proposed_by = ''`, c.id, from, to, rel).Scan(&id)
	if isNoRows(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("finding fact %s -%s-> %s: %w", from, rel, to, err)
	}
	return id, nil
}

// KGRecall brings an archived node back and refreshes it (as of now).
// Clearing a DM's deletion (rather than compaction's archiving) is for the
// DM only: undeleted says whether the caller may.
func (c *Campaign) KGRecall(ctx context.Context, level KGLevel, id string, undelete bool, now time.Time) (KGNode, error) {
	var tag interface{ RowsAffected() int64 }
	var err error
	switch level {
	case KGCampaign:
		// A player recalls only a node they may see: one first heard in a
		// split scene they were not in is not found, and not touched.
		tag, err = c.l1.db.Exec(ctx, `UPDATE entities ue SET kg_archived_at = NULL, updated_at = $3,
			attributes = CASE WHEN $4 THEN ue.attributes - 'archived' ELSE ue.attributes END
			WHERE ue.campaign_id = $1 AND ue.id = $2 AND ($4 OR NOT coalesce(ue.attributes->'archived' = 'true'::jsonb, false))
			  AND `+c.view.entityVisible("ue"), c.id, id, now, undelete)
	case KGDM:
		tag, err = c.l1.db.Exec(ctx, `UPDATE dm_nodes SET archived_at = NULL, updated_at = $3 WHERE campaign_id = $1 AND id = $2`,
			c.id, id, now)
	default:
		return KGNode{}, fmt.Errorf("%w: unknown level %q (campaign or dm)", memory.ErrInvalid, level)
	}
	if err != nil {
		return KGNode{}, fmt.Errorf("recalling %s node %q: %w", level, id, err)
	}
	if tag.RowsAffected() == 0 {
		return KGNode{}, fmt.Errorf("%s node %q: %w", level, id, memory.ErrNotFound)
	}
	return c.KGNode(ctx, level, id)
}

// KGSession is an agent's registered session.
type KGSession struct {
	ID    string  `json:"session_id"`
	Actor string  `json:"-"`
	Level KGLevel `json:"level"`
	// Cursor is where the session started in the change log: the newest
	// change the caller could see then, and the transactions in progress,
	// whose changes commit later with lower ids ([ChangeCursor]). It stays
	// on the server.
	Cursor    ChangeCursor `json:"-"`
	StartedAt time.Time    `json:"started_at"`
}

// KGRegisterSession records an agent session starting now: kg_sync with it
// reports what others changed since. id must be unique (a random one).
func (c *Campaign) KGRegisterSession(ctx context.Context, id, actor string, level KGLevel, now time.Time) (KGSession, error) {
	s := KGSession{ID: id, Actor: actor, Level: level, StartedAt: now}
	// One statement: the cursor and the transactions running are read as
	// of the same moment.
	err := c.l1.db.QueryRow(ctx, `INSERT INTO kg_sessions (campaign_id, id, actor, level, cursor_at, running, started_at, seen_at)
		SELECT $1, $2, $3, $4, (`+c.lastChangeSQL()+`), `+runningSQL+`::text[]::xid8[], $5, $5
		RETURNING cursor_at, running::text[]::bigint[]`, c.id, id, actor, string(level), now).Scan(&s.Cursor.ID, &s.Cursor.Running)
	if err != nil {
		return KGSession{}, fmt.Errorf("registering agent session: %w", err)
	}
	return s, nil
}

// KGSessionByID returns a registered session and marks it seen now.
func (c *Campaign) KGSessionByID(ctx context.Context, id string, now time.Time) (KGSession, error) {
	s := KGSession{ID: id}
	var level string
	err := c.l1.db.QueryRow(ctx, `UPDATE kg_sessions SET seen_at = $3 WHERE campaign_id = $1 AND id = $2
		RETURNING actor, level, cursor_at, running::text[]::bigint[], started_at`, c.id, id, now).Scan(&s.Actor, &level, &s.Cursor.ID, &s.Cursor.Running, &s.StartedAt)
	if isNoRows(err) {
		return KGSession{}, fmt.Errorf("agent session %q: %w (call kg_register_session)", id, memory.ErrNotFound)
	}
	if err != nil {
		return KGSession{}, fmt.Errorf("reading agent session %q: %w", id, err)
	}
	s.Level = KGLevel(level)
	return s, nil
}

// KGActiveSessions counts the agent sessions seen since whose actor starts
// with actorPrefix (every one when it is empty).
func (c *Campaign) KGActiveSessions(ctx context.Context, since time.Time, actorPrefix string) (int, error) {
	var n int
	err := c.l1.db.QueryRow(ctx, `SELECT count(*) FROM kg_sessions WHERE campaign_id = $1 AND seen_at >= $2
		AND starts_with(actor, $3)`, c.id, since, actorPrefix).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting agent sessions: %w", err)
	}
	return n, nil
}

// KGChanges is what changed since an agent session started, by others.
type KGChanges struct {
	// Nodes and Edges changed and active now.
	Nodes []KGNode `json:"nodes"`
	Edges []KGEdge `json:"edges"`
	// Removed are nodes and edges deleted, archived or retired since:
	// "node:<level>:<id>", "edge:<level>:<from>:<rel>:<to>".
	Removed []string `json:"removed"`
}

// KGSync returns the changes made after cursor by anyone but exclude, as
// the caller may see them: the DM's level and secret facts only when dm.
// The changes after cursor are those with a higher id and those a
// transaction running at cursor committed since ([ChangeCursor]).
//
// A fact that left the active graph is reported removed by the ends it
// had: to the DM when it was in the DM's graph; to a player when every
// player could read it (migration 0039's gone), or, for a change logged
// before that, when the row, still there, is one this caller could read
// ([Campaign.removedEdge]). A fact the DM made secret thus leaves a
// player's graph, and a secret never reaches it by its removal. A deleted
// artifact edge is named to the DM, and to a player when every player could
// read it (its deletion's gone record, migration 0051; none was kept
// before, and such older deletions are not named to players).
func (c *Campaign) KGSync(ctx context.Context, cursor ChangeCursor, exclude string, dm bool) (KGChanges, error) {
	out := KGChanges{Nodes: []KGNode{}, Edges: []KGEdge{}, Removed: []string{}}
	rows, err := c.l1.db.Query(ctx, `SELECT ch.kind, ch.ref, ch.gone FROM graph_changes ch
		WHERE ch.campaign_id = $1 AND (ch.id > $2 OR `+lateSQL+`) AND ($4 = '' OR ch.actor <> $4) AND ch.kind <> 'proposal'
		  AND `+c.entityChangeVisible()+`
		ORDER BY ch.id`, c.id, cursor.ID, xidTexts(cursor.Running), exclude)
	if err != nil {
		return out, fmt.Errorf("reading changes: %w", err)
	}
	type gone struct {
		From    string `json:"from"`
		Rel     string `json:"rel"`
		To      string `json:"to"`
		DM      bool   `json:"dm"`
		Players bool   `json:"players"`
	}
	type change struct {
		kind, ref string
		gone      *gone
	}
	chs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (change, error) {
		var ch change
		return ch, r.Scan(&ch.kind, &ch.ref, &ch.gone)
	})
	if err != nil {
		return out, fmt.Errorf("reading changes: %w", err)
	}
	changed := map[string]bool{}
	artifactGone := map[string]bool{} // artifact edges deleted that every player could read
	var uniq []change
	for _, ch := range chs {
		if ch.kind == "kg_edge" && ch.gone != nil && ch.gone.Players {
			artifactGone[ch.ref] = true
		}
		if k := ch.kind + "\x00" + ch.ref; !changed[k] {
			changed[k] = true
			uniq = append(uniq, ch)
		}
	}
	levels := []KGLevel{KGCampaign}
	if dm {
		levels = append(levels, KGDM)
	}
	for _, l := range levels {
		nodeKind, edgeKinds := "entity", []string{"fact", "kg_edge"}
		if l == KGDM {
			nodeKind, edgeKinds = "dm_node", []string{"dm_edge"}
		}
		g, err := c.loadKG(ctx, l, dm)
		if err != nil {
			return out, err
		}
		present := map[string]bool{}
		for _, n := range g.nodes {
			present[n.ID] = true
			if !changed[nodeKind+"\x00"+n.ID] {
				continue
			}
			if n.Archived {
				out.Removed = append(out.Removed, "node:"+string(l)+":"+n.ID)
			} else {
				out.Nodes = append(out.Nodes, n)
			}
		}
		seenEdge := map[string]bool{}
		edgeRefs := map[string]bool{}
		for _, e := range g.edges {
			key := e.kind + "\x00" + fmt.Sprint(e.id)
			seenEdge[key] = true
			edgeRefs[e.From+"\x00"+e.Rel+"\x00"+e.To] = true
			if changed[key] {
				out.Edges = append(out.Edges, e)
			}
		}
		if l == KGCampaign {
			// What the changes took out of the graph, as it was: named
			// unless an edge of the same ends is in the graph now (the
			// fact made public again, or another with its ends).
			for _, ch := range chs {
				if ch.kind != "fact" || ch.gone == nil || !(dm && ch.gone.DM || ch.gone.Players) {
					continue
				}
				if !edgeRefs[ch.gone.From+"\x00"+ch.gone.Rel+"\x00"+ch.gone.To] {
					out.Removed = append(out.Removed, "edge:campaign:"+ch.gone.From+":"+KGRel(ch.gone.Rel)+":"+ch.gone.To)
				}
			}
		}
		// An artifact edge still there but not in the caller's graph (it
		// names an entity the player may not see) was not removed: naming
		// it would tell that the DM wrote it.
		hidden := map[string]bool{}
		if l == KGCampaign && !dm {
			var unseen []string
			for _, ch := range uniq {
				if ch.kind == "kg_edge" && !seenEdge[ch.kind+"\x00"+ch.ref] {
					unseen = append(unseen, ch.ref)
				}
			}
			if len(unseen) > 0 {
				rows, err := c.l1.db.Query(ctx, `SELECT id::text FROM kg_edges WHERE campaign_id = $1 AND id::text = ANY($2)`, c.id, unseen)
				if err != nil {
					return out, fmt.Errorf("reading artifact edges: %w", err)
				}
				ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return out, fmt.Errorf("reading artifact edges: %w", err)
				}
				for _, id := range ids {
					hidden[id] = true
				}
			}
		}
		for _, ch := range uniq {
			switch {
			case ch.kind == nodeKind && !present[ch.ref]:
				out.Removed = append(out.Removed, "node:"+string(l)+":"+ch.ref)
			case ch.kind == "kg_edge" && l == KGCampaign && !seenEdge[ch.kind+"\x00"+ch.ref] && !hidden[ch.ref]:
				// Deleted rows are gone; agents learn of them by id: the
				// DM of every one, a player of one every player could
				// read (its deletion's gone record, migration 0051).
				if dm || artifactGone[ch.ref] {
					out.Removed = append(out.Removed, "edge:campaign:artifact:"+ch.ref)
				}
			case slices.Contains(edgeKinds, ch.kind) && ch.kind != "kg_edge" && !seenEdge[ch.kind+"\x00"+ch.ref]:
				// An edge no longer active: name it only if the caller may
				// see it, and only if it is not a proposal.
				ref, ok, err := c.removedEdge(ctx, l, ch.ref, dm)
				if err != nil {
					return out, err
				}
				if ok {
					out.Removed = append(out.Removed, ref)
				}
			}
		}
	}
	sort.Strings(out.Removed)
	out.Removed = slices.Compact(out.Removed)
	return out, nil
}

// removedEdge names an edge that left the active graph, if the caller may
// know of it.
func (c *Campaign) removedEdge(ctx context.Context, l KGLevel, ref string, dm bool) (string, bool, error) {
	if l == KGDM {
		// Deleted rows are gone; the DM learns of them by id.
		return "edge:dm:" + ref, true, nil
	}
	var from, to, rel, status, proposedBy string
	var secret, revealed bool
	// revealed: a player learns of a fact's removal only if they could
	// have read the fact (view.factRevealed: not one told only in a split
	// scene they were not in; view.endsVisibleSQL: not one naming an
	// entity they may not see).
	reveal := "true"
	if c.view.v.Role == memory.RolePlayer {
		reveal = "(" + c.view.factRevealed("r") + " AND " + c.view.endsVisibleSQL("r") + ")"
	}
	err := c.l1.db.QueryRow(ctx, `SELECT r.source_id, r.target_id, r.rel_type, r.status, r.proposed_by,
		coalesce(r.attributes->'secret' = 'true'::jsonb, false), `+reveal+`
		FROM relationships r WHERE r.campaign_id = $1 AND r.id::text = $2`,
		c.id, ref).Scan(&from, &to, &rel, &status, &proposedBy, &secret, &revealed)
	if isNoRows(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("reading fact %s: %w", ref, err)
	}
	// A rejected fact never reached anyone but the DM, nor does its
	// removal.
	if proposedBy != "" || status == string(memory.StatusPending) || ((secret || status == string(memory.StatusRejected) || !revealed) && !dm) {
		return "", false, nil
	}
	return "edge:campaign:" + from + ":" + KGRel(rel) + ":" + to, true, nil
}

// KGLimit is the campaign's token budget.
func (c *Campaign) KGLimit(ctx context.Context) (int, error) {
	var n int
	if err := c.l1.db.QueryRow(ctx, `SELECT kg_token_limit FROM campaigns WHERE id = $1`, c.id).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading the token limit: %w", err)
	}
	return n, nil
}

// CursorKey is the campaign's random secret for keying the cursors shown
// to players (migration 0047). Never show it to anyone.
func (c *Campaign) CursorKey(ctx context.Context) ([]byte, error) {
	var key []byte
	if err := c.l1.db.QueryRow(ctx, `SELECT cursor_key FROM campaigns WHERE id = $1`, c.id).Scan(&key); err != nil {
		return nil, fmt.Errorf("reading the cursor key: %w", err)
	}
	return key, nil
}

// SetKGLimit sets the campaign's token budget.
func (c *Campaign) SetKGLimit(ctx context.Context, n int) error {
	if n <= 0 {
		return fmt.Errorf("%w: the token limit must be positive, got %d", memory.ErrInvalid, n)
	}
	if _, err := c.l1.db.Exec(ctx, `UPDATE campaigns SET kg_token_limit = $2 WHERE id = $1`, c.id, n); err != nil {
		return fmt.Errorf("setting the token limit: %w", err)
	}
	return nil
}

// KGStats sizes a level.
type KGStats struct {
	Level    KGLevel `json:"level"`
	Active   int     `json:"active_nodes"`
	Archived int     `json:"archived_nodes"`
	Edges    int     `json:"edges"`
	Traces   int     `json:"traces"`
	Tokens   int     `json:"tokens"`
}

// KGStats sizes a level as the caller sees it.
func (c *Campaign) KGStats(ctx context.Context, level KGLevel, dm bool) (KGStats, error) {
	g, err := c.loadKG(ctx, level, dm)
	if err != nil {
		return KGStats{}, err
	}
	v := g.view()
	return KGStats{Level: level, Active: len(v.Nodes), Archived: len(g.nodes) - len(v.Nodes), Edges: len(v.Edges),
		Traces: len(v.Traces), Tokens: v.Tokens}, nil
}

// Compaction reports one pass.
type Compaction struct {
	Level    KGLevel `json:"level"`
	Before   int     `json:"tokens_before"`
	After    int     `json:"tokens_after"`
	Limit    int     `json:"limit"`
	Archived int     `json:"archived"`
	Deleted  int     `json:"deleted"`
}

// CompactKG runs one compaction pass on a level as of now. When the level's
// token estimate (what kg_read shows the DM of the DM's level, and every
// player of the campaign level) is above the campaign's limit,
// the lowest-scored nodes are archived until it is under 90% of the limit.
// A node updated within KGProtected is never archived. The score is the
// product of three percentiles among the active nodes: recency (last
// update), connectedness (edges plus touches) and richness (gist and notes
// length). The campaign level is judged by what every player reads of it:
// its public stamps, public facts and public attributes. At the DM's level, archived nodes without an edge to an active
// node are deleted once archived for KGGrace; campaign nodes are the game's
// entities and are never deleted.
func (c *Campaign) CompactKG(ctx context.Context, level KGLevel, now time.Time) (Compaction, error) {
	limit, err := c.KGLimit(ctx)
	if err != nil {
		return Compaction{}, err
	}
	out := Compaction{Level: level, Limit: limit}
	// The campaign level's archiving is shared: a node archived leaves every
	// reader's kg_read. So it is planned on what every player reads (the
	// unbound player's view): the DM's secret facts and private notes, and
	// the stamp their DM-only edits move, would otherwise decide which
	// entities players lose, and a player comparing them with what they
	// read would learn which entities the DM keeps secrets about, and when
	// the DM last wrote of them. The DM's own kg_read of that level may
	// then run past the limit by what only the DM reads.
	src, withSecrets := c, true
	if level == KGCampaign {
		src, withSecrets = newCampaign(c.store, c.db, c.id, c.db.gate, view{v: memory.PlayerViewer()}), false
	}
	g, err := src.loadKG(ctx, level, withSecrets)
	if err != nil {
		return out, err
	}
	v := g.view()
	out.Before, out.After = v.Tokens, v.Tokens
	if v.Tokens > limit {
		archive := plan(g, v.Tokens, limit, now)
		out.Archived = len(archive)
		if len(archive) > 0 {
			q := `UPDATE entities SET kg_archived_at = $3 WHERE campaign_id = $1 AND id = ANY($2)`
			if level == KGDM {
				q = `UPDATE dm_nodes SET archived_at = $3 WHERE campaign_id = $1 AND id = ANY($2)`
			}
			if _, err := c.l1.db.Exec(ctx, q, c.id, archive, now); err != nil {
				return out, fmt.Errorf("archiving %d %s nodes: %w", len(archive), level, err)
			}
			set := make(map[string]bool, len(archive))
			for _, id := range archive {
				set[id] = true
			}
			for i := range g.nodes {
				if set[g.nodes[i].ID] {
					g.nodes[i].Archived = true
				}
			}
			out.After = g.view().Tokens
		}
	}
	if level != KGDM {
		// Campaign nodes are the game's entities: NPCs, retrieval and "as
		// of" still use them, so they stay archived, never deleted.
		return out, nil
	}
	tag, err := c.l1.db.Exec(ctx, `DELETE FROM dm_nodes n WHERE n.campaign_id = $1 AND n.archived_at < $2
		AND NOT EXISTS (SELECT 1 FROM dm_edges e JOIN dm_nodes o ON o.campaign_id = e.campaign_id
		                AND o.id = CASE WHEN e.from_id = n.id THEN e.to_id ELSE e.from_id END
		                WHERE e.campaign_id = n.campaign_id AND (e.from_id = n.id OR e.to_id = n.id) AND o.archived_at IS NULL)`,
		c.id, now.Add(-KGGrace))
	if err != nil {
		return out, fmt.Errorf("deleting long-archived DM nodes: %w", err)
	}
	out.Deleted = int(tag.RowsAffected())
	return out, nil
}

// plan chooses the nodes to archive: the lowest-scored unprotected ones,
// until the estimate is under kgTarget of the limit.
func plan(g kgGraph, total, limit int, now time.Time) []string {
	type cand struct {
		i                   int
		recency, conn, rich float64
		score               float64
		updated             time.Time
	}
	idx := map[string]int{}
	wasArchived := map[string]bool{}
	var cs []cand
	for i, n := range g.nodes {
		if n.Archived {
			wasArchived[n.ID] = true
			continue
		}
		idx[n.ID] = len(cs)
		cs = append(cs, cand{i: i, recency: float64(n.UpdatedAt.UnixNano()), conn: float64(len(n.Touches)),
			rich: float64(len(n.Gist) + len(n.Notes)), updated: n.UpdatedAt})
	}
	if len(cs) == 0 {
		return nil
	}
	adj := make([][]int, len(cs)) // edge indexes per active node
	for ei, e := range g.edges {
		f, fok := idx[e.From]
		t, tok := idx[e.To]
		if fok {
			cs[f].conn++
			adj[f] = append(adj[f], ei)
		}
		if tok && (!fok || t != f) {
			cs[t].conn++
			adj[t] = append(adj[t], ei)
		}
	}
	pct := func(get func(cand) float64) []float64 {
		// cume_dist: the share of nodes at or below this one.
		order := make([]int, len(cs))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return get(cs[order[a]]) < get(cs[order[b]]) })
		out := make([]float64, len(cs))
		for k := 0; k < len(order); {
			j := k
			for j < len(order) && get(cs[order[j]]) == get(cs[order[k]]) {
				j++
			}
			for _, o := range order[k:j] {
				out[o] = float64(j) / float64(len(cs))
			}
			k = j
		}
		return out
	}
	r := pct(func(c cand) float64 { return c.recency })
	cn := pct(func(c cand) float64 { return c.conn })
	ri := pct(func(c cand) float64 { return c.rich })
	for k := range cs {
		cs[k].score = r[k] * cn[k] * ri[k]
	}
	order := make([]int, 0, len(cs))
	for k, c := range cs {
		if now.Sub(c.updated) >= KGProtected {
			order = append(order, k)
		}
	}
	sort.Slice(order, func(a, b int) bool {
		x, y := cs[order[a]], cs[order[b]]
		if x.score != y.score {
			return x.score < y.score
		}
		if !x.updated.Equal(y.updated) {
			return x.updated.Before(y.updated)
		}
		return g.nodes[x.i].ID < g.nodes[y.i].ID
	})
	target := int(math.Floor(kgTarget * float64(limit)))
	archived := map[string]bool{}
	var out []string
	for _, k := range order {
		if total <= target {
			break
		}
		n := g.nodes[cs[k].i]
		archived[n.ID] = true
		out = append(out, n.ID)
		total -= nodeTokens(n)
		for _, ei := range adj[k] {
			e := g.edges[ei]
			other := e.To
			if other == n.ID {
				other = e.From
			}
			switch {
			case other == n.ID:
				total -= edgeTokens(e) // a loop: shown as an edge until now
			case wasArchived[other] || archived[other]:
				total -= traceTokens(e) // a trace, now hidden
			default:
				if _, ok := idx[other]; ok {
					total -= edgeTokens(e) - traceTokens(e) // an edge becomes a trace
				}
			}
		}
	}
	return out
}
