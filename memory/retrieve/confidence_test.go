package retrieve

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestScoreConfidence: a ranking by score is as confident as its best
// stands above its score at depth n, always within [0, 1]; vector hits
// score a cosine similarity, negative for a chunk pointing away from the
// question, which once gave the vector ranking a confidence above 1.
func TestScoreConfidence(t *testing.T) {
	hits := func(scores ...float64) []postgres.ChunkHit {
		out := make([]postgres.ChunkHit, len(scores))
		for i, s := range scores {
			out[i].Score = s
		}
		return out
	}
	for _, tc := range []struct {
		name string
		hits []postgres.ChunkHit
		n    int
		want float64
	}{
		{"nothing matched", nil, 3, 0},
		{"best scores nothing", hits(0, 0, 0), 3, 0},
		{"fewer than n matched", hits(4, 2), 3, 1},
		{"flat list", hits(0.5, 0.5, 0.5), 3, 0},
		{"best stands out", hits(4, 2, 1), 3, 0.75},
		{"negative cosine at depth n", hits(0.4, 0.1, -0.2), 3, 1},
		{"negative cosine beyond n", hits(0.4, 0.2, -0.2), 2, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scoreConfidence(tc.hits, tc.n); got != tc.want || got < 0 || got > 1 {
				t.Errorf("scoreConfidence(%v, %d) = %v, want %v", tc.hits, tc.n, got, tc.want)
			}
		})
	}
}
