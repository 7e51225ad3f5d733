package memory

import (
	"time"
)

// TranscriptEntry is one utterance in a session log (L1): what a player or an
// NPC said, when, and who said it.
type TranscriptEntry struct {
	// ID is assigned by the store on write.
	ID int64
	// SessionID is the game session the utterance belongs to.
	SessionID string
	// SpeakerID identifies the speaker: a Discord user id for players, the
	// NPC's entity id for NPC lines.
	SpeakerID string
	// SpeakerName is the display name at the time of speaking.
	SpeakerName string
	// NPCID is the entity id of the NPC who spoke this line, or empty for a
	// player's line.
	NPCID string
	// Text is the corrected transcript: fantasy names restored.
	Text string
	// RawText is what speech-to-text produced before correction.
	RawText string
	// At is when the utterance started.
	At time.Time
	// Duration is how long the utterance lasted.
	Duration time.Duration
	// IdempotencyKey, when set, makes writes exactly-once: a second write with
	// the same key in the same campaign is a no-op. Writers that may retry
	// (consolidation, the outage spool, imports) always set it.
	IdempotencyKey string
	// NonCanon marks a line the DM declared never happened: it stays in the
	// record but recall, search, recaps and processing leave it out.
	NonCanon bool
}

// Session describes one game session of a campaign.
type Session struct {
	ID        string
	StartedAt time.Time
	// EndedAt is zero while the session is running.
	EndedAt time.Time
	// Entries is the number of transcript entries stored for the session;
	// read through a player's handle, those the player's pages show (the
	// lines they may read, less those the DM struck from the record).
	Entries int
	// Summary is the session's running summary as last saved (empty
	// until one is written).
	Summary string
	// GameDate is the session's date in the game's calendar, when the
	// campaign gives one ("" otherwise).
	GameDate string
}

// Chunk is a span of corrected transcript prepared for semantic search (L2).
// It carries its embedding; the index does not embed.
type Chunk struct {
	// ID is stable for the same span of the same session, so re-chunking a
	// session replaces rather than duplicates its chunks.
	ID        string
	SessionID string
	Content   string
	// Embedding must have the store's configured dimension; nil means the
	// chunk is stored but not yet embedded.
	Embedding []float32
	// SpeakerIDs are the speakers heard in the chunk.
	SpeakerIDs []string
	// EntityIDs are the knowledge-graph entities the chunk mentions. An entity
	// can be linked to many chunks.
	EntityIDs []string
	// StartAt and EndAt bound the chunk's time span.
	StartAt time.Time
	EndAt   time.Time
}

// ChunkFilter narrows an L2 search. Zero fields do not filter.
type ChunkFilter struct {
	SessionID string
	SpeakerID string
	EntityID  string
	After     time.Time
	Before    time.Time
}

// ChunkResult is a chunk found by similarity, with its cosine distance to the
// query (0 is identical, 2 is opposite).
type ChunkResult struct {
	Chunk    Chunk
	Distance float64
}

// Well-known entity types. Others are allowed.
const (
	EntityNPC      = "npc"
	EntityPlayer   = "player"
	EntityLocation = "location"
	EntityItem     = "item"
	EntityFaction  = "faction"
	EntityEvent    = "event"
	EntityQuest    = "quest"
	EntityConcept  = "concept"
)

// Well-known attribute keys.
const (
	// AttrSecretKnowledge holds facts only this entity (an NPC) knows. The
	// store never returns it for an entity reached through another one.
	AttrSecretKnowledge = "secret_knowledge"
	// AttrSecret marks a relationship as secret: it is visible only to its
	// endpoints and to the NPC ids listed under AttrKnownBy.
	AttrSecret = "secret"
	// AttrKnownBy lists the NPC entity ids that may see a secret relationship.
	AttrKnownBy = "known_by"
)

