package memory

import (
	"context"
	"time"
)

// SearchOpts narrows a full-text search of the session log. Zero fields do not
// filter.
type SearchOpts struct {
	SessionID string
	SpeakerID string
	// After and Before bound the utterance time (exclusive).
	After  time.Time
	Before time.Time
	// Limit caps the results; 0 means 20.
	Limit int
	// Any matches entries with any of the query's words (ranked by how
	// many and how rare), instead of all of them: for finding what an
	// utterance relates to rather than answering a search box.
	Any bool
}

// EntryHit is a transcript entry found by full-text search, with its rank.
type EntryHit struct {
	Entry TranscriptEntry
	Rank  float64
}

// SessionStore is L1, the session log. Entries come back in chronological
// order unless stated otherwise.
type SessionStore interface {
	// WriteEntry appends one entry. It reports false when the entry's
	// IdempotencyKey was already written (nothing changed).
	WriteEntry(ctx context.Context, e TranscriptEntry) (bool, error)
	// WriteEntries appends entries atomically and reports how many were new.
	WriteEntries(ctx context.Context, es []TranscriptEntry) (int, error)
	// GetRecent returns the entries of a session that fall within window
	// before its newest entry.
	GetRecent(ctx context.Context, sessionID string, window time.Duration) ([]TranscriptEntry, error)
	// Entries returns every entry of a session in order.
	Entries(ctx context.Context, sessionID string) ([]TranscriptEntry, error)
	// Search finds entries whose corrected text matches query (web-search
	// syntax: words, "phrases", -exclusions, or), best ranked first.
	Search(ctx context.Context, query string, opts SearchOpts) ([]EntryHit, error)
	// StartSession records a session (idempotent).
	StartSession(ctx context.Context, id string, at time.Time) error
	// EndSession marks a session as ended.
	EndSession(ctx context.Context, id string, at time.Time) error
	// Sessions lists the campaign's sessions, oldest first.
	Sessions(ctx context.Context) ([]Session, error)
}

// EntityFilter narrows FindEntities. Zero fields do not filter.
type EntityFilter struct {
	Type string
	// Name matches names and aliases containing it, case-insensitively.
	Name string
	// IDs restricts the result to these ids.
	IDs []string
	// Limit caps the results; 0 means no limit.
	Limit int
	// IncludeRetired finds the entities the DM retired too (by IDs as
	// well: a retired entity is left out unless it is set).
	IncludeRetired bool
}

// EntityUpdate changes part of an entity. Nil fields are left alone.
type EntityUpdate struct {
	Name    *string
	Type    *string
	Aliases *[]string
	// SetAttributes are merged into the attributes.
	SetAttributes map[string]any
	// DeleteAttributes are removed from the attributes.
	DeleteAttributes []string
}

// Direction selects which edges a traversal follows.
type Direction int

// Directions.
const (
	// Both follows edges either way (the default).
	Both Direction = iota
	// Outgoing follows edges from source to target only.
	Outgoing
	// Incoming follows edges from target to source only.
	Incoming
)

// TraversalOpts tune Neighbors and Relationships. Zero values mean: all
// relationship types, both directions, no limit.
type TraversalOpts struct {
	RelTypes  []string
	Direction Direction
	// Limit caps the entities (or relationships) returned.
	Limit int
}

// VisibilityScope says what an NPC can see through: the relationship types
// its knowledge travels along, and how far.
type VisibilityScope struct {
	// RelTypes are followed beyond the NPC's own edges. Empty means
	// DefaultKnowledgeScope().
	RelTypes []string
	// MaxDepth bounds the hops from the NPC; 0 means 3.
	MaxDepth int
}

// DefaultKnowledgeScope returns the relationship types an NPC sees through
// when its persona does not say otherwise.
func DefaultKnowledgeScope() []string {
	return []string{"KNOWS", "LOCATED_AT", "MEMBER_OF", "ALLIED_WITH"}
}

// FactFilter narrows the fact listings.
type FactFilter struct {
	SessionID string
	EntityID  string
	Limit     int
}

