package postgres_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// A player's searches leave out the chunks they may not read inside the
// query (view.deniedCTEs), so the top k are exact: the k best chunks the
// player may read, in the order and with the scores the DM's search gives
// them, not the DM's k less those denied. Checked over 20 split sessions
// (1,000 chunks, a fifth of each in a split scene) and three chunks that
// rank first for the DM: one straddling a scene's start, one without
// times (it spans its session) and one without an end (a line of u1's in
// the scene); for any player,
// players bound outside the scenes (u0, u2) and in them (u1), by words
// (every path of TextSearch: the postings read whole, the top postings
// proven and not, a search among given chunks) and by vector.
func TestPlayerSearchIsExact(t *testing.T) {
	t.Parallel()
	s, dm := splitBenchCampaign(t, 20, true)
	ctx := ctxT(t)
	// Session s1 starts 2026-01-02; line j is said j·10 s later, the scene
	// runs from line 100 to line 150.
	for _, q := range []string{
		`INSERT INTO chunks (campaign_id, id, session_id, content, start_at, end_at, embedding) VALUES
		 ('bench', 'straddle', 's1', 'tale x17 y3 x17', timestamptz '2026-01-02' + 980 * interval '1 second',
		  timestamptz '2026-01-02' + 1010 * interval '1 second', '[1,0,0.5,0,0,0.2,0,0.5]'),
		 ('bench', 'untimed', 's2', 'tale x17 y3 y3', NULL, NULL, '[1,0,0.5,0,0,0.2,0,0.49]'),
		 ('bench', 'open', 's3', 'x17 y3 z2', timestamptz '2026-01-04' + 1210 * interval '1 second', NULL, '[1,0,0.5,0,0,0.2,0,0.48]')`,
		`ANALYZE chunks, chunk_postings`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	all := must[[]string](t)(dm.Index().ChunkIDsOfSessions(ctx, t0.AddDate(-10, 0, 0), t0.AddDate(10, 0, 0)))
	some := all[:len(all)/3]
	queries := []string{"x17", "x17 y3", "tale x17 y3", "y3 z2", "y3 y4 y5 z1", "tale"}
	vectors := [][]float32{{1, 0, 0.5, 0, 0, 0.2, 0, 0.5}, {0, 1, 0, 0.3, 0, 0, 0.1, 0.5}, {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}}
	// The DM's results, which each viewer's must equal less what the
	// viewer may not read: they do not depend on the viewer.
	type dmText struct{ full, fullSome []postgres.ChunkHit }
	dmTexts := map[string]dmText{}
	for _, q := range queries {
		dmTexts[q] = dmText{
			full:     must[[]postgres.ChunkHit](t)(dm.Index().TextSearch(ctx, q, 100000, nil)),
			fullSome: must[[]postgres.ChunkHit](t)(dm.Index().TextSearch(ctx, q, 100000, some)),
		}
	}
	dmExact := make([][]postgres.ChunkHit, len(vectors))
	for i, e := range vectors {
		dmExact[i] = must[[]postgres.ChunkHit](t)(dm.Index().VectorSearch(ctx, e, 100000, all))
	}
	proven := map[bool]int{}
	for _, v := range []memory.Viewer{memory.PlayerViewer(), memory.PlayerViewerOf("u0"), memory.PlayerViewerOf("u1"),
		memory.PlayerViewerOf("u2")} {
		c, err := dm.As(v)
		check(t, err)
		who := strings.TrimSpace(v.String() + " " + v.PlayerID)
		// What the viewer may read, by the row-by-row rule (ChunksByID).
		readable := map[string]bool{}
		for _, ch := range must[[]memory.Chunk](t)(c.Index().ChunksByID(ctx, all)) {
			readable[ch.ID] = true
		}
		if v.PlayerID != "u1" && (readable["straddle"] || readable["untimed"] || readable["open"] || len(readable) != 800) {
			t.Fatalf("%s reads %d chunks (straddle %v, untimed %v, open %v), want the 800 outside the scenes",
				who, len(readable), readable["straddle"], readable["untimed"], readable["open"])
		}
		if v.PlayerID == "u1" && len(readable) != len(all) {
			t.Fatalf("%s, in every scene, reads %d chunks, want all %d", who, len(readable), len(all))
		}
		filter := func(hits []postgres.ChunkHit, limit int, among []string) []postgres.ChunkHit {
			var out []postgres.ChunkHit
			for _, h := range hits {
				if readable[h.Chunk.ID] && (among == nil || slices.Contains(among, h.Chunk.ID)) && len(out) < limit {
					out = append(out, h)
				}
			}
			return out
		}
		same := func(what string, got, want []postgres.ChunkHit) {
			t.Helper()
			if len(got) != len(want) {
				t.Errorf("%s, %s: %d hits, want %d", who, what, len(got), len(want))
				return
			}
			for i := range got {
				if got[i].Chunk.ID != want[i].Chunk.ID || math.Abs(got[i].Score-want[i].Score) > 1e-9 {
					t.Errorf("%s, %s, hit %d: %s %.9f, want %s %.9f", who, what, i, got[i].Chunk.ID, got[i].Score,
						want[i].Chunk.ID, want[i].Score)
				}
			}
		}
		for _, q := range queries {
			full, fullSome := dmTexts[q].full, dmTexts[q].fullSome
			for _, k := range []int{1, 5, 10, 40} {
				same(fmt.Sprintf("TextSearch(%q, %d)", q, k), must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, q, k, nil)),
					filter(full, k, nil))
				same(fmt.Sprintf("TextSearch(%q, %d, a third)", q, k), must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, q, k, some)),
					filter(fullSome, k, some))
				hits, ok, err := c.Index().TopPostingsForTest(ctx, q, k)
				check(t, err)
				proven[ok]++
				if ok {
					same(fmt.Sprintf("top postings of %q, %d", q, k), hits, filter(full, k, nil))
				}
			}
		}
		for i, e := range vectors {
			// Among given chunks the search is exact: the DM's ranking,
			// less what the viewer may not read.
			exact := dmExact[i]
			for _, k := range []int{1, 10, 40} {
				same(fmt.Sprintf("VectorSearch(%d, %d, all)", i, k), must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, e, k, all)),
					filter(exact, k, nil))
				// Over the whole campaign it walks the HNSW index as the
				// row-by-row Search does: the same chunks, k of them.
				got := must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, e, k, nil))
				want := must[[]memory.ChunkResult](t)(c.Index().Search(ctx, e, k, memory.ChunkFilter{}))
				if len(got) != k || len(want) != k {
					t.Errorf("%s, VectorSearch(%d, %d): %d hits, Search %d, want %d", who, i, k, len(got), len(want), k)
					continue
				}
				for j := range got {
					if !readable[got[j].Chunk.ID] || got[j].Chunk.ID != want[j].Chunk.ID && got[j].Score != 1-want[j].Distance {
						t.Errorf("%s, VectorSearch(%d, %d), hit %d: %s %.9f (readable %v), Search %s %.9f", who, i, k, j,
							got[j].Chunk.ID, got[j].Score, readable[got[j].Chunk.ID], want[j].Chunk.ID, 1-want[j].Distance)
					}
				}
			}
		}
	}
	// Both outcomes of the top postings were met (else a path went untested).
	if proven[true] == 0 || proven[false] == 0 {
		t.Errorf("top postings proven %d times, not proven %d times: want both", proven[true], proven[false])
	}
}
