package retrieve

import (
	"fmt"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// TestExchangeBonus: a reply inherits from the lines its turn answers
// only when both match the question, the reply is one turn (or part of
// one) and another speaker closes the chunk before it; it inherits half of
// what its predecessor scores above the ranking's floor.
func TestExchangeBonus(t *testing.T) {
	hit := func(id, content string, score float64) postgres.ChunkHit {
		return postgres.ChunkHit{Chunk: memory.Chunk{ID: id, Content: content}, Score: score}
	}
	declare := hit("declare", "Mira: Who has the chalice?\nLio: I polish the amber goblet.", 10)
	reply := hit("reply", "GM: Rain falls. Lio, you polish the amber goblet until it gleams.", 5)
	tests := []struct {
		name   string
		direct []postgres.ChunkHit
		prev   map[string]string
		n      int
		want   string
	}{
		{"a reply inherits half its predecessor's score over the best",
			[]postgres.ChunkHit{declare, reply}, map[string]string{"reply": "declare"}, 30, "map[reply:0.5]"},
		{"above the floor at depth n only",
			[]postgres.ChunkHit{declare, reply, hit("floor", "Tess: Ugh.", 2)}, map[string]string{"reply": "declare"}, 3,
			"map[reply:0.4]"},
		{"a flat ranking passes on nothing",
			[]postgres.ChunkHit{hit("declare", declare.Chunk.Content, 2), hit("reply", reply.Chunk.Content, 2)},
			map[string]string{"reply": "declare"}, 2, "map[]"},
		{"the predecessor must match the question too",
			[]postgres.ChunkHit{declare, reply}, map[string]string{"reply": "chatter"}, 30, "map[]"},
		{"a chunk of several lines carries its own context",
			[]postgres.ChunkHit{declare, hit("reply", "GM: Lio, you polish it.\nTess: Nice.", 5)},
			map[string]string{"reply": "declare"}, 30, "map[]"},
		{"the part of a turn its speaker began in the chunk before is no reply",
			[]postgres.ChunkHit{hit("declare", "Lio: I polish the amber goblet.\nGM: Rain falls.", 10), reply},
			map[string]string{"reply": "declare"}, 30, "map[]"},
		{"no scores, nothing to pass on", []postgres.ChunkHit{hit("declare", "x", 0), hit("reply", "GM: y", 0)},
			map[string]string{"reply": "declare"}, 30, "map[]"},
		{"empty", nil, nil, 30, "map[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(exchangeBonus(tc.direct, tc.prev, tc.n)); got != tc.want {
				t.Errorf("exchangeBonus = %s, want %s", got, tc.want)
			}
		})
	}
}