// KnowledgeGraph is L3: entities, typed relationships with provenance, and
// the DM's review of low-confidence facts.
//
// Traversals follow only active (canon) relationships.
type KnowledgeGraph interface {
	// UpsertEntity creates or replaces an entity.
	UpsertEntity(ctx context.Context, e Entity) error
	// UpsertEntities creates or replaces entities in one transaction.
	UpsertEntities(ctx context.Context, es []Entity) error
	// Entity returns one entity, or an error wrapping ErrNotFound.
	Entity(ctx context.Context, id string) (Entity, error)
	// UpdateEntity changes part of an entity and returns the result.
	UpdateEntity(ctx context.Context, id string, u EntityUpdate) (Entity, error)
	// DeleteEntity removes an entity and its relationships.
	DeleteEntity(ctx context.Context, id string) error
	// FindEntities lists entities matching f, by name.
	FindEntities(ctx context.Context, f EntityFilter) ([]Entity, error)

	// UpsertRelationship records a fact. The same (source, target, type)
	// updates the existing fact. A fact below the review threshold that the
	// DM has not confirmed becomes pending. It returns the stored fact.
	UpsertRelationship(ctx context.Context, r Relationship) (Relationship, error)
	// Relationships returns an entity's active edges.
	Relationships(ctx context.Context, entityID string, o TraversalOpts) ([]Relationship, error)
	// Fact returns one relationship by id, whatever its status.
	Fact(ctx context.Context, id int64) (Relationship, error)

	// Neighbors returns the entities within depth hops of entityID, nearest
	// first, excluding the entity itself.
	Neighbors(ctx context.Context, entityID string, depth int, o TraversalOpts) ([]Neighbor, error)
	// FindPath returns a shortest path from one entity to another of at most
	// maxDepth hops (edges followed either way), or an error wrapping
	// ErrNotFound.
	FindPath(ctx context.Context, fromID, toID string, maxDepth int) ([]PathStep, error)
	// VisibleSubgraph returns what an NPC can know: the entities reachable
	// from it through its scope and the edges among them it may see.
	VisibleSubgraph(ctx context.Context, npcID string, s VisibilityScope) ([]Entity, []Relationship, error)
	// IdentitySnapshot returns the NPC, its edges and the entities they reach,
	// in one query.
	IdentitySnapshot(ctx context.Context, npcID string) (NPCIdentity, error)

	// PendingFacts lists facts waiting for the DM's review, oldest first.
	PendingFacts(ctx context.Context, f FactFilter) ([]Relationship, error)
	// ConfirmFact makes a fact canon and marks it DM-confirmed.
	ConfirmFact(ctx context.Context, id int64) (Relationship, error)
	// RejectFact removes a fact from canon; it is kept for the audit trail.
	RejectFact(ctx context.Context, id int64) (Relationship, error)
}

// GraphScope is a neighbourhood of the knowledge graph: the seed entities and
// everything within Depth hops along RelTypes.
type GraphScope struct {
	EntityIDs []string
	// Depth is the hops from the seeds; 0 means the seeds only.
	Depth int
	// RelTypes restricts the edges followed; empty follows all.
	RelTypes []string
	// SessionID, when set, restricts chunks to one session.
	SessionID string
	// Limit caps the results; 0 means 10.
	Limit int
}

// FactTimeline keeps the history of facts: a new fact that conflicts with a
// canon one does not overwrite it but links to it and waits for the DM, and
// queries can ask what held as of a session.
type FactTimeline interface {
	// RecordFact stores r like UpsertRelationship, and reports the canon
	// facts it conflicts with: an exclusive type (one target per source,
	// such as LOCATED_AT) with another target, or an explicit negation
	// (type NOT_X of a fact of type X). Each conflict is linked and queued.
	RecordFact(ctx context.Context, r Relationship) (Relationship, []Conflict, error)
	// FactsAsOf returns an entity's facts that held during a session.
	FactsAsOf(ctx context.Context, entityID, sessionID string) ([]Relationship, error)
	// LinkFacts records a link between two facts.
	LinkFacts(ctx context.Context, l FactLink) error
	// Conflicts lists the open conflicts, oldest first.
	Conflicts(ctx context.Context) ([]Conflict, error)
	// ResolveConflict settles a conflict, keeping the new fact or the old.
	ResolveConflict(ctx context.Context, id int64, keepNew bool) (Conflict, error)
}

// EntryAmender is a session log that can correct a recorded line after the
// fact: the background name correction (stage 2) amends the text of a line
// the table already answered. Callers find it by type assertion.
type EntryAmender interface {
	// AmendEntry replaces the corrected text of the entry of session
	// sessionID with idempotency key key, keeping its raw text. It reports
	// false when the entry already reads text (amending twice changes
	// nothing); an unknown entry is an error wrapping ErrNotFound.
	AmendEntry(ctx context.Context, sessionID, key, text string) (bool, error)
}
