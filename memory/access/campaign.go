package access

import (
	"context"
	"fmt"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Bulk review actions (see [Graph]'s ReviewFacts).
const (
	ReviewConfirm = postgres.ReviewConfirm
	ReviewReject  = postgres.ReviewReject
)

// The store's types a reader names, so that readers need not import the
// driver package.
type (
	// SessionLog is L1, the session log, as the handle's viewer reads it.
	SessionLog = postgres.SessionLog
	// SemanticIndex is L2, the chunk index.
	SemanticIndex = postgres.SemanticIndex
	// Graph is L3, the knowledge graph, filtered for the handle's viewer.
	Graph = postgres.Graph

	FactQuery      = postgres.FactQuery
	FactWithNames  = postgres.FactWithNames
	EntityStamp    = postgres.EntityStamp
	Change         = postgres.Change
	ChangeCursor   = postgres.ChangeCursor
	Proposal       = postgres.Proposal
	Counts         = postgres.Counts
	SessionChanges = postgres.SessionChanges
	Inspection     = postgres.Inspection
	KGLevel        = postgres.KGLevel
	KGView         = postgres.KGView
	KGNode         = postgres.KGNode
	KGEdge         = postgres.KGEdge
	KGNodeInput    = postgres.KGNodeInput
	KGSession      = postgres.KGSession
	KGChanges      = postgres.KGChanges
	KGStats        = postgres.KGStats
	Compaction     = postgres.Compaction
	GraphEdge      = postgres.GraphEdge
	GraphCursor    = postgres.GraphCursor
	Processing     = postgres.Processing
	// The DM's entity operations (Graph.AddEntity, MergeEntities,
	// RetireEntity, EntityKinds).
	EntityMerge      = postgres.EntityMerge
	EntityRetirement = postgres.EntityRetirement
	EntityKind       = postgres.EntityKind
	// ReviewBatch is one bulk confirm or reject, undoable.
	ReviewBatch = postgres.ReviewBatch
	// ReviewAction is what a bulk review does.
	ReviewAction = postgres.ReviewAction
	// Retirement is when and why a fact left canon.
	Retirement = postgres.Retirement
)

// EntityID derives an entity id from a name (see postgres.EntityID).
func EntityID(name string) string { return postgres.EntityID(name) }

// The memory-tool levels (see postgres.KGLevel).
const (
	KGCampaign = postgres.KGCampaign
	KGDM       = postgres.KGDM
)

// Campaign is one campaign's memory as one viewer may read it, every
// statement guarded by the door that opened it. Its methods never take a
// role: the viewer it was opened for decides. It is safe for concurrent
// use.
type Campaign struct {
	pc   *postgres.Campaign
	door *Door
}

// ID is the campaign id.
func (c *Campaign) ID() string { return c.pc.ID() }

// Viewer is who the handle reads for.
func (c *Campaign) Viewer() memory.Viewer { return c.pc.Viewer() }

// DM reports whether the handle reads for the DM.
func (c *Campaign) DM() bool { return c.pc.Viewer().Role == memory.RoleDM }

// As returns the same campaign bound to viewer v. Only the DM's handle may
// be re-bound (the table reads for each NPC through its own); a player's
// or an NPC's handle binds only to its own viewer again: an error wrapping
// memory.ErrForbidden otherwise.
func (c *Campaign) As(v memory.Viewer) (*Campaign, error) {
	pc, err := c.pc.As(v)
	if err != nil {
		return nil, err
	}
	return &Campaign{pc: pc, door: c.door}, nil
}

// Ping checks that the database answers (see [Door.Ping]): the memory
// guard's health probe.
func (c *Campaign) Ping(ctx context.Context) error { return c.door.Ping(ctx) }

// Processing is how far post-session work has got for each session, and
// the extraction cache (DM only: the table's own writers use it).
func (c *Campaign) Processing() (*Processing, error) {
	if err := c.dmOnly("reading the processing progress"); err != nil {
		return nil, err
	}
	return c.pc.Processing(), nil
}

// Sessions is the session log (L1).
func (c *Campaign) Sessions() *SessionLog { return c.pc.Sessions() }

// Index is the semantic index (L2).
func (c *Campaign) Index() *SemanticIndex { return c.pc.Index() }

// Graph is the knowledge graph (L3), filtered for the viewer.
func (c *Campaign) Graph() *Graph { return c.pc.Graph() }

// InTx runs fn with this handle's layers bound to one transaction, the
// writer named actor in the change log.
func (c *Campaign) InTx(ctx context.Context, actor string, fn func(*Campaign) error) error {
	return c.pc.InTx(ctx, actor, func(pc *postgres.Campaign) error { return fn(&Campaign{pc: pc, door: c.door}) })
}

// dmOnly refuses what only the DM may do.
func (c *Campaign) dmOnly(what string) error {
	if c.DM() {
		return nil
	}
	return fmt.Errorf("%s: %w: for the DM only (this handle reads as %s)", what, memory.ErrForbidden, c.Viewer())
}

// dmLevel refuses the DM's level of the memory-tool view to anyone else.
func (c *Campaign) dmLevel(what string, l KGLevel) error {
	if l == KGDM {
		return c.dmOnly(what + " at the DM level")
	}
	return nil
}

// ChangesSince lists the knowledge graph's changes after cursor that the
// viewer may see, and the cursor after them
// ([postgres.Campaign.ChangesSince]).
func (c *Campaign) ChangesSince(ctx context.Context, cursor int64, exclude string, limit int) ([]Change, int64, error) {
	return c.pc.ChangesSinceFor(ctx, cursor, exclude, limit, c.DM())
}

// LastChange is the newest change-log cursor.
func (c *Campaign) LastChange(ctx context.Context) (int64, error) { return c.pc.LastChange(ctx) }

// Revision is the newest change-log id whatever the viewer may see, for
// the server's caches of the viewer's reads; never shown to a player
// (see [postgres.Campaign.Revision]).
func (c *Campaign) Revision(ctx context.Context) (int64, error) { return c.pc.Revision(ctx) }

// Cursor is the change cursor now, for the server's caches of the viewer's
// reads; never shown to a player (see [postgres.ChangeCursor]).
func (c *Campaign) Cursor(ctx context.Context) (ChangeCursor, error) { return c.pc.Cursor(ctx) }

// ChangesAfter lists the changes a cache at cur has not seen (the DM's
// handle only; see [postgres.Campaign.ChangesAfter]).
func (c *Campaign) ChangesAfter(ctx context.Context, cur ChangeCursor, limit int) ([]Change, ChangeCursor, error) {
	return c.pc.ChangesAfter(ctx, cur, limit)
}

// EntityChanges reports whether the entities changed after cur (see
// [postgres.Campaign.EntityChanges]); for the server's caches.
func (c *Campaign) EntityChanges(ctx context.Context, cur ChangeCursor) (bool, ChangeCursor, error) {
	return c.pc.EntityChanges(ctx, cur)
}

// Propose records a change proposal by actor for the DM to review.
func (c *Campaign) Propose(ctx context.Context, kind string, payload any, actor string) (int64, error) {
	return c.pc.Propose(ctx, kind, payload, actor)
}

// PendingProposals lists the proposals waiting for the DM.
func (c *Campaign) PendingProposals(ctx context.Context) ([]Proposal, error) {
	if err := c.dmOnly("listing proposals"); err != nil {
		return nil, err
	}
	return c.pc.PendingProposals(ctx)
}

// ResolveProposal accepts or rejects a proposal (DM only).
func (c *Campaign) ResolveProposal(ctx context.Context, id int64, accept bool) (Proposal, error) {
	if err := c.dmOnly("resolving a proposal"); err != nil {
		return Proposal{}, err
	}
	return c.pc.ResolveProposal(ctx, id, accept)
}

// Counts counts the campaign's rows.
func (c *Campaign) Counts(ctx context.Context) (Counts, error) { return c.pc.Counts(ctx) }

// ChangesSinceSession is what a session changed (DM only: it lists facts
// whatever their secrecy).
func (c *Campaign) ChangesSinceSession(ctx context.Context, sessionID string) (SessionChanges, error) {
	if err := c.dmOnly("reading a session's changes"); err != nil {
		return SessionChanges{}, err
	}
	return c.pc.ChangesSinceSession(ctx, sessionID)
}

// Inspect summarises the campaign's memory (DM only).
func (c *Campaign) Inspect(ctx context.Context) (Inspection, error) {
	if err := c.dmOnly("inspecting memory"); err != nil {
		return Inspection{}, err
	}
	return c.pc.Inspect(ctx)
}

// KGRead is the memory-tool view: the campaign level for everyone, the DM
// level too for the DM.
func (c *Campaign) KGRead(ctx context.Context) (KGView, error) { return c.pc.KGRead(ctx, c.DM()) }

// KGPutNode writes a memory-tool node.
func (c *Campaign) KGPutNode(ctx context.Context, level KGLevel, n KGNodeInput, now time.Time) (KGNode, error) {
	if err := c.dmLevel("writing a node", level); err != nil {
		return KGNode{}, err
	}
	return c.pc.KGPutNode(ctx, level, n, now)
}

// KGNode reads one memory-tool node.
func (c *Campaign) KGNode(ctx context.Context, level KGLevel, id string) (KGNode, error) {
	if err := c.dmLevel("reading a node", level); err != nil {
		return KGNode{}, err
	}
	return c.pc.KGNode(ctx, level, id)
}

// KGPutDMEdge writes an edge of the DM level (DM only).
func (c *Campaign) KGPutDMEdge(ctx context.Context, from, to, rel string, notes []string, now time.Time) error {
	if err := c.dmOnly("writing a DM edge"); err != nil {
		return err
	}
	return c.pc.KGPutDMEdge(ctx, from, to, rel, notes, now)
}

// IsArtifactRef reports whether a memory-tool edge end names an artifact
// (a path, path:line) rather than a node (postgres.IsArtifactRef).
func IsArtifactRef(s string) bool { return postgres.IsArtifactRef(s) }

// KGRel is a relation as the memory-tool API shows it: kebab-case
// (postgres.KGRel).
func KGRel(rel string) string { return postgres.KGRel(rel) }

// KGPutArtifactEdge writes a campaign-level edge with an artifact end (DM
// only: others propose).
func (c *Campaign) KGPutArtifactEdge(ctx context.Context, from, to, rel string, notes []string, now time.Time) error {
	if err := c.dmOnly("writing an edge"); err != nil {
		return err
	}
	return c.pc.KGPutArtifactEdge(ctx, from, to, rel, notes, now)
}

// KGDeleteArtifactEdge deletes a campaign-level edge with an artifact end
// (DM only).
func (c *Campaign) KGDeleteArtifactEdge(ctx context.Context, from, to, rel string) error {
	if err := c.dmOnly("deleting an edge"); err != nil {
		return err
	}
	return c.pc.KGDeleteArtifactEdge(ctx, from, to, rel)
}

// KGDeleteArtifactEdgesOf deletes the campaign-level edges between an
// entity and an artifact (DM only).
func (c *Campaign) KGDeleteArtifactEdgesOf(ctx context.Context, id string) error {
	if err := c.dmOnly("deleting an entity's edges"); err != nil {
		return err
	}
	return c.pc.KGDeleteArtifactEdgesOf(ctx, id)
}

// KGDeleteDMNode deletes a node of the DM level (DM only).
func (c *Campaign) KGDeleteDMNode(ctx context.Context, id string) error {
	if err := c.dmOnly("deleting a DM node"); err != nil {
		return err
	}
	return c.pc.KGDeleteDMNode(ctx, id)
}

// KGDeleteDMEdge deletes an edge of the DM level (DM only).
func (c *Campaign) KGDeleteDMEdge(ctx context.Context, from, to, rel string) error {
	if err := c.dmOnly("deleting a DM edge"); err != nil {
		return err
	}
	return c.pc.KGDeleteDMEdge(ctx, from, to, rel)
}

// CanonFactID finds the canon fact (from, rel, to).
func (c *Campaign) CanonFactID(ctx context.Context, from, to, rel string) (int64, error) {
	return c.pc.CanonFactID(ctx, from, to, rel)
}

// KGRecall reads a memory-tool node, undeleting an archived one when asked.
func (c *Campaign) KGRecall(ctx context.Context, level KGLevel, id string, undelete bool, now time.Time) (KGNode, error) {
	if err := c.dmLevel("recalling a node", level); err != nil {
		return KGNode{}, err
	}
	return c.pc.KGRecall(ctx, level, id, undelete, now)
}

// KGRegisterSession registers a memory-tool session.
func (c *Campaign) KGRegisterSession(ctx context.Context, id, actor string, level KGLevel, now time.Time) (KGSession, error) {
	if err := c.dmLevel("registering a session", level); err != nil {
		return KGSession{}, err
	}
	return c.pc.KGRegisterSession(ctx, id, actor, level, now)
}

// KGSessionByID reads a memory-tool session.
func (c *Campaign) KGSessionByID(ctx context.Context, id string, now time.Time) (KGSession, error) {
	return c.pc.KGSessionByID(ctx, id, now)
}

// KGActiveSessions counts the memory-tool sessions active since a time
// whose actor starts with actorPrefix. Only the DM may count every
// session: a player's count must name their own actor (how many others
// are connected, and when the DM is at work, is not theirs to know).
func (c *Campaign) KGActiveSessions(ctx context.Context, since time.Time, actorPrefix string) (int, error) {
	if actorPrefix == "" {
		if err := c.dmOnly("counting every agent session"); err != nil {
			return 0, err
		}
	}
	return c.pc.KGActiveSessions(ctx, since, actorPrefix)
}

// KGSync lists the memory-tool changes after cursor the viewer may see.
func (c *Campaign) KGSync(ctx context.Context, cursor ChangeCursor, exclude string) (KGChanges, error) {
	return c.pc.KGSync(ctx, cursor, exclude, c.DM())
}

// CursorKey is the campaign's secret for keying the cursors shown to
// players; for the server only, never shown (see
// [postgres.Campaign.CursorKey]).
func (c *Campaign) CursorKey(ctx context.Context) ([]byte, error) { return c.pc.CursorKey(ctx) }

// KGLimit is the memory-tool node limit.
func (c *Campaign) KGLimit(ctx context.Context) (int, error) { return c.pc.KGLimit(ctx) }

// SetKGLimit sets the memory-tool node limit (DM only).
func (c *Campaign) SetKGLimit(ctx context.Context, n int) error {
	if err := c.dmOnly("setting the node limit"); err != nil {
		return err
	}
	return c.pc.SetKGLimit(ctx, n)
}

// KGStats counts a level's nodes and edges as the viewer sees them.
func (c *Campaign) KGStats(ctx context.Context, level KGLevel) (KGStats, error) {
	if err := c.dmLevel("counting nodes", level); err != nil {
		return KGStats{}, err
	}
	return c.pc.KGStats(ctx, level, c.DM())
}

// CompactKG archives the least useful nodes of a level (DM only).
func (c *Campaign) CompactKG(ctx context.Context, level KGLevel, now time.Time) (Compaction, error) {
	if err := c.dmOnly("compacting memory"); err != nil {
		return Compaction{}, err
	}
	return c.pc.CompactKG(ctx, level, now)
}

// OptOut records that a player's words are not to be kept.
func (c *Campaign) OptOut(ctx context.Context, userID string) error { return c.pc.OptOut(ctx, userID) }

// OptIn lifts a player's opt-out.
func (c *Campaign) OptIn(ctx context.Context, userID string) error { return c.pc.OptIn(ctx, userID) }

// OptedOut lists the players who opted out, with when.
func (c *Campaign) OptedOut(ctx context.Context) (map[string]time.Time, error) {
	return c.pc.OptedOut(ctx)
}

// ForgetSpeaker removes a player's words from the log, the chunks and the
// summaries.
func (c *Campaign) ForgetSpeaker(ctx context.Context, userID string) (memory.ForgetReport, error) {
	return c.pc.ForgetSpeaker(ctx, userID)
}

// LoadGraph streams the campaign's edges for the retrieval graph.
func (c *Campaign) LoadGraph(ctx context.Context, fn func(GraphEdge) error) (GraphCursor, error) {
	return c.pc.LoadGraph(ctx, fn)
}

// GraphChanges streams the edges changed after cur.
func (c *Campaign) GraphChanges(ctx context.Context, cur GraphCursor, fn func(GraphEdge) error) (GraphCursor, error) {
	return c.pc.GraphChanges(ctx, cur, fn)
}
