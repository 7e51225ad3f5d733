package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// The memory-tool API (kg_*), in the shapes of the design
// (shared/specs/kg-memory-api.md); see the package doc for the levels.
//
// A node is {"id", "gist", "touches": [...], "notes": [...]} (plus
// glyphoxa's name, type and updated_at); an edge is {"from", "to", "rel",
// "notes": [...]} with a kebab-case rel, and an end may be a node id or an
// artifact reference (a path, path:line: see postgres.IsArtifactRef).
// Nodes at the campaign level are entities; an edge between two entities
// is a fact (through the fact timeline and its writer rules), an edge with
// an artifact end is kept beside the facts. Level "dm" is the DM's private
// notes, which a player token can neither read nor write. Players propose
// (a pending fact, or a proposal the DM resolves), the DM applies.
// Conflict policy: last write wins; call kg_sync before writing.

// KGLevelIn names a level.
type KGLevelIn struct {
	Level string `json:"level" jsonschema:"campaign (the design's project level: shared with the table) or dm (the design's user level: the DM's private notes)"`
}

// KGPutNodeIn writes a node.
type KGPutNodeIn struct {
	Level     string   `json:"level" jsonschema:"campaign (or project) or dm (or user)"`
	ID        string   `json:"id" jsonschema:"the node id, kebab-case (an entity id at the campaign level)"`
	Gist      string   `json:"gist" jsonschema:"the insight, in a line"`
	Touches   []string `json:"touches,omitempty" jsonschema:"light, tentative references: node ids or artifact paths (path, path:line)"`
	Notes     []string `json:"notes,omitempty" jsonschema:"notes, one string each"`
	SessionID string   `json:"session_id,omitempty" jsonschema:"your kg_register_session id, so kg_sync leaves this write out for you"`
	Name      string   `json:"name,omitempty" jsonschema:"display name of a new campaign entity (default: the id)"`
	Type      string   `json:"type,omitempty" jsonschema:"type of a new campaign entity: npc, location, item… (default concept)"`
}

// KGPutEdgeIn writes an edge.
type KGPutEdgeIn struct {
	Level     string   `json:"level" jsonschema:"campaign (or project) or dm (or user)"`
	From      string   `json:"from" jsonschema:"a node id or an artifact reference (path, path:line)"`
	To        string   `json:"to" jsonschema:"a node id or an artifact reference (path, path:line)"`
	Rel       string   `json:"rel" jsonschema:"the relation, kebab-case: located-at, knows, leads-to"`
	Notes     []string `json:"notes,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
}

// KGNodeRefIn names a node.
type KGNodeRefIn struct {
	Level     string `json:"level" jsonschema:"campaign (or project) or dm (or user)"`
	ID        string `json:"id"`
	SessionID string `json:"session_id,omitempty"`
}

// KGEdgeRefIn names an edge.
type KGEdgeRefIn struct {
	Level     string `json:"level" jsonschema:"campaign (or project) or dm (or user)"`
	From      string `json:"from"`
	To        string `json:"to"`
	Rel       string `json:"rel"`
	SessionID string `json:"session_id,omitempty"`
}

// KGSyncIn names the caller's session.
type KGSyncIn struct {
	SessionID string `json:"session_id" jsonschema:"the id kg_register_session returned"`
}

// KGNodeOut is a node in the design's shape, with glyphoxa's name, type
// and last update beside it.
type KGNodeOut struct {
	ID        string    `json:"id"`
	Gist      string    `json:"gist"`
	Touches   []string  `json:"touches"`
	Notes     []string  `json:"notes"`
	Name      string    `json:"name,omitempty"`
	Type      string    `json:"type,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
	Archived  bool      `json:"archived,omitempty"`
}

// KGEdgeOut is an edge in the design's shape.
type KGEdgeOut struct {
	From  string   `json:"from"`
	To    string   `json:"to"`
	Rel   string   `json:"rel"`
	Notes []string `json:"notes"`
}

// KGGraph is one level's active graph.
type KGGraph struct {
	Nodes []KGNodeOut `json:"nodes"`
	Edges []KGEdgeOut `json:"edges"`
	// Traces are edges from an active node to an archived one ("memory
	// traces"): kg_recall brings the archived end back.
	Traces []KGEdgeOut `json:"traces"`
	// Tokens is the estimate compaction keeps under the limit.
	Tokens int `json:"tokens"`
}

