// Package postgres stores glyphoxa's three memory layers in one PostgreSQL
// database with pgvector, sharing one connection pool.
//
//	store, err := postgres.NewStore(ctx, dsn, 384)
//	if err != nil { ... }
//	defer store.Close()
//	c, err := store.Campaign(ctx, "ironhold-saga")
//	c.Sessions().WriteEntry(ctx, entry)          // L1, memory.SessionStore
//	c.Index().Search(ctx, vec, 10, filter)        // L2, memory.SemanticIndex
//	c.Graph().IdentitySnapshot(ctx, "grimjaw")    // L3, memory.KnowledgeGraph
//	c.Graph().QueryWithEmbedding(ctx, vec, 5, scope) // memory.GraphRAGQuerier
//
// NewStore migrates the schema first (versioned, transactional, safe to run
// on every start). The embedding dimension is fixed per database: opening a
// database built for another dimension fails with a
// *memory.DimensionMismatchError that names the fix.
//
// Every row carries its campaign id and every query is bound to the campaign
// the layer was obtained for, so campaigns never see each other's data.
package postgres