// Entity is a node of the knowledge graph (L3).
type Entity struct {
	// ID is unique within the campaign (e.g. "grimjaw").
	ID   string
	Type string
	// Name is the canonical display name ("Grimjaw").
	Name string
	// Aliases are other names players use ("Grim"); speech correction and NPC
	// addressing match them too.
	Aliases []string
	// Attributes holds free-form properties (occupation, personality, …).
	Attributes map[string]any
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// FactSource says how a fact came to be known.
type FactSource string

// Fact sources.
const (
	// SourceStated: somebody said it at the table.
	SourceStated FactSource = "stated"
	// SourceInferred: an LLM deduced it from the transcript.
	SourceInferred FactSource = "inferred"
)

// Valid reports whether s is a known source.
func (s FactSource) Valid() bool { return s == SourceStated || s == SourceInferred }

// Provenance records where a fact (a relationship) came from.
type Provenance struct {
	// SessionID is the session in which the fact was established; empty for
	// facts the DM entered outside play.
	SessionID string
	// Timestamp is when it was established.
	Timestamp time.Time
	// Confidence is 0..1. Facts below the store's review threshold wait for
	// the DM.
	Confidence float64
	// Source is stated or inferred.
	Source FactSource
	// DMConfirmed is true once the DM has confirmed the fact.
	DMConfirmed bool
}

// FactStatus is where a relationship stands in the DM's review.
type FactStatus string

// Fact statuses.
const (
	// StatusActive facts are canon: NPCs see them.
	StatusActive FactStatus = "active"
	// StatusPending facts have low confidence and wait for the DM.
	StatusPending FactStatus = "pending"
	// StatusRejected facts were rejected by the DM; they are kept for the
	// audit trail and never shown to NPCs.
	StatusRejected FactStatus = "rejected"
	// StatusRetired facts held once and no longer do (superseded, or retired
	// by the DM); "as of" queries still see them for the sessions in which
	// they held.
	StatusRetired FactStatus = "retired"
)

// Relationship is a directed, typed edge of the knowledge graph: a fact.
type Relationship struct {
	// ID is assigned by the store.
	ID       int64
	SourceID string
	TargetID string
	// Type is the relationship label, conventionally upper case
	// (LOCATED_AT, KNOWS, MEMBER_OF, …).
	Type       string
	Attributes map[string]any
	Provenance Provenance
	Status     FactStatus
	// ValidUntilSession is the session in which the fact stopped holding;
	// empty while it holds.
	ValidUntilSession string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// LinkKind says how one fact relates to another.
type LinkKind string

// Link kinds.
const (
	// LinkSupersedes: the newer fact replaces the older, which held until
	// then (the smith moved to another town).
	LinkSupersedes LinkKind = "supersedes"
	// LinkContradicts: the two facts cannot both hold.
	LinkContradicts LinkKind = "contradicts"
	LinkSupports    LinkKind = "supports"
	LinkRelatesTo   LinkKind = "relates_to"
	LinkDerivedFrom LinkKind = "derived_from"
	LinkSimilarTo   LinkKind = "similar_to"
)

// Valid reports whether k is a known link kind.
func (k LinkKind) Valid() bool {
	switch k {
	case LinkSupersedes, LinkContradicts, LinkSupports, LinkRelatesTo, LinkDerivedFrom, LinkSimilarTo:
		return true
	}
	return false
}

// FactLink is a typed, weighted link from one fact to another.
type FactLink struct {
	FromFact, ToFact int64
	Kind             LinkKind
	// Weight is 0..1.
	Weight float64
}

// Conflict is a new fact that conflicts with a canon one, waiting for (or
// settled by) the DM. The old fact is never overwritten.
type Conflict struct {
	ID      int64
	NewFact Relationship
	OldFact Relationship
	// Kind is LinkSupersedes or LinkContradicts.
	Kind LinkKind
	// Resolution is empty while open, else "kept_new" or "kept_old".
	Resolution string
	CreatedAt  time.Time
}

// NPCIdentity is what the knowledge graph knows about one NPC: the hot
// context's identity snapshot.
type NPCIdentity struct {
	Entity Entity
	// Relationships are the NPC's active edges, in both directions.
	Relationships []Relationship
	// RelatedEntities are the entities at the other end of Relationships.
	RelatedEntities []Entity
}

// Neighbor is an entity reached by a traversal, with its distance in hops.
type Neighbor struct {
	Entity Entity
	Depth  int
}

// PathStep is one hop of a path: the edge followed and the entity reached.
// The first step of a path has a zero Via and the start entity.
type PathStep struct {
	Entity Entity
	Via    Relationship
}

// ContextResult is a GraphRAG hit: a chunk of transcript found inside a graph
// neighbourhood, with the in-scope entities it mentions.
type ContextResult struct {
	Chunk    Chunk
	Entities []Entity
	// Score is higher for better matches: full-text rank for text queries,
	// 1 - cosine distance for embedding queries.
	Score float64
}