// KGReadOut is kg_read's answer: one graph per level the caller may read
// (a player token gets the campaign level only).
type KGReadOut struct {
	Campaign *KGGraph `json:"campaign,omitempty"`
	DM       *KGGraph `json:"dm,omitempty"`
}

// KGWriteOut says what a kg write did: "applied" (DM) or "proposed".
type KGWriteOut struct {
	Result     string     `json:"result"`
	Node       *KGNodeOut `json:"node,omitempty"`
	ProposalID int64      `json:"proposal_id,omitempty"`
}

// KGLevelChanges is what changed on one level.
type KGLevelChanges struct {
	Nodes []KGNodeOut `json:"nodes"`
	Edges []KGEdgeOut `json:"edges"`
	// Removed names nodes and edges deleted, archived or retired:
	// "node:<level>:<id>", "edge:<level>:<from>:<rel>:<to>", or, for a
	// deleted edge whose ends are gone with it, "edge:dm:<n>" and
	// "edge:campaign:artifact:<n>".
	Removed []string `json:"removed"`
}

// KGChangesOut are the changes per level the caller may read.
type KGChangesOut struct {
	Campaign *KGLevelChanges `json:"campaign,omitempty"`
	DM       *KGLevelChanges `json:"dm,omitempty"`
}

// KGSyncOut is what others changed since the session started.
type KGSyncOut struct {
	SessionID string `json:"session_id"`
	// SinceTS is when the session started, in Unix seconds.
	SinceTS      int64        `json:"since_ts"`
	Changes      KGChangesOut `json:"changes"`
	TotalChanges int          `json:"total_changes"`
}

// KGRecallOut is kg_recall's answer.
type KGRecallOut struct {
	Recalled bool      `json:"recalled"`
	Node     KGNodeOut `json:"node"`
}

// KGPingOut reports counts and active sessions.
type KGPingOut struct {
	Campaign string           `json:"campaign"`
	Role     Role             `json:"your_role"`
	Limit    int              `json:"token_limit"`
	Levels   []access.KGStats `json:"levels"`
	Counts   access.Counts    `json:"counts"`
	// ActiveSessions counts the registered sessions seen in the last 30
	// minutes: every one for the DM, a player's own (their token's, from
	// the same client) for a player.
	ActiveSessions int `json:"active_sessions"`
	// Clients counts the MCP clients connected to the server (DM only).
	Clients int `json:"connected_clients,omitempty"`
}

// kgSessionActive is how recently a registered session must have called to
// count as active.
const kgSessionActive = 30 * time.Minute

func (s *Server) registerKG() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_read", Description: "Read the memory graph: one graph per level you may read ({\"campaign\": {nodes, edges, traces}, \"dm\": …}); traces are edges to archived nodes you can kg_recall."}, s.kgRead)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_sync", Description: "What others changed since your session started (call before writing): since_ts, changes per level, total_changes."}, s.kgSync)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_put_node", Description: "Add or update a node (a proposal for the DM unless you hold the DM token)."}, s.kgPutNode)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_put_edge", Description: "Add or update an edge; an end may be a node id or an artifact path (a proposal for the DM unless you hold the DM token)."}, s.kgPutEdge)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_delete_node", Description: "Remove a node and every edge touching it (a proposal unless DM)."}, s.kgDeleteNode)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_delete_edge", Description: "Remove one edge (a proposal unless DM)."}, s.kgDeleteEdge)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_register_session", Description: "Start a session: kg_sync with its id reports what others change from now on."}, s.kgRegister)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_recall", Description: "Bring an archived node back into the active graph: {\"recalled\": true, \"node\": …}."}, s.kgRecall)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_ping", Description: "Health: node and edge counts per level, token estimate and limit, active sessions."}, s.kgPing)
}

var errDMLevel = errors.New(`level "dm" (the design's "user" level) holds the DM's private notes: only the DM token can use it`)

