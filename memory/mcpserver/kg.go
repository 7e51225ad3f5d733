package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// The memory-tool API (kg_*). Nodes are entities (gist: a one-line
// summary; touches: light links to other nodes; notes: caveats), edges are
// facts. Level "campaign" is shared with the table; level "dm" is the DM's
// private notes, which a player token can neither read nor write. Players
// propose (a pending fact, or a proposal the DM resolves), the DM applies.
// Conflict policy: last write wins; call kg_sync before writing.

// KGLevelIn names a level.
type KGLevelIn struct {
	Level string `json:"level" jsonschema:"campaign (shared with the table) or dm (the DM's private notes)"`
}

// KGPutNodeIn writes a node.
type KGPutNodeIn struct {
	Level     string   `json:"level" jsonschema:"campaign or dm"`
	ID        string   `json:"id" jsonschema:"the node id (an entity id at the campaign level)"`
	Gist      string   `json:"gist" jsonschema:"a one-line summary"`
	Touches   []string `json:"touches,omitempty" jsonschema:"ids of nodes this one touches (light links)"`
	Notes     string   `json:"notes,omitempty" jsonschema:"caveats"`
	SessionID string   `json:"session_id,omitempty" jsonschema:"your kg_register_session id, so kg_sync leaves this write out for you"`
	Name      string   `json:"name,omitempty" jsonschema:"display name of a new campaign entity (default: the id)"`
	Type      string   `json:"type,omitempty" jsonschema:"type of a new campaign entity: npc, location, item… (default concept)"`
}

// KGPutEdgeIn writes an edge.
type KGPutEdgeIn struct {
	Level     string `json:"level" jsonschema:"campaign or dm"`
	From      string `json:"from"`
	To        string `json:"to"`
	Rel       string `json:"rel" jsonschema:"the relation, e.g. LOCATED_AT, KNOWS"`
	Notes     string `json:"notes,omitempty"`
	SessionID string `json:"session_id,omitempty"`
}

// KGNodeRefIn names a node.
type KGNodeRefIn struct {
	Level     string `json:"level" jsonschema:"campaign or dm"`
	ID        string `json:"id"`
	SessionID string `json:"session_id,omitempty"`
}

// KGEdgeRefIn names an edge.
type KGEdgeRefIn struct {
	Level     string `json:"level" jsonschema:"campaign or dm"`
	From      string `json:"from"`
	To        string `json:"to"`
	Rel       string `json:"rel"`
	SessionID string `json:"session_id,omitempty"`
}

// KGSyncIn names the caller's session.
type KGSyncIn struct {
	SessionID string `json:"session_id" jsonschema:"the id kg_register_session returned"`
}

// KGWriteOut says what a kg write did: "applied" (DM) or "proposed".
type KGWriteOut struct {
	Result     string           `json:"result"`
	Node       *postgres.KGNode `json:"node,omitempty"`
	ProposalID int64            `json:"proposal_id,omitempty"`
}

// KGSyncOut is what others changed since the session started.
type KGSyncOut struct {
	SessionID string `json:"session_id"`
	Since     string `json:"since"`
	postgres.KGChanges
}

// KGPingOut reports counts and active sessions.
type KGPingOut struct {
	Campaign       string             `json:"campaign"`
	Role           Role               `json:"your_role"`
	Limit          int                `json:"token_limit"`
	Levels         []postgres.KGStats `json:"levels"`
	Counts         postgres.Counts    `json:"counts"`
	ActiveSessions int                `json:"active_sessions"`
	Clients        int                `json:"connected_clients"`
}

// kgSessionActive is how recently a registered session must have called to
// count as active.
const kgSessionActive = 30 * time.Minute

