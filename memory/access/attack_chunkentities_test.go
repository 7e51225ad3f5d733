package access_test

import (
	"context"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackChunkEntityIDsOfUnheardChunk attacks the entity secrecy of
// split scenes through the chunk reads a player reaches (the semantic
// index: a session's chunks, the vector and text searches, ChunksByID,
// the hybrid ask): a chunk carries the ids of the entities it mentions
// (Chunk.EntityIDs, read from chunk_entities without
// view.entityVisible). In the split-party corpus p3's cross-talk "Is it
// my turn yet?" (said at the table outside scene A) is a chunk p3 may
// read, linked to "x-turn" (Turn Keeper), an entity no player may see:
// view.chunkHeard says that chunk is no trace of the name. The reads give
// p3 the hidden entity's id anyway (and ids derive from names).
func TestAttackChunkEntityIDsOfUnheardChunk(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	loadKnowledgeCorpus(t, s, "atkchunk", "testdata/knowledge/split-party.yaml")
	splitChunks(t, s, "atkchunk")
	loadSceneEntities(t, s, "atkchunk")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()

	c, err := d.Open(ctx, "atkchunk", memory.PlayerViewerOf("p3"))
	if err != nil {
		t.Fatal(err)
	}
	// The store agrees p3 may not see it.
	if _, err := c.Graph().Entity(ctx, "x-turn"); err == nil {
		t.Fatal("p3 sees x-turn: the corpus no longer hides it, the attack proves nothing")
	}
	x := c.Index()
	type read struct {
		path string
		ids  [][]string
	}
	var reads []read
	chunks, err := x.Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var ids [][]string
	var chunkIDs []string
	for _, ch := range chunks {
		ids = append(ids, ch.EntityIDs)
		chunkIDs = append(chunkIDs, ch.ID)
	}
	reads = append(reads, read{"Index().Chunks(s1)", ids})
	byID, err := x.ChunksByID(ctx, chunkIDs)
	if err != nil {
		t.Fatal(err)
	}
	ids = nil
	for _, ch := range byID {
		ids = append(ids, ch.EntityIDs)
	}
	reads = append(reads, read{"Index().ChunksByID", ids})
	th, err := x.TextSearch(ctx, "is it my turn yet", 20, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids = nil
	for _, h := range th {
		ids = append(ids, h.Chunk.EntityIDs)
	}
	reads = append(reads, read{"Index().TextSearch", ids})
	vh, err := x.VectorSearch(ctx, []float32{1, 0, 0, 0, 0, 0, 0, 1}, 50, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids = nil
	for _, h := range vh {
		ids = append(ids, h.Chunk.EntityIDs)
	}
	reads = append(reads, read{"Index().VectorSearch", ids})
	// Search filtered by the guessed id: a hit confirms the entity exists.
	sr, err := x.Search(ctx, []float32{1, 0, 0, 0, 0, 0, 0, 1}, 50, memory.ChunkFilter{EntityID: "x-turn"})
	if err != nil {
		t.Fatal(err)
	}
	ids = nil
	for _, h := range sr {
		ids = append(ids, append(h.Chunk.EntityIDs, "x-turn"))
	}
	reads = append(reads, read{"Index().Search(EntityID x-turn)", ids})

	for _, r := range reads {
		for _, es := range r.ids {
			for _, id := range es {
				if id == "x-turn" {
					t.Errorf("LEAK to p3: %s gave the id of x-turn (Turn Keeper), an entity p3 may not see", r.path)
					break
				}
			}
		}
	}
}