// level checks the level a caller names: glyphoxa's names or the
// design's (project is the campaign, user is the DM's).
func (who caller) level(l string) (access.KGLevel, error) {
	var lv access.KGLevel
	switch strings.ToLower(strings.TrimSpace(l)) {
	case "", "campaign", "project":
		lv = access.KGCampaign
	case "dm", "user":
		lv = access.KGDM
	default:
		return "", fmt.Errorf("unknown level %q: use campaign (or project) or dm (or user)", l)
	}
	if lv == access.KGDM && who.role != RoleDM {
		return "", errDMLevel
	}
	return lv, nil
}

// storeRel is how a relation is stored: LOCATED_AT for located-at, as the
// rest of glyphoxa names relations.
func storeRel(rel string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == ' ' {
			return '_'
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(rel)))
}

func nodeOut(n access.KGNode) KGNodeOut {
	return KGNodeOut{ID: n.ID, Gist: n.Gist, Touches: nonNil(n.Touches), Notes: nonNil(n.Notes), Name: n.Name, Type: n.Type,
		UpdatedAt: n.UpdatedAt.UTC(), Archived: n.Archived}
}

func edgeOut(e access.KGEdge) KGEdgeOut {
	return KGEdgeOut{From: e.From, To: e.To, Rel: access.KGRel(e.Rel), Notes: nonNil(e.Notes)}
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}

// levelGraph renders the part of a view on level l.
func levelGraph(v access.KGView, l access.KGLevel) *KGGraph {
	g := &KGGraph{Nodes: []KGNodeOut{}, Edges: []KGEdgeOut{}, Traces: []KGEdgeOut{}}
	for _, n := range v.Nodes {
		if n.Level == l {
			g.Nodes = append(g.Nodes, nodeOut(n))
		}
	}
	for _, e := range v.Edges {
		if e.Level == l {
			g.Edges = append(g.Edges, edgeOut(e))
		}
	}
	for _, e := range v.Traces {
		if e.Level == l {
			g.Traces = append(g.Traces, edgeOut(e))
		}
	}
	return g
}

// kgActor is the writer named in the change log: the registered session's
// actor when the call names one, else the caller.
func (s *Server) kgActor(ctx context.Context, who caller, sessionID string) (string, error) {
	if sessionID == "" {
		return who.actor, nil
	}
	c, err := s.campaign(ctx, who)
	if err != nil {
		return "", err
	}
	sess, err := c.KGSessionByID(ctx, sessionID, s.now())
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(sess.Actor, "mcp:"+string(who.role)+":") {
		return "", fmt.Errorf("agent session %q: %w (call kg_register_session)", sessionID, memory.ErrNotFound)
	}
	return sess.Actor, nil
}

func (s *Server) now() time.Time { return s.clock.Now() }

func (s *Server) kgRead(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, KGReadOut, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGReadOut{}, err
	}
	v, err := c.KGRead(ctx)
	if err != nil {
		return nil, KGReadOut{}, err
	}
	out := KGReadOut{Campaign: levelGraph(v, access.KGCampaign)}
	if who.role == RoleDM {
		out.DM = levelGraph(v, access.KGDM)
	}
	out.Campaign.Tokens = v.LevelTokens[access.KGCampaign]
	if out.DM != nil {
		out.DM.Tokens = v.LevelTokens[access.KGDM]
	}
	return nil, out, nil
}

