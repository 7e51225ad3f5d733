package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSearchQueryBounds sends hostile queries through every path where a
// caller's text becomes a full-text query or a substring pattern: each is
// refused with ErrInvalid before it reaches PostgreSQL, whose parser would
// otherwise run out of stack on 100,000 words, and whose driver refuses a
// NUL byte. A query at the bounds still reaches the database and answers.
func TestSearchQueryBounds(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	npc := entry("s1", "grimjaw", "the forge is cold tonight", 0)
	npc.NPCID = "grimjaw"
	must[int](t)(c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
		npc, entry("s1", "u1", "who forged the dawn hammer", time.Minute),
	}))
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "k1", SessionID: "s1", Content: "Grimjaw forged the Dawn Hammer",
		SpeakerIDs: []string{"u1"}, EntityIDs: []string{"grimjaw", "hammer"}, StartAt: t0}}))

	paths := []struct {
		name string
		run  func(ctx context.Context, q string) error
	}{
		{"SessionLog.Search", func(ctx context.Context, q string) error {
			_, err := c.Sessions().Search(ctx, q, memory.SearchOpts{})
			return err
		}},
		{"SessionLog.Search any word", func(ctx context.Context, q string) error {
			_, err := c.Sessions().Search(ctx, q, memory.SearchOpts{Any: true})
			return err
		}},
		{"SessionLog.SearchHeard", func(ctx context.Context, q string) error {
			_, err := c.Sessions().SearchHeard(ctx, "grimjaw", q, 5)
			return err
		}},
		{"SemanticIndex.TextSearch", func(ctx context.Context, q string) error {
			_, err := c.Index().TextSearch(ctx, q, 5, nil)
			return err
		}},
		{"Graph.QueryWithContext", func(ctx context.Context, q string) error {
			_, err := c.Graph().QueryWithContext(ctx, q, memory.GraphScope{EntityIDs: []string{"grimjaw"}, Depth: 1})
			return err
		}},
		{"Graph.FindEntities", func(ctx context.Context, q string) error {
			_, err := c.Graph().FindEntities(ctx, memory.EntityFilter{Name: q})
			return err
		}},
		{"Graph.FindFacts", func(ctx context.Context, q string) error {
			_, err := c.Graph().FindFacts(ctx, postgres.FactQuery{Text: q})
			return err
		}},
		{"Graph.NamedFactsAsOf", func(ctx context.Context, q string) error {
			_, err := c.Graph().NamedFactsAsOf(ctx, q, "s1", false)
			return err
		}},
	}
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("word%d", i)
		}
		return strings.Join(w, " ")
	}
	hostile := []struct {
		name, q, want string
	}{
		{"100k words", words(100_000), "bytes allowed"},
		{"too many words", words(memory.MaxQueryTerms + 1), "more than the 512 allowed"},
		{"NUL byte", "forge\x00hammer", "NUL byte"},
		{"invalid UTF-8", "forge \xc3\x28 hammer", "not valid UTF-8"},
	}
	// At the bounds: the most words allowed, and the most lexemes 8 KiB
	// can spell (single letters joined by hyphens, each a word of its own
	// to the parser, none counted by CheckQuery).
	hyphens := strings.Repeat("a-", memory.MaxQueryBytes/2-1) + "a"
	bounds := []string{words(memory.MaxQueryTerms), strings.Repeat("forge or ", memory.MaxQueryTerms-1) + "forge", hyphens}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			for _, h := range hostile {
				err := p.run(ctx, h.q)
				if !errors.Is(err, memory.ErrInvalid) {
					t.Errorf("%s: got %v, want an error wrapping ErrInvalid", h.name, err)
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, h.want) || strings.Contains(msg, "stack depth") || len(msg) > 300 {
					t.Errorf("%s: error %.300q, want it to say %q, briefly", h.name, msg, h.want)
				}
			}
			for i, q := range bounds {
				if err := p.run(ctx, q); err != nil {
					t.Errorf("query %d at the bounds (%d bytes) refused: %.300v", i, len(q), err)
				}
			}
		})
	}
}
