// Package memory defines glyphoxa's three-layer campaign memory: the types
// every layer stores and the interfaces the rest of the bot programs against.
//
// # Layers
//
//   - L1, [SessionStore]: the verbatim session log. Every utterance, by a
//     player or an NPC, with its raw speech-to-text and its corrected text,
//     searchable by full text.
//   - L2, [SemanticIndex]: chunks of corrected transcript with embeddings,
//     searched by vector similarity.
//   - L3, [KnowledgeGraph]: entities (NPCs, places, items, factions…) and
//     typed relationships between them, each relationship carrying its
//     [Provenance]. Low-confidence facts wait for the DM's review.
//
// [GraphRAGQuerier] combines L3's graph neighbourhood with L2's chunks in a
// single query.
//
// # Campaigns
//
// One bot serves many Discord guilds, and each guild plays its own campaign.
// Every stored row belongs to exactly one campaign, and the stores are bound
// to a campaign when they are created (see memory/postgres), so no method of
// any layer can read or write another campaign's data: ids only need to be
// unique within a campaign.
//
// Implementations must be safe for concurrent use. Every operation takes a
// [context.Context] first.
package memory