func (s *Server) registerKG() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_read", Description: "Read the memory graph: active nodes of both levels you may see, edges among them, and traces to archived nodes."}, s.kgRead)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_sync", Description: "What others changed since your session started (call before writing)."}, s.kgSync)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_put_node", Description: "Create or update a node (a proposal for the DM unless you hold the DM token)."}, s.kgPutNode)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_put_edge", Description: "Create or update an edge (a proposal for the DM unless you hold the DM token)."}, s.kgPutEdge)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_delete_node", Description: "Delete a node and its edges (a proposal unless DM)."}, s.kgDeleteNode)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_delete_edge", Description: "Delete an edge (a proposal unless DM)."}, s.kgDeleteEdge)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_register_session", Description: "Start a session: kg_sync with its id reports what others change from now on."}, s.kgRegister)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_recall", Description: "Bring an archived node back, refreshing it."}, s.kgRecall)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "kg_ping", Description: "Counts per level, token estimate and limit, active sessions."}, s.kgPing)
}

var errDMLevel = errors.New(`level "dm" holds the DM's private notes: only the DM token can use it`)

// level checks the level a caller names.
func (who caller) level(l string) (postgres.KGLevel, error) {
	lv := postgres.KGLevel(strings.TrimSpace(l))
	if lv == "" {
		lv = postgres.KGCampaign
	}
	if !lv.Valid() {
		return "", fmt.Errorf("unknown level %q: use campaign or dm", l)
	}
	if lv == postgres.KGDM && who.role != RoleDM {
		return "", errDMLevel
	}
	return lv, nil
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

func (s *Server) kgRead(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, postgres.KGView, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, postgres.KGView{}, err
	}
	v, err := c.KGRead(ctx, who.role == RoleDM)
	return nil, v, err
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
	ch, err := c.KGSync(ctx, sess.Cursor, sess.Actor, who.role == RoleDM)
	if err != nil {
		return nil, KGSyncOut{}, err
	}
	return nil, KGSyncOut{SessionID: sess.ID, Since: sess.StartedAt.UTC().Format(time.RFC3339), KGChanges: ch}, nil
}