func (s *Server) kgSync(ctx context.Context, req *mcp.CallToolRequest, in KGSyncIn) (*mcp.CallToolResult, KGSyncOut, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGSyncOut{}, err
	}
	sess, err := c.KGSessionByID(ctx, in.SessionID, s.now())
	if err != nil || !strings.HasPrefix(sess.Actor, "mcp:"+string(who.role)+":") {
		return nil, KGSyncOut{}, fmt.Errorf("agent session %q: %w (call kg_register_session)", in.SessionID, memory.ErrNotFound)
	}
	ch, err := c.KGSync(ctx, sess.Cursor, sess.Actor)
	if err != nil {
		return nil, KGSyncOut{}, err
	}
	out := KGSyncOut{SessionID: sess.ID, SinceTS: sess.StartedAt.Unix()}
	levels := []access.KGLevel{access.KGCampaign}
	if who.role == RoleDM {
		levels = append(levels, access.KGDM)
	}
	for _, l := range levels {
		lc := &KGLevelChanges{Nodes: []KGNodeOut{}, Edges: []KGEdgeOut{}, Removed: []string{}}
		for _, n := range ch.Nodes {
			if n.Level == l {
				lc.Nodes = append(lc.Nodes, nodeOut(n))
			}
		}
		for _, e := range ch.Edges {
			if e.Level == l {
				lc.Edges = append(lc.Edges, edgeOut(e))
			}
		}
		for _, r := range ch.Removed {
			if strings.HasPrefix(r, "node:"+string(l)+":") || strings.HasPrefix(r, "edge:"+string(l)+":") {
				lc.Removed = append(lc.Removed, r)
			}
		}
		out.TotalChanges += len(lc.Nodes) + len(lc.Edges) + len(lc.Removed)
		if l == access.KGDM {
			out.Changes.DM = lc
		} else {
			out.Changes.Campaign = lc
		}
	}
	return nil, out, nil
}

