package postgres_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestNearestChunksAreExactInACampaignOfSessions: a campaign of a few
// thousand chunks (six sessions of a weekly game) embedded by the offline
// embedder is searched exactly: every rank holds the chunk a comparison
// with every chunk puts there, and chunks at the same distance come in id
// order, so the same data and question give the same list. Through the
// HNSW index (pgvector's default search) such a campaign lost about a
// fifth of the true 30 nearest chunks: the offline embedder's vectors are
// hashed words, nearly orthogonal, and the graph's levels are drawn at
// random when rows are indexed, so which ones it lost changed from one
// import to the next.
func TestNearestChunksAreExactInACampaignOfSessions(t *testing.T) {
	t.Parallel()
	const dims, n, k = 384, 3000, 30
	s, _ := pgtest.NewStore(t, dims)
	ctx := ctxT(t)
	camp := pgtest.Campaign(t, s, "weekly")
	e, err := embed.NewOffline(dims)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := make([]string, 400)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("%c%c%c%cword", 'a'+rune(i%26), 'a'+rune(i/26%26), 'k'+rune(i%7), 'm'+rune(i%5))
	}
	text := func(words int) string {
		ws := make([]string, words)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	texts := make([]string, n)
	for i := range texts {
		texts[i] = text(8 + rng.IntN(30))
	}
	// Every fiftieth chunk repeats the one before: ties, to be broken by id.
	for i := 50; i < n; i += 50 {
		texts[i] = texts[i-1]
	}
	vecs := must[[][]float32](t)(e.Embed(ctx, texts))
	chunks := make([]memory.Chunk, n)
	for i := range chunks {
		chunks[i] = memory.Chunk{ID: fmt.Sprintf("c%04d", (i*7919)%n), SessionID: fmt.Sprintf("s%d", i/500+1),
			Content: texts[i], SpeakerIDs: []string{"u1"}, StartAt: t0.Add(time.Duration(i) * time.Minute), Embedding: vecs[i]}
	}
	for i := 0; i < n; i += 500 {
		check(t, camp.Index().IndexChunks(ctx, chunks[i:i+500]))
	}
	for q := range 40 {
		query := text(6)
		if q%4 == 0 {
			query = texts[rng.IntN(n)] // a question that is some chunk's words
		}
		v := must[[][]float32](t)(e.Embed(ctx, []string{query}))[0]
		type near struct {
			id   string
			dist float64
		}
		all := make([]near, n)
		for i, c := range chunks {
			all[i] = near{c.ID, cosineDistance(v, c.Embedding)}
		}
		slices.SortFunc(all, func(a, b near) int {
			if a.dist != b.dist {
				return cmpFloat(a.dist, b.dist)
			}
			return strings.Compare(a.id, b.id)
		})
		got := must[[]postgres.ChunkHit](t)(camp.Index().VectorSearch(ctx, v, k, nil))
		if len(got) != k {
			t.Fatalf("query %d: %d chunks, want %d", q, len(got), k)
		}
		for i, h := range got {
			if d := 1 - h.Score; math.Abs(d-all[i].dist) > 1e-5 {
				t.Fatalf("query %d %q, rank %d: chunk %s at distance %.6f, but chunk %s is at %.6f: the search is not exact",
					q, query, i+1, h.Chunk.ID, d, all[i].id, all[i].dist)
			}
			if i > 0 && h.Score == got[i-1].Score && h.Chunk.ID < got[i-1].Chunk.ID {
				t.Fatalf("query %d, rank %d: chunks %s and %s at the same distance out of id order", q, i+1, got[i-1].Chunk.ID, h.Chunk.ID)
			}
		}
	}
}

func cosineDistance(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return 1 - dot/math.Sqrt(na*nb)
}

func cmpFloat(a, b float64) int {
	if a < b {
		return -1
	}
	return 1
}