func (s *Server) kgRegister(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, postgres.KGSession, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, postgres.KGSession{}, err
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, postgres.KGSession{}, fmt.Errorf("making a session id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	level := postgres.KGCampaign
	if who.role == RoleDM {
		level = postgres.KGDM
	}
	sess, err := c.KGRegisterSession(ctx, id, who.actor+"#"+id, level, s.now())
	return nil, sess, err
}

// kgWrite runs apply for the DM, or records a proposal of kind for others,
// as actor.
func (s *Server) kgWrite(ctx context.Context, who caller, actor, kind string, payload any, apply func(*postgres.Campaign) (KGWriteOut, error)) (*mcp.CallToolResult, KGWriteOut, error) {
	var out KGWriteOut
	err := s.cfg.Store.InTxAs(ctx, s.cfg.Campaign, actor, func(c *postgres.Campaign) error {
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
	n := postgres.KGNodeInput{ID: in.ID, Gist: in.Gist, Touches: in.Touches, Notes: in.Notes, Name: in.Name, Type: in.Type}
	in.SessionID = ""
	return s.kgWrite(ctx, who, actor, "kg_put_node", in, func(c *postgres.Campaign) (KGWriteOut, error) {
		node, err := c.KGPutNode(ctx, lv, n, s.now())
		return KGWriteOut{Node: &node}, err
	})
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
	if lv == postgres.KGDM {
		return s.kgWrite(ctx, who, actor, "", nil, func(c *postgres.Campaign) (KGWriteOut, error) {
			return KGWriteOut{}, c.KGPutDMEdge(ctx, in.From, in.To, strings.ToUpper(in.Rel), in.Notes, s.now())
		})
	}
	// Campaign edges are facts: through the fact timeline, whose writer
	// rules decide (players and NPCs propose; the store tells nobody but
	// the DM what canon holds).
	var out KGWriteOut
	err = s.cfg.Store.InTxAs(ctx, s.cfg.Campaign, actor, func(c *postgres.Campaign) error {
		attrs := map[string]any{}
		if in.Notes != "" {
			attrs["notes"] = in.Notes
		}
		r := memory.Relationship{SourceID: in.From, TargetID: in.To, Type: strings.ToUpper(strings.TrimSpace(in.Rel)), Attributes: attrs,
			Provenance: memory.Provenance{Timestamp: s.now(), Confidence: 1, Source: memory.SourceStated}}
		if _, err := c.Graph().WriteFact(ctx, who.writer(), r, in.Notes); err != nil {
			return err
		}
		out.Result = "proposed"
		if who.role == RoleDM {
			out.Result = "applied"
			// Writing an edge refreshes both ends.
			for _, id := range []string{in.From, in.To} {
				if _, err := c.KGRecall(ctx, postgres.KGCampaign, id, false, s.now()); err != nil && !errors.Is(err, memory.ErrNotFound) {
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
	return s.kgWrite(ctx, who, actor, "delete_node", RefIn{ID: in.ID}, func(c *postgres.Campaign) (KGWriteOut, error) {
		if lv == postgres.KGDM {
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
	rel := strings.ToUpper(strings.TrimSpace(in.Rel))
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, KGWriteOut{}, err
	}
	var factID int64
	if lv == postgres.KGCampaign {
		if factID, err = c.CanonFactID(ctx, in.From, in.To, rel); err != nil {
			return nil, KGWriteOut{}, err
		}
	}
	// A player's proposal names the fact for the DM (even a hidden one:
	// only the DM reads proposals); the player's answer is the same either
	// way.
	payload := RefIn{ID: fmt.Sprint(factID)}
	return s.kgWrite(ctx, who, actor, "delete_edge", payload, func(c *postgres.Campaign) (KGWriteOut, error) {
		if lv == postgres.KGDM {
			return KGWriteOut{}, c.KGDeleteDMEdge(ctx, in.From, in.To, rel)
		}
		if factID == 0 {
			return KGWriteOut{}, fmt.Errorf("no edge %s -%s-> %s: %w", in.From, rel, in.To, memory.ErrNotFound)
		}
		_, err := c.Graph().RetireFact(ctx, factID, "")
		return KGWriteOut{}, err
	})
}

func (s *Server) kgRecall(ctx context.Context, req *mcp.CallToolRequest, in KGNodeRefIn) (*mcp.CallToolResult, postgres.KGNode, error) {
	who := s.caller(req)
	lv, err := who.level(in.Level)
	if err != nil {
		return nil, postgres.KGNode{}, err
	}
	actor, err := s.kgActor(ctx, who, in.SessionID)
	if err != nil {
		return nil, postgres.KGNode{}, err
	}
	var n postgres.KGNode
	err = s.cfg.Store.InTxAs(ctx, s.cfg.Campaign, actor, func(c *postgres.Campaign) error {
		// The node comes back as the caller's role may read it.
		c, err := c.As(who.role.Viewer())
		if err != nil {
			return err
		}
		// Only the DM can bring back what the DM deleted; anyone can bring
		// back what compaction archived.
		n, err = c.KGRecall(ctx, lv, in.ID, who.role == RoleDM, s.now())
		return err
	})
	return nil, n, err
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
	levels := []postgres.KGLevel{postgres.KGCampaign}
	if who.role == RoleDM {
		levels = append(levels, postgres.KGDM)
	}
	for _, l := range levels {
		st, err := c.KGStats(ctx, l, who.role == RoleDM)
		if err != nil {
			return nil, KGPingOut{}, err
		}
		out.Levels = append(out.Levels, st)
	}
	if out.Counts, err = c.Counts(ctx); err != nil {
		return nil, KGPingOut{}, err
	}
	if out.ActiveSessions, err = c.KGActiveSessions(ctx, s.now().Add(-kgSessionActive)); err != nil {
		return nil, KGPingOut{}, err
	}
	for range s.mcp.Sessions() {
		out.Clients++
	}
	return nil, out, nil
}

// applyKGProposal applies an accepted kg_* proposal (see resolve_proposal).
func (s *Server) applyKGProposal(ctx context.Context, c *postgres.Campaign, p postgres.Proposal) (string, error) {
	switch p.Kind {
	case "kg_put_node":
		var in KGPutNodeIn
		if err := unmarshal(p.Payload, &in); err != nil {
			return "", err
		}
		_, err := c.KGPutNode(ctx, postgres.KGCampaign, postgres.KGNodeInput{ID: in.ID, Gist: in.Gist, Touches: in.Touches,
			Notes: in.Notes, Name: in.Name, Type: in.Type}, s.now())
		return in.ID, err
	}
	return "", fmt.Errorf("unknown proposal kind %q", p.Kind)
}
