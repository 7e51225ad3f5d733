package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// ReadGraphIn filters read_graph.
type ReadGraphIn struct {
	Name  string `json:"name,omitempty" jsonschema:"only entities whose name or alias contains this"`
	Type  string `json:"type,omitempty" jsonschema:"only entities of this type (npc, location, item, faction…)"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many entities (default 100)"`
}

// ReadGraphOut is the graph.
type ReadGraphOut struct {
	Entities []Entity `json:"entities"`
	Facts    []Fact   `json:"facts"`
	// Archived lists archived entities and retired facts as traces.
	Archived []Trace `json:"archived"`
	// Proposals waiting for the DM (DM callers only).
	Proposals []Proposal `json:"proposals,omitempty"`
}

// Proposal is an agent's change waiting for the DM.
type Proposal struct {
	ID      int64          `json:"id"`
	Kind    string         `json:"kind"`
	Payload map[string]any `json:"payload"`
	Actor   string         `json:"actor"`
	At      string         `json:"at"`
}

// PutNodeIn creates or changes an entity.
type PutNodeIn struct {
	ID         string         `json:"id,omitempty" jsonschema:"the entity id; derived from the name when empty"`
	Type       string         `json:"type" jsonschema:"npc, player, location, item, faction, event, quest, concept…"`
	Name       string         `json:"name"`
	Aliases    []string       `json:"aliases,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

// RefIn names a node or a fact.
type RefIn struct {
	ID string `json:"id" jsonschema:"an entity id, or a fact id such as 12"`
}

// PutEdgeIn records a fact.
type PutEdgeIn struct {
	Source     string         `json:"source" jsonschema:"the source entity id"`
	Type       string         `json:"type" jsonschema:"the relationship, e.g. LOCATED_AT, KNOWS, OWNS"`
	Target     string         `json:"target" jsonschema:"the target entity id"`
	Attributes map[string]any `json:"attributes,omitempty"`
	Confidence float64        `json:"confidence,omitempty" jsonschema:"0..1 (default 1)"`
	Reason     string         `json:"reason,omitempty" jsonschema:"why (DM): a fact it supersedes is retired with this reason"`
}

// ChangeOut says what a write did.
type ChangeOut struct {
	// Result is "applied" (DM) or "proposed" (waiting for the DM).
	Result     string `json:"result"`
	ID         string `json:"id"`
	ProposalID int64  `json:"proposal_id,omitempty"`
}

// RecallOut is an archived node in full.
type RecallOut struct {
	Entity *Entity `json:"entity,omitempty"`
	Fact   *Fact   `json:"fact,omitempty"`
}

// SearchIn searches the session transcripts.
type SearchIn struct {
	Query   string `json:"query" jsonschema:"words; quotes for phrases, - to exclude"`
	Session string `json:"session,omitempty"`
	Limit   int    `json:"limit,omitempty"`
}

// Line is a transcript line.
type Line struct {
	Session string `json:"session"`
	At      string `json:"at"`
	Speaker string `json:"speaker"`
	Text    string `json:"text"`
}

// SearchOut lists lines.
type SearchOut struct {
	Lines []Line `json:"lines"`
}

// AskIn is a question.
type AskIn struct {
	Question string `json:"question"`
	K        int    `json:"k,omitempty" jsonschema:"how many answers (default 5); entities the question names come after them"`
}

// AskOut are the results.
type AskOut struct {
	Results []AskResult `json:"results"`
}

// SyncIn asks for changes after a cursor.
type SyncIn struct {
	Cursor int64 `json:"cursor,omitempty" jsonschema:"the cursor returned by the previous sync (0 for everything)"`
}

// SyncOut lists changes by others and the next cursor.
type SyncOut struct {
	Changes []access.Change `json:"changes"`
	Cursor  int64           `json:"cursor"`
}

// ResolveIn accepts or rejects a proposal.
type ResolveIn struct {
	ID     int64 `json:"id"`
	Accept bool  `json:"accept"`
}

func (s *Server) register() {
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "read_graph", Description: "Read the knowledge graph: entities and facts in force, with traces of archived ones."}, s.readGraph)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "put_node", Description: "Create or change an entity (a proposal for the DM unless you hold the DM token)."}, s.putNode)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "put_edge", Description: "Record a fact between two entities (a pending fact for the DM's review unless DM)."}, s.putEdge)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "delete_edge", Description: "Retire a fact by id (a proposal unless DM)."}, s.deleteEdge)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "recall_node", Description: "Bring back an archived entity or a retired fact in full."}, s.recallNode)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "search_sessions", Description: "Full-text search of what was said in the sessions."}, s.searchSessions)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "ask", Description: "Answer a question from the campaign's memory (hybrid retrieval)."}, s.ask)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "sync", Description: "Changes to the graph since a cursor, leaving out your own writes."}, s.sync)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "resolve_proposal", Description: "Accept or reject an agent's proposal (DM only)."}, s.resolve)
	s.registerKG()
}

func (s *Server) readGraph(ctx context.Context, req *mcp.CallToolRequest, in ReadGraphIn) (*mcp.CallToolResult, ReadGraphOut, error) {
	who := s.caller(req)
	out := ReadGraphOut{Entities: []Entity{}, Facts: []Fact{}, Archived: []Trace{}}
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, out, err
	}
	limit := in.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	// The entities shown are the first limit by name that are not
	// archived, with the archived ones among them as traces. They are read
	// a window at a time (twice the limit, doubled while archived ones
	// fill it), not as the campaign's whole list: at the 100k bench scale a
	// type filter named 40,000 NPCs, and the call took seconds.
	var ents []memory.Entity
	for window := 2 * limit; ; window *= 2 {
		ents, err = c.Graph().FindEntities(ctx, memory.EntityFilter{Name: in.Name, Type: in.Type, Limit: window})
		if err != nil {
			return nil, out, err
		}
		live := 0
		for _, e := range ents {
			if !archived(e) {
				live++
			}
		}
		if live >= limit || len(ents) < window {
			break
		}
	}
	shown := []string{}
	for _, e := range ents {
		if len(shown) == limit {
			break
		}
		if archived(e) {
			out.Archived = append(out.Archived, Trace{Kind: "entity", ID: e.ID, Summary: e.Name + " (" + e.Type + ")"})
			continue
		}
		out.Entities = append(out.Entities, toEntity(e))
		shown = append(shown, e.ID)
	}
	// The facts of the entities shown, found by their ends: reading the
	// campaign's newest facts and keeping theirs missed most of them once
	// a campaign held more facts than were read.
	facts, err := c.Graph().FindFacts(ctx, access.FactQuery{Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusPending,
		memory.StatusRetired}, EntityIDs: shown, Limit: 5000})
	if err != nil {
		return nil, out, err
	}
	for _, f := range facts {
		if f.Status == memory.StatusRetired {
			out.Archived = append(out.Archived, Trace{Kind: "fact", ID: fmt.Sprint(f.ID),
				Summary: fmt.Sprintf("%s %s %s (until %s)", f.SourceName, f.Type, f.TargetName, orNow(f.ValidUntilSession))})
			continue
		}
		out.Facts = append(out.Facts, toFact(f.Relationship))
	}
	if who.role == RoleDM {
		ps, err := c.PendingProposals(ctx)
		if err != nil {
			return nil, out, err
		}
		for _, p := range ps {
			var payload map[string]any
			if err := unmarshal(p.Payload, &payload); err != nil {
				return nil, out, err
			}
			out.Proposals = append(out.Proposals, Proposal{ID: p.ID, Kind: p.Kind, Payload: payload, Actor: p.Actor,
				At: p.CreatedAt.UTC().Format("2006-01-02T15:04:05Z")})
		}
	}
	return nil, out, nil
}

func orNow(s string) string {
	if s == "" {
		return "now"
	}
	return "session " + s
}

func slug(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(name)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

func (s *Server) putNode(ctx context.Context, req *mcp.CallToolRequest, in PutNodeIn) (*mcp.CallToolResult, ChangeOut, error) {
	who := s.caller(req)
	if strings.TrimSpace(in.Name) == "" || strings.TrimSpace(in.Type) == "" {
		return nil, ChangeOut{}, errors.New("put_node needs a name and a type")
	}
	if in.ID == "" {
		in.ID = slug(in.Name)
	}
	if in.ID == "" {
		return nil, ChangeOut{}, fmt.Errorf("cannot make an id from the name %q; give one", in.Name)
	}
	e := memory.Entity{ID: in.ID, Type: in.Type, Name: in.Name, Aliases: in.Aliases, Attributes: in.Attributes}
	return s.write(ctx, who, "put_node", in, in.ID, func(c *access.Campaign) error {
		return c.Graph().UpsertEntity(ctx, e)
	})
}

// write applies a change for the DM or records a proposal for others.
func (s *Server) write(ctx context.Context, who caller, kind string, payload any, id string, apply func(*access.Campaign) error) (*mcp.CallToolResult, ChangeOut, error) {
	var out ChangeOut
	camp, err := s.campaign(ctx, who)
	if err != nil {
		return nil, ChangeOut{}, err
	}
	err = camp.InTx(ctx, who.actor, func(c *access.Campaign) error {
		if who.role == RoleDM {
			out = ChangeOut{Result: "applied", ID: id}
			return apply(c)
		}
		pid, err := c.Propose(ctx, kind, payload, who.actor)
		out = ChangeOut{Result: "proposed", ID: id, ProposalID: pid}
		return err
	})
	if err != nil {
		return nil, ChangeOut{}, err
	}
	return nil, out, nil
}

// archiveEntity marks an entity archived, retires its live facts and
// deletes its edges to artifacts: the design's kg_delete_node removes "a
// node and every edge touching it" (an edge left to a deleted node showed
// as a memory trace nobody but the DM could recall).
func archiveEntity(ctx context.Context, c *access.Campaign, id string) error {
	if err := c.KGDeleteArtifactEdgesOf(ctx, id); err != nil {
		return err
	}
	g := c.Graph()
	if _, err := g.UpdateEntity(ctx, id, memory.EntityUpdate{SetAttributes: map[string]any{attrArchived: true}}); err != nil {
		return err
	}
	rels, err := g.Relationships(ctx, id, memory.TraversalOpts{})
	if err != nil {
		return err
	}
	pend, err := g.PendingFacts(ctx, memory.FactFilter{EntityID: id})
	if err != nil {
		return err
	}
	for _, r := range append(rels, pend...) {
		if _, err := g.RetireFact(ctx, r.ID, ""); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) putEdge(ctx context.Context, req *mcp.CallToolRequest, in PutEdgeIn) (*mcp.CallToolResult, ChangeOut, error) {
	who := s.caller(req)
	conf := in.Confidence
	if conf == 0 {
		conf = 1
	}
	if conf < 0 || conf > 1 {
		return nil, ChangeOut{}, fmt.Errorf("confidence %v is outside 0..1", conf)
	}
	attrs := in.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	var out ChangeOut
	camp, err := s.campaign(ctx, who)
	if err != nil {
		return nil, ChangeOut{}, err
	}
	err = camp.InTx(ctx, who.actor, func(c *access.Campaign) error {
		r := memory.Relationship{SourceID: in.Source, TargetID: in.Target, Type: strings.ToUpper(in.Type), Attributes: attrs,
			Provenance: memory.Provenance{Confidence: conf, Source: memory.SourceStated}}
		w, err := c.Graph().WriteFact(ctx, who.writer(), r, in.Reason)
		if err != nil {
			return err
		}
		out = ChangeOut{Result: "applied", ID: fmt.Sprint(w.Fact.ID)}
		if who.role != RoleDM {
			// The same answer whether or not canon holds the fact, and no
			// fact id: ids are numbered from one sequence for every fact,
			// so the gap between two proposals' ids would count the facts
			// written in between that the player may not see.
			out = ChangeOut{Result: "proposed"}
		}
		return nil
	})
	if err != nil {
		return nil, ChangeOut{}, err
	}
	return nil, out, nil
}

// writer is the caller as the store's fact writer: the DM token writes
// canon, any other only proposes.
func (c caller) writer() memory.Writer {
	if c.role == RoleDM {
		return memory.DM(c.actor)
	}
	return memory.Player(c.actor)
}

func (s *Server) deleteEdge(ctx context.Context, req *mcp.CallToolRequest, in RefIn) (*mcp.CallToolResult, ChangeOut, error) {
	who := s.caller(req)
	id, err := parseID(in.ID)
	if err != nil {
		return nil, ChangeOut{}, err
	}
	return s.write(ctx, who, "delete_edge", in, in.ID, func(c *access.Campaign) error {
		_, err := c.Graph().RetireFact(ctx, id, "")
		return err
	})
}

func (s *Server) recallNode(ctx context.Context, req *mcp.CallToolRequest, in RefIn) (*mcp.CallToolResult, RecallOut, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, RecallOut{}, err
	}
	if e, err := c.Graph().Entity(ctx, in.ID); err == nil {
		x := toEntity(e)
		return nil, RecallOut{Entity: &x}, nil
	}
	id, err := parseID(in.ID)
	if err != nil {
		return nil, RecallOut{}, fmt.Errorf("no entity or fact %q", in.ID)
	}
	f, err := c.Graph().Fact(ctx, id)
	if err != nil {
		return nil, RecallOut{}, fmt.Errorf("no entity or fact %q", in.ID)
	}
	x := toFact(f)
	return nil, RecallOut{Fact: &x}, nil
}

func (s *Server) searchSessions(ctx context.Context, req *mcp.CallToolRequest, in SearchIn) (*mcp.CallToolResult, SearchOut, error) {
	c, err := s.campaign(ctx, s.caller(req))
	if err != nil {
		return nil, SearchOut{}, err
	}
	hits, err := c.Sessions().Search(ctx, in.Query, memory.SearchOpts{SessionID: in.Session, Limit: min(max(in.Limit, 0), 50)})
	if err != nil {
		return nil, SearchOut{}, err
	}
	out := SearchOut{Lines: []Line{}}
	for _, h := range hits {
		out.Lines = append(out.Lines, Line{Session: h.Entry.SessionID, At: h.Entry.At.UTC().Format("2006-01-02T15:04:05Z"),
			Speaker: h.Entry.SpeakerName, Text: h.Entry.Text})
	}
	return nil, out, nil
}

func (s *Server) ask(ctx context.Context, req *mcp.CallToolRequest, in AskIn) (*mcp.CallToolResult, AskOut, error) {
	if s.cfg.Asker == nil {
		return nil, AskOut{}, errors.New("ask is not available: this glyphoxa has no retrieval configured")
	}
	k := in.K
	if k <= 0 || k > 50 {
		k = 5
	}
	v, err := s.viewer(ctx, s.caller(req))
	if err != nil {
		return nil, AskOut{}, err
	}
	res, err := s.cfg.Asker.Ask(ctx, s.cfg.Campaign, v, in.Question, k)
	if err != nil {
		return nil, AskOut{}, err
	}
	if res == nil {
		res = []AskResult{}
	}
	return nil, AskOut{Results: res}, nil
}

func (s *Server) sync(ctx context.Context, req *mcp.CallToolRequest, in SyncIn) (*mcp.CallToolResult, SyncOut, error) {
	who := s.caller(req)
	c, err := s.campaign(ctx, who)
	if err != nil {
		return nil, SyncOut{}, err
	}
	// A player's cursor is opaque and their changes carry no log id
	// (cursor.go): the steps between positions or ids count the changes
	// the player may not see.
	var key []byte
	cursor := in.Cursor
	if who.role != RoleDM {
		if key, err = c.CursorKey(ctx); err != nil {
			return nil, SyncOut{}, err
		}
		if cursor, err = openCursor(key, in.Cursor); err != nil {
			return nil, SyncOut{}, fmt.Errorf("cursor %d: %w", in.Cursor, err)
		}
	}
	// The cursor moves past everything read, the caller's own writes
	// included, and past nothing published after the read.
	ch, next, err := c.ChangesSince(ctx, cursor, who.actor, 500)
	if err != nil {
		return nil, SyncOut{}, err
	}
	out := SyncOut{Changes: ch, Cursor: next}
	if out.Changes == nil {
		out.Changes = []access.Change{}
	}
	if key != nil {
		for i := range out.Changes {
			out.Changes[i].ID = 0
		}
		if out.Cursor, err = sealCursor(key, next); err != nil {
			return nil, SyncOut{}, err
		}
	}
	return nil, out, nil
}

func (s *Server) resolve(ctx context.Context, req *mcp.CallToolRequest, in ResolveIn) (*mcp.CallToolResult, ChangeOut, error) {
	who := s.caller(req)
	if who.role != RoleDM {
		return nil, ChangeOut{}, errors.New("only the DM token can resolve proposals")
	}
	var out ChangeOut
	camp, err := s.campaign(ctx, who)
	if err != nil {
		return nil, ChangeOut{}, err
	}
	err = camp.InTx(ctx, who.actor, func(c *access.Campaign) error {
		p, err := c.ResolveProposal(ctx, in.ID, in.Accept)
		if err != nil {
			return err
		}
		out = ChangeOut{Result: p.Status, ProposalID: p.ID}
		if !in.Accept {
			return nil
		}
		switch p.Kind {
		case "put_node":
			var n PutNodeIn
			if err := unmarshal(p.Payload, &n); err != nil {
				return err
			}
			out.ID = n.ID
			return c.Graph().UpsertEntity(ctx, memory.Entity{ID: n.ID, Type: n.Type, Name: n.Name, Aliases: n.Aliases, Attributes: n.Attributes})
		case "delete_node":
			var r RefIn
			if err := unmarshal(p.Payload, &r); err != nil {
				return err
			}
			out.ID = r.ID
			return archiveEntity(ctx, c, r.ID)
		case "delete_edge":
			var r RefIn
			if err := unmarshal(p.Payload, &r); err != nil {
				return err
			}
			id, err := parseID(r.ID)
			if err != nil {
				return err
			}
			out.ID = r.ID
			_, err = c.Graph().RetireFact(ctx, id, "")
			return err
		}
		out.ID, err = s.applyKGProposal(ctx, c, p)
		return err
	})
	if err != nil {
		return nil, ChangeOut{}, err
	}
	return nil, out, nil
}