func (s *Server) kgRegister(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, access.KGSession, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, access.KGSession{}, err
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, access.KGSession{}, fmt.Errorf("making a session id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	level := access.KGCampaign
	if who.role == RoleDM {
		level = access.KGDM
	}
	sess, err := c.KGRegisterSession(ctx, id, who.actor+"#"+id, level, s.now())
	return nil, sess, err
}

// kgWrite runs apply for the DM, or records a proposal of kind for others,
// as actor.
func (s *Server) kgWrite(ctx context.Context, who caller, actor, kind string, payload any, apply func(*access.Campaign) (KGWriteOut, error)) (*mcp.CallToolResult, KGWriteOut, error) {
	var out KGWriteOut
	camp, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	err = camp.InTx(ctx, actor, func(c *access.Campaign) error {
		if who.role == RoleDM {
			var err error
			out, err = apply(c)
			out.Result = "applied"
			return err
		}
		pid, err := c.Propose(ctx, kind, payload, actor)
		out = KGWriteOut{Result: "proposed", ProposalID: pid}
		return err
	})
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	return nil, out, nil
}

func (s *Server) kgPutNode(ctx context.Context, req *mcp.CallToolRequest, in KGPutNodeIn) (*mcp.CallToolResult, KGWriteOut, error) {
	who := s.caller(req)
	lv, err := who.level(in.Level)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	if strings.TrimSpace(in.ID) == "" || strings.TrimSpace(in.Gist) == "" {
		return nil, KGWriteOut{}, errors.New("kg_put_node needs an id and a gist")
	}
	actor, err := s.kgActor(ctx, who, in.SessionID)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	n := access.KGNodeInput{ID: in.ID, Gist: in.Gist, Touches: in.Touches, Notes: in.Notes, Name: in.Name, Type: in.Type}
	in.SessionID = ""
	in.Level = string(lv)
	return s.kgWrite(ctx, who, actor, "kg_put_node", in, func(c *access.Campaign) (KGWriteOut, error) {
		node, err := c.KGPutNode(ctx, lv, n, s.now())
		out := nodeOut(node)
		return KGWriteOut{Node: &out}, err
	})
}

// artifactEdge reports whether an edge has an artifact end.
func artifactEdge(from, to string) bool {
	return access.IsArtifactRef(from) || access.IsArtifactRef(to)
}

func (s *Server) kgPutEdge(ctx context.Context, req *mcp.CallToolRequest, in KGPutEdgeIn) (*mcp.CallToolResult, KGWriteOut, error) {
	who := s.caller(req)
	lv, err := who.level(in.Level)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	if strings.TrimSpace(in.From) == "" || strings.TrimSpace(in.To) == "" || strings.TrimSpace(in.Rel) == "" {
		return nil, KGWriteOut{}, errors.New("kg_put_edge needs from, to and rel")
	}
	actor, err := s.kgActor(ctx, who, in.SessionID)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	rel := storeRel(in.Rel)
	if lv == access.KGDM {
		return s.kgWrite(ctx, who, actor, "", nil, func(c *access.Campaign) (KGWriteOut, error) {
			return KGWriteOut{}, c.KGPutDMEdge(ctx, in.From, in.To, rel, in.Notes, s.now())
		})
	}
	if artifactEdge(in.From, in.To) {
		in.SessionID, in.Level, in.Rel = "", string(lv), rel
		return s.kgWrite(ctx, who, actor, "kg_put_edge", in, func(c *access.Campaign) (KGWriteOut, error) {
			return KGWriteOut{}, c.KGPutArtifactEdge(ctx, in.From, in.To, rel, in.Notes, s.now())
		})
	}
	// Campaign edges between entities are facts: through the fact
	// timeline, whose writer rules decide (players and NPCs propose; the
	// store tells nobody but the DM what canon holds).
	var out KGWriteOut
	camp, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	err = camp.InTx(ctx, actor, func(c *access.Campaign) error {
		attrs := map[string]any{}
		if len(in.Notes) > 0 {
			attrs["notes"] = in.Notes
		}
		r := memory.Relationship{SourceID: in.From, TargetID: in.To, Type: rel, Attributes: attrs,
			Provenance: memory.Provenance{Timestamp: s.now(), Confidence: 1, Source: memory.SourceStated}}
		if _, err := c.Graph().WriteFact(ctx, who.writer(), r, strings.Join(in.Notes, "; ")); err != nil {
			return err
		}
		out.Result = "proposed"
		if who.role == RoleDM {
			out.Result = "applied"
			// Writing an edge refreshes both ends.
			for _, id := range []string{in.From, in.To} {
				if _, err := c.KGRecall(ctx, access.KGCampaign, id, false, s.now()); err != nil && !errors.Is(err, memory.ErrNotFound) {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	return nil, out, nil
}

func (s *Server) kgDeleteNode(ctx context.Context, req *mcp.CallToolRequest, in KGNodeRefIn) (*mcp.CallToolResult, KGWriteOut, error) {
	who := s.caller(req)
	lv, err := who.level(in.Level)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	actor, err := s.kgActor(ctx, who, in.SessionID)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	// A player's proposal has the shape delete_node proposals always had.
	return s.kgWrite(ctx, who, actor, "delete_node", RefIn{ID: in.ID}, func(c *access.Campaign) (KGWriteOut, error) {
		if lv == access.KGDM {
			return KGWriteOut{}, c.KGDeleteDMNode(ctx, in.ID)
		}
		// At the campaign level the entity is archived and its facts
		// retired: NPCs' history and "as of" keep them.
		return KGWriteOut{}, archiveEntity(ctx, c, in.ID)
	})
}

func (s *Server) kgDeleteEdge(ctx context.Context, req *mcp.CallToolRequest, in KGEdgeRefIn) (*mcp.CallToolResult, KGWriteOut, error) {
	who := s.caller(req)
	lv, err := who.level(in.Level)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	actor, err := s.kgActor(ctx, who, in.SessionID)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	rel := storeRel(in.Rel)
	if lv == access.KGCampaign && artifactEdge(in.From, in.To) {
		in.SessionID, in.Level, in.Rel = "", string(lv), rel
		return s.kgWrite(ctx, who, actor, "kg_delete_edge", in, func(c *access.Campaign) (KGWriteOut, error) {
			return KGWriteOut{}, c.KGDeleteArtifactEdge(ctx, in.From, in.To, rel)
		})
	}
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	var factID int64
	if lv == access.KGCampaign {
		if factID, err = c.CanonFactID(ctx, in.From, in.To, rel); err != nil {
			return nil, KGWriteOut{}, err
		}
	}
	// A player's proposal names the fact for the DM (even a hidden one:
	// only the DM reads proposals); the player's answer is the same either
	// way.
	payload := RefIn{ID: fmt.Sprint(factID)}
	return s.kgWrite(ctx, who, actor, "delete_edge", payload, func(c *access.Campaign) (KGWriteOut, error) {
		if lv == access.KGDM {
			return KGWriteOut{}, c.KGDeleteDMEdge(ctx, in.From, in.To, rel)
		}
		if factID == 0 {
			return KGWriteOut{}, fmt.Errorf("no edge %s -%s-> %s: %w", in.From, access.KGRel(rel), in.To, memory.ErrNotFound)
		}
		_, err := c.Graph().RetireFact(ctx, factID, "")
		return KGWriteOut{}, err
	})
}

func (s *Server) kgRecall(ctx context.Context, req *mcp.CallToolRequest, in KGNodeRefIn) (*mcp.CallToolResult, KGRecallOut, error) {
	who := s.caller(req)
	lv, err := who.level(in.Level)
	if err != nil {
		return nil, KGRecallOut{}, err
	}
	actor, err := s.kgActor(ctx, who, in.SessionID)
	if err != nil {
		return nil, KGRecallOut{}, err
	}
	var n access.KGNode
	camp, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGRecallOut{}, err
	}
	err = camp.InTx(ctx, actor, func(c *access.Campaign) error {
		var err error
		// Only the DM can bring back what the DM deleted; anyone can bring
		// back what compaction archived.
		n, err = c.KGRecall(ctx, lv, in.ID, who.role == RoleDM, s.now())
		return err
	})
	if err != nil {
		return nil, KGRecallOut{}, err
	}
	return nil, KGRecallOut{Recalled: true, Node: nodeOut(n)}, nil
}

func (s *Server) kgPing(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, KGPingOut, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGPingOut{}, err
	}
	out := KGPingOut{Campaign: s.cfg.Campaign, Role: who.role}
	if out.Limit, err = c.KGLimit(ctx); err != nil {
		return nil, KGPingOut{}, err
	}
	levels := []access.KGLevel{access.KGCampaign}
	if who.role == RoleDM {
		levels = append(levels, access.KGDM)
	}
	for _, l := range levels {
		st, err := c.KGStats(ctx, l)
		if err != nil {
			return nil, KGPingOut{}, err
		}
		out.Levels = append(out.Levels, st)
	}
	if out.Counts, err = c.Counts(ctx); err != nil {
		return nil, KGPingOut{}, err
	}
	// A player counts only their own sessions (their token's, from the
	// same client): how many others are connected, and whether the DM's
	// assistant is at work, is not theirs to know. The server's
	// connected clients are the DM's to count.
	own := ""
	if who.role != RoleDM {
		own = who.actor + "#"
	}
	if out.ActiveSessions, err = c.KGActiveSessions(ctx, s.now().Add(-kgSessionActive), own); err != nil {
		return nil, KGPingOut{}, err
	}
	if who.role == RoleDM {
		for range s.mcp.Sessions() {
			out.Clients++
		}
	}
	return nil, out, nil
}

// applyKGProposal applies an accepted kg_* proposal (see resolve_proposal).
func (s *Server) applyKGProposal(ctx context.Context, c *access.Campaign, p access.Proposal) (string, error) {
	switch p.Kind {
	case "kg_put_node":
		// Proposals stored before notes became a list hold a string.
		var in struct {
			KGPutNodeIn
			Notes json.RawMessage `json:"notes"`
		}
		if err := unmarshal(p.Payload, &in); err != nil {
			return "", err
		}
		var notes []string
		if len(in.Notes) > 0 && json.Unmarshal(in.Notes, &notes) != nil {
			var one string
			if err := unmarshal(in.Notes, &one); err != nil {
				return "", err
			}
			notes = []string{one}
		}
		_, err := c.KGPutNode(ctx, access.KGCampaign, access.KGNodeInput{ID: in.ID, Gist: in.Gist, Touches: in.Touches,
			Notes: notes, Name: in.Name, Type: in.Type}, s.now())
		return in.ID, err
	case "kg_put_edge":
		var in KGPutEdgeIn
		if err := unmarshal(p.Payload, &in); err != nil {
			return "", err
		}
		return in.From + " " + access.KGRel(in.Rel) + " " + in.To, c.KGPutArtifactEdge(ctx, in.From, in.To, storeRel(in.Rel), in.Notes, s.now())
	case "kg_delete_edge":
		var in KGEdgeRefIn
		if err := unmarshal(p.Payload, &in); err != nil {
			return "", err
		}
		return in.From + " " + access.KGRel(in.Rel) + " " + in.To, c.KGDeleteArtifactEdge(ctx, in.From, in.To, storeRel(in.Rel))
	}
	return "", fmt.Errorf("unknown proposal kind %q", p.Kind)
}
