package retrieve

import (
	"fmt"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/ppr"
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

// TestMergeRepeat: a chunk that another result of the same session holds
// whole, or that holds one whole, takes no place of its own; the earlier
// place keeps the larger text.
func TestMergeRepeat(t *testing.T) {
	line := "Bram: Right, while we're in the Lantern Bridge I hide the copper dagger."
	two := "Tess: That's a twelve.\n" + line
	chunk := func(id, session, content string) memory.Chunk {
		return memory.Chunk{ID: id, SessionID: session, Content: content}
	}
	tests := []struct {
		name   string
		chunks []memory.Chunk
		want   string // the ids and contents' lengths of the merged list
	}{
		{"a shorter window after a longer one is dropped",
			[]memory.Chunk{chunk("two", "s1", two), chunk("one", "s1", line)}, fmt.Sprintf("[two:%d]", len(two))},
		{"a longer window after a shorter one takes its place",
			[]memory.Chunk{chunk("one", "s1", line), chunk("x", "s1", "GM: Rain."), chunk("two", "s1", two)},
			fmt.Sprintf("[two:%d x:9]", len(two))},
		{"the same words in another session are another passage",
			[]memory.Chunk{chunk("one", "s1", line), chunk("again", "s2", line)},
			fmt.Sprintf("[one:%d again:%d]", len(line), len(line))},
		{"overlapping windows that neither holds whole stay apart",
			[]memory.Chunk{chunk("a", "s1", "A: x\nB: y"), chunk("b", "s1", "B: y\nC: z")}, "[a:9 b:9]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out []Result
			for i, c := range tc.chunks {
				if !mergeRepeat(out, c) {
					out = append(out, chunkResult(postgres.ChunkHit{Chunk: c, Score: float64(len(tc.chunks) - i)}))
				}
			}
			var got []string
			for _, x := range out {
				got = append(got, fmt.Sprintf("%s:%d", x.ID, len(x.Content)))
			}
			if fmt.Sprint(got) != tc.want {
				t.Errorf("merged = %v, want %s", got, tc.want)
			}
			for i := 1; i < len(out); i++ {
				if out[i].Score > out[i-1].Score {
					t.Errorf("a merge changed the order of the scores: %v", out)
				}
			}
		})
	}
}

// TestPerDegree: the walk's chunks are ranked by their mass over the
// number of entities each is linked to (at least 1), ties by id, so that
// a recap that names everyone falls below a line that names one of the
// question's entities with less mass.
func TestPerDegree(t *testing.T) {
	degree := map[string]int{"recap": 9, "line": 1, "loose": 0, "pair": 2, "a": 2, "b": 2}
	deg := func(id string) int { return degree[id] }
	tests := []struct {
		name string
		pr   []ppr.Result
		want string
	}{
		{"a hub falls below a specific line",
			[]ppr.Result{{ID: "recap", Score: 0.09}, {ID: "line", Score: 0.02}},
			"[{line true 0.02} {recap true 0.01}]"},
		{"a chunk linked to nothing counts as degree 1",
			[]ppr.Result{{ID: "pair", Score: 0.04}, {ID: "loose", Score: 0.03}},
			"[{loose true 0.03} {pair true 0.02}]"},
		{"ties by id",
			[]ppr.Result{{ID: "b", Score: 0.04}, {ID: "a", Score: 0.04}},
			"[{a true 0.02} {b true 0.02}]"},
		{"empty", nil, "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]ppr.Result, len(tc.pr))
			for i, x := range tc.pr {
				x.Chunk = true
				in[i] = x
			}
			got := perDegree(in, deg)
			if s := fmt.Sprint(got); s != tc.want {
				t.Errorf("perDegree = %s, want %s", s, tc.want)
			}
			if len(in) > 0 && in[0] != (ppr.Result{ID: tc.pr[0].ID, Chunk: true, Score: tc.pr[0].Score}) {
				t.Errorf("perDegree changed its input: %v", in)
			}
		})
	}
}
