// Package postgres stores glyphoxa's three memory layers in one PostgreSQL
// database with pgvector, sharing one connection pool.
//
//	store, err := postgres.NewStore(ctx, dsn, 384)
//	if err != nil { ... }
//	defer store.Close()
//	c, err := store.Campaign(ctx, "ironhold-saga")
//	c.Sessions().WriteEntry(ctx, entry)          // L1, memory.SessionStore
//	c.Index().Search(ctx, vec, 10, filter)        // L2
//	c.Graph().IdentitySnapshot(ctx, "grimjaw")    // L3, memory.KnowledgeGraph
//	c.Graph().QueryWithEmbedding(ctx, vec, 5, scope) // L3 scope, L2 ranking
//
// NewStore migrates the schema first (versioned, transactional, safe to run
// on every start). The embedding dimension is fixed per database: opening a
// database built for another dimension fails with a
// *memory.DimensionMismatchError that names the fix.
//
// Every row carries its campaign id and every query is bound to the campaign
// the layer was obtained for, so campaigns never see each other's data.
//
// # Writing facts
//
// Facts are written with Graph.WriteFact, which takes the writer
// (memory.Writer: the DM, an import, extraction, a player, an NPC) and
// decides from it what the write may do: the DM supersedes, players and
// NPCs only propose, and a fact that conflicts with canon is linked and
// queued for the DM, never overwritten. Review (ConfirmFact, RejectFact,
// ResolveConflict, ReviewFacts in bulk with UndoReview) settles a fact's
// open conflicts with it in one transaction, and a single-valued relation
// (ExclusiveTypes) never has two active facts for one source. Graph.FactsAsOf
// answers what held in a session, FactsAsOfTime at a moment (retirement
// times are recorded), SessionFacts what a session established as it
// stood at its end. UpsertRelationship is the bare upsert beneath, for
// seeding.
//
// # The DM's entity operations
//
// Graph.AddEntity (a taken id or name is refused, naming the entity that
// has it), UpdateEntity, MergeEntities (facts, chunk mentions and NPC lines
// move; the merged names become aliases; a repeated fact is retired with
// its evidence kept) and RetireEntity (its canon facts retired, kept for
// "as of"; it leaves FindEntities' name lists) are the DM's alone. Discord's
// /memory entity commands and the console's entity pages call them; every
// change lands in the change log.
//
// # The memory-tool view
//
// Campaign.KGRead, KGSync, KGPutNode, CompactKG and their kin serve the
// MCP kg_* tools: nodes with a gist on two levels (the campaign's entities,
// and the DM's private notes in tables of their own), with percentile-scored
// compaction under a token budget.
//
// # Who reads
//
// Store.Campaign returns the system view, for the writers that own data:
// import, consolidation, extraction, wired in cmd/. Everything that reads
// for a person, an agent or an NPC goes through memory/access, which binds
// the campaign to its reader ([Campaign.As]) and guards it ([Campaign.Through]):
//
//	p, err := c.As(memory.PlayerViewer())   // or memory.NPCViewer("grimjaw"), memory.DMViewer()
//	facts, err := p.Graph().FindFacts(ctx, q) // no secret fact, no secret attribute
//
// Every graph read of a bound campaign (entities, facts, neighbours, paths,
// evidence, GraphRAG scopes, the retrieval graph, the change log, counts)
// filters in SQL with the one definition of secrecy (migration 0010,
// glyphoxa_public; memory.SecretKey and memory.PublicValue are its Go
// twin): players see no secret fact, no secret attribute and no fact
// waiting for review or rejected; an NPC also sees its own secrets and the
// secret facts it is an end of or listed in known_by (never a pending or
// rejected one). The memory-tool view (KGRead, KGNode, KGSync) takes its
// gist, notes and touches from the same filtered attributes. A player sees
// an entity first heard in a split scene (scene_only, migration 0032) only
// through a trace they may read that says its full name (view.entityVisible:
// a line it was heard in, a chunk saying it, a grant), in every entity read;
// a fact naming it and its id among a chunk's mentions are hidden with it.
// An NPC sees such an entity as a player bound to no one does, or when it
// is an end of a fact the DM gave the NPC (view.npcEntity): what its model
// is given, whoever talks to it hears. A hidden fact or
// entity reads as not found, exactly like a missing one. A campaign bound to a
// player or an NPC cannot be bound to another viewer, writes facts only as
// that player or NPC (proposals: WriteFact refuses the DM's, import's and
// extraction's writers), and does not read why a fact or an entity was
// retired.
//
// # Errors and outages
//
// Every statement goes through one querier that classifies its error:
// [IsOutage] errors (the server down, unreachable, shutting down, out of
// connections) wrap memory.ErrUnavailable, every other driver error wraps
// memory.ErrRefused, the driver's message unchanged. With a [Gate]
// ([Campaign.Through]) a statement is refused at once while the gate says
// the database is down, and an outage a statement meets is reported to it.
package postgres
