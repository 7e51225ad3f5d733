package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestMigrateIsIdempotentAndConcurrent(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := postgres.NewStore(ctx, dsn, testDims)
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent start %d: %v", i, err)
		}
	}
	// And once more, sequentially, on the migrated database.
	s, err := postgres.NewStore(ctx, dsn, testDims)
	check(t, err)
	defer s.Close()
	var n int
	check(t, s.Pool().QueryRow(ctx, "SELECT count(*) FROM schema_migrations").Scan(&n))
	if n == 0 {
		t.Fatal("no migration recorded")
	}
	var dim int
	check(t, s.Pool().QueryRow(ctx, "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'").Scan(&dim))
	if dim != testDims {
		t.Fatalf("embedding column has dimension %d, want %d", dim, testDims)
	}
}

func TestDimensionMismatchIsRefusedWithTheFix(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewStore(t, testDims)
	ctx := ctxT(t)
	_, err := postgres.NewStore(ctx, dsn, 16)
	var dm *memory.DimensionMismatchError
	if !errors.As(err, &dm) {
		t.Fatalf("opening with another dimension: got %v, want a DimensionMismatchError", err)
	}
	for _, want := range []string{"8", "16", "glyphoxa migrate --reembed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if dm.Database != testDims || dm.Configured != 16 {
		t.Errorf("got %+v", dm)
	}
}

// TestReembedRebuildsTheIndexForANewDimension: glyphoxa migrate --reembed
// keeps each chunk's text, drops its embedding and indexes the new
// dimension.
func TestReembedRebuildsTheIndexForANewDimension(t *testing.T) {
	t.Parallel()
	s, dsn := pgtest.NewStore(t, testDims)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "c1", SessionID: "s1", Content: "hello", Embedding: unit(0, 1, 0), StartAt: t0}}))
	s.Close()

	conn, err := pgx.Connect(ctx, dsn)
	check(t, err)
	// The embedding is kept in the row (migration 0043), before and after
	// its column's type changes: an exact search reads every one.
	storage := func(when string) {
		t.Helper()
		var st string
		check(t, conn.QueryRow(ctx, `SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'`).Scan(&st))
		if st != "m" {
			t.Fatalf("%s: chunks.embedding has storage %q, want m (main)", when, st)
		}
	}
	storage("a new database")
	n, err := postgres.Reembed(ctx, conn, 16)
	if err == nil {
		storage("after reembed")
	}
	conn.Close(context.Background())
	check(t, err)
	if n != 1 {
		t.Fatalf("Reembed reported %d chunks to embed, want 1", n)
	}
	s2, err := postgres.NewStore(ctx, dsn, 16)
	check(t, err)
	defer s2.Close()
	c2 := pgtest.Campaign(t, s2, "camp")
	chunks := must[[]memory.Chunk](t)(c2.Index().UnembeddedChunks(ctx, 10))
	if len(chunks) != 1 || chunks[0].Content != "hello" {
		t.Fatalf("after reembed the chunk text must survive without embedding, got %+v", chunks)
	}
	v := make([]float32, 16)
	v[3] = 1
	check(t, c2.Index().SetEmbeddings(ctx, map[string][]float32{"c1": v}))
	res := must[[]memory.ChunkResult](t)(c2.Index().Search(ctx, v, 1, memory.ChunkFilter{}))
	if len(res) != 1 || res[0].Distance > 1e-6 {
		t.Fatalf("search after reembed: %+v", res)
	}
}

func TestBadInputIsRefusedWithoutWriting(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	cases := []struct {
		name string
		do   func() error
	}{
		{"entry without session", func() error {
			_, err := c.Sessions().WriteEntry(ctx, memory.TranscriptEntry{Text: "x", At: t0})
			return err
		}},
		{"entry without time", func() error {
			_, err := c.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", Text: "x"})
			return err
		}},
		{"batch with one bad entry", func() error {
			_, err := c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
				{SessionID: "s9", Text: "fine", At: t0}, {SessionID: "", Text: "bad", At: t0}})
			return err
		}},
		{"entity without name", func() error { return c.Graph().UpsertEntity(ctx, memory.Entity{ID: "x", Type: "npc"}) }},
		{"confidence above one", func() error {
			_, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "elara", Type: "KNOWS",
				Provenance: memory.Provenance{Confidence: 1.5}})
			return err
		}},
		{"unknown source kind", func() error {
			_, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "elara", Type: "KNOWS",
				Provenance: memory.Provenance{Confidence: 0.9, Source: "rumour"}})
			return err
		}},
		{"wrong embedding size", func() error {
			return c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "c", SessionID: "s1", Embedding: []float32{1, 2}}})
		}},
		{"empty campaign id", func() error { _, err := s.Campaign(ctx, " "); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, memory.ErrInvalid) {
				t.Fatalf("got %v, want an error wrapping ErrInvalid", err)
			}
		})
	}
	// The refused batch wrote nothing, not even its good entry's session.
	if ss := must[[]memory.Session](t)(c.Sessions().Sessions(ctx)); len(ss) != 0 {
		for _, x := range ss {
			if x.ID == "s9" {
				t.Fatalf("refused batch left session s9 behind")
			}
		}
	}
	_, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "nobody", Type: "KNOWS",
		Provenance: memory.Provenance{Confidence: 0.9}})
	if !errors.Is(err, memory.ErrNotFound) || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("fact about a missing entity: got %v, want ErrNotFound naming it", err)
	}
}
