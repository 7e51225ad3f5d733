// Package memory is the vocabulary of glyphoxa's three-layer campaign
// memory: the types every layer stores, who reads them ([Viewer]) and the
// one definition of what is secret, the error classes callers branch on,
// and the contracts of the layers that more than one package programs
// against.
//
// # Layers
//
//   - L1, the session log: every utterance, by a player or an NPC, with its
//     raw speech-to-text and its corrected text, searchable by full text
//     ([SessionStore]: the memory guard and campaign import write through
//     it).
//   - L2, the semantic index: chunks of corrected transcript with
//     embeddings, searched by vector similarity and by full text.
//   - L3, the knowledge graph: entities (NPCs, places, items, factions…)
//     and typed facts between them, each with its [Provenance] and its
//     history ([KnowledgeGraph], [FactTimeline]). Low-confidence facts wait
//     for the DM's review.
//
// memory/postgres implements all three in one PostgreSQL database with
// pgvector.
//
// # One door
//
// Everything that reads memory for someone (an NPC's turn and its tools,
// the DM console, the MCP server, slash commands, recaps, `glyphoxa ask`)
// gets it through memory/access: a handle bound to a [Viewer] when it is
// opened, every statement classified and gated by the door's health (the
// MemoryGuard for reads). The viewer decides in SQL what comes back; the
// rule is [SecretKey] and [PublicValue] here, and their SQL twin in
// memory/postgres's migration 0010. The unbound store is for the writers
// that own data (import, consolidation, extraction), wired in cmd/; no
// package outside memory/ and cmd/ imports memory/postgres.
//
// # Errors
//
// [ErrNotFound], [ErrInvalid] and [ErrForbidden] say what was wrong with a
// request; [ErrUnavailable] (the database cannot be reached: retry later,
// spool a write) and [ErrRefused] (the database answered no) classify
// every error the store returns.
//
// # Campaigns
//
// One bot serves many Discord guilds, and each guild plays its own
// campaign. Every stored row belongs to exactly one campaign, and a handle
// is bound to its campaign when it is opened, so no method of any layer can
// read or write another campaign's data: ids only need to be unique within
// a campaign.
//
// Implementations must be safe for concurrent use. Every operation takes a
// [context.Context] first.
package memory
