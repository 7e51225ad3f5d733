package postgres_test

// Adversarial review of the nearest-chunk search (index.go nearest,
// 1e23354): exact in a campaign of at most WithExactSearch chunks, HNSW
// (iterative scan, gated in SQL on chunk_counts) past it, exact again when
// the index returns short. A player after secrets, an operator, a
// database holding many campaigns.
//
// Which way a search went is read from PostgreSQL's count of scans of the
// HNSW index (pg_stat_user_indexes.idx_scan of chunks_embedding_hnsw), on a
// store of one connection so that the backend that searched is the one
// whose statistics are flushed (pg_stat_force_next_flush). On tables this
// small the planner would sort the rows rather than walk the index; the
// tests that look at the path take sorts and sequential scans off on that
// connection (hnswPlans), so the approximate query goes through the index
// whenever its gate lets it run, and the exact one never can.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// hnswScans returns how many scans of the HNSW index the database counted.
func hnswScans(t *testing.T, ctx context.Context, s *postgres.Store) int64 {
	t.Helper()
	if _, err := s.Pool().Exec(ctx, "SELECT pg_stat_force_next_flush()"); err != nil {
		t.Fatal(err)
	}
	var n int64
	check(t, s.Pool().QueryRow(ctx, `SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes
		WHERE indexrelname = 'chunks_embedding_hnsw'`).Scan(&n))
	return n
}

// hnswPlans makes the planner of the store's one connection walk the
// HNSW index for an ORDER BY distance whenever it may.
func hnswPlans(t *testing.T, ctx context.Context, s *postgres.Store) {
	t.Helper()
	for _, q := range []string{"SET enable_seqscan = off", "SET enable_sort = off"} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// viaIndex runs fn and reports whether it scanned the HNSW index.
func viaIndex(t *testing.T, ctx context.Context, s *postgres.Store, fn func()) bool {
	t.Helper()
	before := hnswScans(t, ctx, s)
	fn()
	return hnswScans(t, ctx, s) > before
}

// atkChunk is a chunk as the database holds it, with its distance to a
// query computed by the database.
type atkChunk struct {
	id, session string
	speakers    []string
	start       time.Time
	hasStart    bool
	entities    []string
	dist        float64
}

// truth returns every embedded chunk of campaign camp with its distance to
// q, nearest first, ties by id: what an exact search orders by.
func truth(t *testing.T, ctx context.Context, s *postgres.Store, camp string, q []float32) []atkChunk {
	t.Helper()
	rows, err := s.Pool().Query(ctx, `SELECT c.id, c.session_id, c.speaker_ids, c.start_at,
		coalesce((SELECT array_agg(ce.entity_id) FROM chunk_entities ce WHERE ce.campaign_id = c.campaign_id AND ce.chunk_id = c.id), '{}'),
		c.embedding <=> $2
		FROM chunks c WHERE c.campaign_id = $1 AND c.embedding IS NOT NULL ORDER BY (c.embedding <=> $2) + 0, c.id`,
		camp, pgvector.NewVector(q))
	check(t, err)
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (atkChunk, error) {
		var c atkChunk
		var start *time.Time
		err := r.Scan(&c.id, &c.session, &c.speakers, &start, &c.entities, &c.dist)
		if start != nil {
			c.start, c.hasStart = *start, true
		}
		return c, err
	})
	check(t, err)
	return out
}

func (f atkFilter) matches(c atkChunk) bool {
	if f.SessionID != "" && c.session != f.SessionID {
		return false
	}
	if f.SpeakerID != "" && !slices.Contains(c.speakers, f.SpeakerID) {
		return false
	}
	if f.EntityID != "" && !slices.Contains(c.entities, f.EntityID) {
		return false
	}
	if !f.After.IsZero() && (!c.hasStart || !c.start.After(f.After)) {
		return false
	}
	if !f.Before.IsZero() && (!c.hasStart || !c.start.Before(f.Before)) {
		return false
	}
	return true
}

type atkFilter memory.ChunkFilter

// atkSplitCampaign writes campaign camp: sessions s1..sN of 50 chunks (8
// dimensions), each session's lines 100 to 150 a split scene of u1 alone
// (its chunks 20 to 30: a fifth), speakers u0..u2, a tenth of the chunks
// naming the entity "tower" and a twentieth "vault", which was first heard
// in a split scene (scene_only).
func atkSplitCampaign(t *testing.T, ctx context.Context, s *postgres.Store, camp string, sessions int) {
	t.Helper()
	c := pgtest.Campaign(t, s, camp)
	check(t, c.Graph().UpsertEntities(ctx, []memory.Entity{
		{ID: "tower", Type: memory.EntityLocation, Name: "Tower of Whispers"},
		{ID: "vault", Type: memory.EntityLocation, Name: "Sunken Vault"},
	}))
	for _, q := range []string{
		`INSERT INTO sessions (campaign_id, id, started_at)
		 SELECT $2, 's' || i, timestamptz '2026-01-01' + i * interval '1 day' FROM generate_series(1, $1) i`,
		`INSERT INTO transcript_entries (campaign_id, session_id, speaker_id, speaker_name, text, at)
		 SELECT $2, 's' || i, 'u' || (j % 3), 'P', 'line ' || j, timestamptz '2026-01-01' + i * interval '1 day' + j * interval '10 seconds'
		 FROM generate_series(1, $1) i, generate_series(0, 249) j`,
		`INSERT INTO chunks (campaign_id, id, session_id, content, start_at, end_at, speaker_ids, embedding)
		 SELECT $2, 's' || i || '-' || lpad(k::text, 2, '0'), 's' || i, 'tale ' || k,
		        timestamptz '2026-01-01' + i * interval '1 day' + k * 5 * interval '10 seconds',
		        timestamptz '2026-01-01' + i * interval '1 day' + (k * 5 + 4) * interval '10 seconds' + interval '1 second',
		        ARRAY['u' || (k % 3)],
		        ARRAY[sin(i * 50 + k), cos(i * 50 + k), sin(1.7 * (i * 50 + k)), cos(2.3 * (i * 50 + k)),
		              sin(3.1 * (i * 50 + k)), cos(0.3 * (i * 50 + k)), sin(0.7 * (i * 50 + k)), 0.5]::real[]::vector
		 FROM generate_series(1, $1) i, generate_series(0, 49) k`,
		`INSERT INTO session_presence (campaign_id, session_id, at, players, split)
		 SELECT $2, 's' || i, timestamptz '2026-01-01' + i * interval '1 day' + p.line * interval '10 seconds', p.players, p.split
		 FROM generate_series(1, $1) i, (VALUES (0, '{u0,u1,u2}'::text[], false), (100, '{u1}', true), (150, '{u0,u1,u2}', false)) p(line, players, split)`,
		`INSERT INTO chunk_entities (campaign_id, chunk_id, entity_id)
		 SELECT $2, c.id, 'tower' FROM chunks c WHERE c.campaign_id = $2 AND hashtext(c.id) % 10 = 0
		 UNION ALL
		 SELECT $2, c.id, 'vault' FROM chunks c WHERE c.campaign_id = $2 AND hashtext(c.id || 'v') % 20 = 0`,
		`UPDATE entities SET scene_only = true WHERE campaign_id = $2 AND id = 'vault'`,
		`ANALYZE sessions, transcript_entries, chunks, session_presence, chunk_entities`,
	} {
		if strings.HasPrefix(q, "ANALYZE") {
			_, err := s.Pool().Exec(ctx, q)
			check(t, err)
			continue
		}
		if strings.Contains(q, "$1") {
			_, err := s.Pool().Exec(ctx, q, sessions, camp)
			check(t, err)
		} else {
			_, err := s.Pool().Exec(ctx, strings.ReplaceAll(q, "$2", "$1"), camp)
			check(t, err)
		}
	}
}

// atkQueries are query vectors: some between chunks, and the embeddings
// of chunks inside split scenes (the nearest chunk to each is a denied
// one: a player's search must neither return it nor rank by it).
func atkQueries(t *testing.T, ctx context.Context, s *postgres.Store, camp string) [][]float32 {
	t.Helper()
	qs := [][]float32{{1, 0, 0.5, 0, 0, 0.2, 0, 0.5}, {0, 1, 0, 0.3, 0, 0, 0.1, 0.5}, {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2}}
	rows, err := s.Pool().Query(ctx, `SELECT embedding FROM chunks WHERE campaign_id = $1 AND id IN ('s1-25', 's2-21', 's3-29')
		ORDER BY id`, camp)
	check(t, err)
	vs, err := pgx.CollectRows(rows, pgx.RowTo[pgvector.Vector])
	check(t, err)
	if len(vs) != 3 {
		t.Fatalf("%d scene chunks", len(vs))
	}
	for _, v := range vs {
		qs = append(qs, v.Slice())
	}
	return qs
}

var atkViewers = []memory.Viewer{memory.PlayerViewer(), memory.PlayerViewerOf("u0"), memory.PlayerViewerOf("u1"),
	memory.PlayerViewerOf("u2")}

// checkViewerSearches runs Search (with each filter) and VectorSearch as
// viewer v over campaign camp and checks them against the truth: only
// chunks v may read and that match the filter, nearest first, as many as
// there are up to k; when exact, the very chunks an exact search over what
// v may read gives, in its order.
func checkViewerSearches(t *testing.T, ctx context.Context, s *postgres.Store, camp string, v memory.Viewer, exact bool,
	queries [][]float32) {
	t.Helper()
	dm := pgtest.Campaign(t, s, camp)
	c, err := dm.As(v)
	check(t, err)
	who := strings.TrimSpace(v.String() + " " + v.PlayerID)
	var allIDs []string
	for _, ch := range truth(t, ctx, s, camp, queries[0]) {
		allIDs = append(allIDs, ch.id)
	}
	readable := map[string]bool{}
	for _, ch := range must[[]memory.Chunk](t)(c.Index().ChunksByID(ctx, allIDs)) {
		readable[ch.ID] = true
	}
	// A player who may not see the scene-only entity finds nothing by it.
	// (No trace of it names the scene-only one, to a player in the scene
	// either.)
	entityVisible := map[string]bool{"tower": true, "vault": v.Role != memory.RolePlayer}
	filters := []memory.ChunkFilter{{}, {SessionID: "s2"}, {SpeakerID: "u1"}, {EntityID: "tower"}, {EntityID: "vault"},
		{After: time.Date(2026, 1, 2, 0, 3, 0, 0, time.UTC), Before: time.Date(2026, 1, 3, 0, 5, 0, 0, time.UTC)},
		{SessionID: "s3", SpeakerID: "u2", After: time.Date(2026, 1, 3, 0, 1, 0, 0, time.UTC)}}
	for qi, q := range queries {
		all := truth(t, ctx, s, camp, q)
		for _, f := range filters {
			var want []atkChunk
			for _, ch := range all {
				if readable[ch.id] && atkFilter(f).matches(ch) && (f.EntityID == "" || entityVisible[f.EntityID]) {
					want = append(want, ch)
				}
			}
			for _, k := range []int{1, 7, 30} {
				got := must[[]memory.ChunkResult](t)(c.Index().Search(ctx, q, k, f))
				ids := make([]string, len(got))
				dists := make([]float64, len(got))
				for i, r := range got {
					ids[i], dists[i] = r.Chunk.ID, r.Distance
				}
				checkRanking(t, fmt.Sprintf("%s %s: Search(query %d, %d, %+v)", camp, who, qi, k, f), ids, dists, want, readable, k, exact)
			}
		}
		for _, k := range []int{1, 7, 30} {
			var want []atkChunk
			for _, ch := range all {
				if readable[ch.id] {
					want = append(want, ch)
				}
			}
			got := must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, q, k, nil))
			ids := make([]string, len(got))
			dists := make([]float64, len(got))
			for i, h := range got {
				ids[i], dists[i] = h.Chunk.ID, 1-h.Score
			}
			checkRanking(t, fmt.Sprintf("%s %s: VectorSearch(query %d, %d)", camp, who, qi, k), ids, dists, want, readable, k, exact)
		}
	}
}

func checkRanking(t *testing.T, what string, ids []string, dists []float64, want []atkChunk, readable map[string]bool, k int, exact bool) {
	t.Helper()
	allowed := map[string]bool{}
	for _, w := range want {
		allowed[w.id] = true
	}
	for i, id := range ids {
		if !readable[id] {
			t.Errorf("%s: rank %d is %s, a chunk the viewer may not read", what, i+1, id)
			return
		}
		if !allowed[id] {
			t.Errorf("%s: rank %d is %s, which the filter leaves out", what, i+1, id)
			return
		}
		if i > 0 && dists[i] < dists[i-1]-1e-9 {
			t.Errorf("%s: rank %d (%s, %.6f) nearer than rank %d (%s, %.6f)", what, i+1, id, dists[i], i, ids[i-1], dists[i-1])
			return
		}
	}
	if len(ids) != min(k, len(want)) {
		t.Errorf("%s: %d chunks, want %d (of %d the viewer may read that match)", what, len(ids), min(k, len(want)), len(want))
		return
	}
	if !exact {
		return
	}
	for i := range ids {
		if ids[i] != want[i].id || math.Abs(dists[i]-want[i].dist) > 1e-9 {
			t.Errorf("%s: rank %d is %s at %.9f, the exact search over what the viewer may read has %s at %.9f",
				what, i+1, ids[i], dists[i], want[i].id, want[i].dist)
			return
		}
	}
}

// TestAttackNearestPlayerSplitScenesBothPaths: a player's Search and
// VectorSearch over a campaign with split scenes, searched exactly (its
// size under the threshold) and through the HNSW index (the threshold set
// below its size): never a chunk the player may not read, every filter
// kept, as many chunks as there are; exactly the nearest of what they may
// read on the exact path, even for a query that is a denied chunk's own
// embedding.
func TestAttackNearestPlayerSplitScenesBothPaths(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []postgres.Option
		exact bool
	}{{"exact", nil, true}, {"index", []postgres.Option{postgres.WithExactSearch(50)}, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			s, _ := pgtest.NewStore(t, testDims, append(tc.opts, postgres.WithMaxConns(1))...)
			hnswPlans(t, ctx, s)
			atkSplitCampaign(t, ctx, s, "split", 6) // 300 chunks
			queries := atkQueries(t, ctx, s, "split")
			used := viaIndex(t, ctx, s, func() {
				for _, v := range atkViewers {
					checkViewerSearches(t, ctx, s, "split", v, tc.exact, queries)
				}
				checkViewerSearches(t, ctx, s, "split", memory.DMViewer(), tc.exact, queries)
			})
			if used == tc.exact {
				t.Errorf("the searches scanned the HNSW index: %v, want %v", used, !tc.exact)
			}
		})
	}
}

// TestAttackNearestCrossingTheThreshold: a campaign of exactly
// WithExactSearch chunks is searched exactly; one more chunk and it goes
// through the index; one chunk deleted and it is exact again. A campaign
// without a chunk_counts row (its statistics lost) is searched exactly,
// and finds its chunks.
func TestAttackNearestCrossingTheThreshold(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, _ := pgtest.NewStore(t, testDims, postgres.WithExactSearch(50), postgres.WithMaxConns(1))
	hnswPlans(t, ctx, s)
	c := pgtest.Campaign(t, s, "edge")
	var chunks []memory.Chunk
	for i := range 51 {
		chunks = append(chunks, memory.Chunk{ID: fmt.Sprintf("e%02d", i), SessionID: "s1", Content: fmt.Sprintf("line %d", i),
			StartAt: t0.Add(time.Duration(i) * time.Minute), Embedding: unit(i, i+3, float64(i%7)/10)})
	}
	check(t, c.Index().IndexChunks(ctx, chunks[:50]))
	q := unit(2, 5, 0.3)
	search := func(what string, n int, wantIndex bool) {
		t.Helper()
		var hits []postgres.ChunkHit
		var res []memory.ChunkResult
		used := viaIndex(t, ctx, s, func() {
			hits = must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, q, 10, nil))
			res = must[[]memory.ChunkResult](t)(c.Index().Search(ctx, q, 10, memory.ChunkFilter{}))
		})
		if used != wantIndex {
			t.Errorf("%s (%d chunks): searched through the index %v, want %v", what, n, used, wantIndex)
		}
		want := truth(t, ctx, s, "edge", q)
		if len(hits) != 10 || len(res) != 10 {
			t.Fatalf("%s: %d and %d chunks, want 10", what, len(hits), len(res))
		}
		if !wantIndex {
			for i := range hits {
				if hits[i].Chunk.ID != want[i].id || res[i].Chunk.ID != want[i].id {
					t.Errorf("%s: rank %d is %s (Search %s), the exact rank %s", what, i+1, hits[i].Chunk.ID, res[i].Chunk.ID, want[i].id)
				}
			}
		}
	}
	search("at the threshold", 50, false)
	check(t, c.Index().IndexChunks(ctx, chunks[50:]))
	search("one past the threshold", 51, true)
	_, err := s.Pool().Exec(ctx, `DELETE FROM chunks WHERE campaign_id = 'edge' AND id = 'e50'`)
	check(t, err)
	search("back at the threshold", 50, false)
	// Without its row in chunk_counts the campaign counts as empty: exact.
	_, err = s.Pool().Exec(ctx, `DELETE FROM chunk_counts WHERE campaign_id = 'edge'`)
	check(t, err)
	check(t, c.Index().IndexChunks(ctx, chunks[50:])) // the trigger writes a row of 1
	var n int
	check(t, s.Pool().QueryRow(ctx, `SELECT chunks FROM chunk_counts WHERE campaign_id = 'edge'`).Scan(&n))
	search("with its statistics lost (chunk_counts says 1)", n, false)
	_, err = s.Pool().Exec(ctx, `DELETE FROM chunk_counts WHERE campaign_id = 'edge'`)
	check(t, err)
	search("without a chunk_counts row", 0, false)
}

// TestAttackNearestWithoutCountsSearchesTheIndexWhenAsked: with
// WithExactSearch(-1) every campaign goes through the index, one without
// a chunk_counts row too.
func TestAttackNearestWithoutCountsSearchesTheIndexWhenAsked(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, _ := pgtest.NewStore(t, testDims, postgres.WithExactSearch(-1), postgres.WithMaxConns(1))
	hnswPlans(t, ctx, s)
	c := pgtest.Campaign(t, s, "nocount")
	var chunks []memory.Chunk
	for i := range 20 {
		chunks = append(chunks, memory.Chunk{ID: fmt.Sprintf("n%02d", i), SessionID: "s1", Content: "x",
			Embedding: unit(i, i+1, 0.2)})
	}
	check(t, c.Index().IndexChunks(ctx, chunks))
	_, err := s.Pool().Exec(ctx, `DELETE FROM chunk_counts WHERE campaign_id = 'nocount'`)
	check(t, err)
	var hits []postgres.ChunkHit
	if !viaIndex(t, ctx, s, func() { hits = must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, unit(3, 4, 0.2), 5, nil)) }) {
		t.Error("WithExactSearch(-1): a campaign without a chunk_counts row was not searched through the index")
	}
	if len(hits) != 5 || hits[0].Score < 1-1e-6 {
		t.Errorf("hits %v", hits)
	}
}

// TestAttackNearestWithExactSearchZero (failed before the fix: 0 was taken
// for "not set"): WithExactSearch sets "the largest
// campaign, in chunks, whose nearest-chunk searches read every chunk";
// WithExactSearch(0) asks for every campaign with a chunk to go through
// the index.
func TestAttackNearestWithExactSearchZero(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, _ := pgtest.NewStore(t, testDims, postgres.WithExactSearch(0), postgres.WithMaxConns(1))
	hnswPlans(t, ctx, s)
	c := pgtest.Campaign(t, s, "zero")
	var chunks []memory.Chunk
	for i := range 20 {
		chunks = append(chunks, memory.Chunk{ID: fmt.Sprintf("z%02d", i), SessionID: "s1", Content: "x",
			Embedding: unit(i, i+1, 0.2)})
	}
	check(t, c.Index().IndexChunks(ctx, chunks))
	if !viaIndex(t, ctx, s, func() { must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, unit(3, 4, 0.2), 5, nil)) }) {
		t.Error("WithExactSearch(0): a campaign of 20 chunks (more than 0) was searched exactly: 0 is taken for " +
			"\"not set\" (the default, 4,000,000/dims = 500,000 chunks at 8 dimensions)")
	}
}

// TestAttackNearestManyCampaigns: one database holds a small campaign
// (exact), a large one (through the index) and a third whose thousands of
// chunks sit exactly on the queries: the small one is exact and sees none
// of the others' chunks; the large one finds its own nearest chunks past
// the thousands of others' that the index meets first.
func TestAttackNearestManyCampaigns(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, _ := pgtest.NewStore(t, testDims, postgres.WithExactSearch(100), postgres.WithMaxConns(1))
	hnswPlans(t, ctx, s)
	queries := [][]float32{unit(0, 1, 0.3), unit(2, 5, 0.1), unit(7, 3, 0.6)}
	// The crowd: 3,000 chunks on the queries themselves.
	crowd := pgtest.Campaign(t, s, "crowd")
	var cs []memory.Chunk
	for i := range 3000 {
		cs = append(cs, memory.Chunk{ID: fmt.Sprintf("crowd-%04d", i), SessionID: "s1", Content: "crowd",
			Embedding: queries[i%len(queries)]})
	}
	check(t, crowd.Index().IndexChunks(ctx, cs))
	write := func(camp string, n int) *postgres.Campaign {
		c := pgtest.Campaign(t, s, camp)
		var cs []memory.Chunk
		for i, v := range atkVectors(n, testDims) {
			cs = append(cs, memory.Chunk{ID: fmt.Sprintf("%s-%03d", camp, i), SessionID: fmt.Sprintf("s%d", i%4+1),
				Content: camp, SpeakerIDs: []string{fmt.Sprintf("u%d", i%3)}, StartAt: t0.Add(time.Duration(i) * time.Minute),
				Embedding: v})
		}
		// Each query's nearest chunk of the campaign: on it, less a little.
		for qi, q := range queries {
			v := slices.Clone(q)
			v[(qi+4)%testDims] += 0.01
			cs = append(cs, memory.Chunk{ID: fmt.Sprintf("%s-near%d", camp, qi), SessionID: "s1", Content: camp,
				SpeakerIDs: []string{"u0"}, StartAt: t0, Embedding: v})
		}
		check(t, c.Index().IndexChunks(ctx, cs))
		return c
	}
	small := write("small", 40)
	large := write("large", 400)
	check(t, func() error { _, err := s.Pool().Exec(ctx, "ANALYZE chunks"); return err }())
	for qi, q := range queries {
		for _, tc := range []struct {
			c     *postgres.Campaign
			index bool
		}{{small, false}, {large, true}} {
			camp := tc.c.ID()
			want := truth(t, ctx, s, camp, q)
			for _, k := range []int{1, 10, 40} {
				for _, f := range []memory.ChunkFilter{{}, {SessionID: "s1"}, {SpeakerID: "u0"}} {
					var res []memory.ChunkResult
					var hits []postgres.ChunkHit
					used := viaIndex(t, ctx, s, func() {
						res = must[[]memory.ChunkResult](t)(tc.c.Index().Search(ctx, q, k, f))
						if f == (memory.ChunkFilter{}) {
							hits = must[[]postgres.ChunkHit](t)(tc.c.Index().VectorSearch(ctx, q, k, nil))
						}
					})
					if used != tc.index {
						t.Errorf("%s, query %d, %d, %+v: through the index %v, want %v", camp, qi, k, f, used, tc.index)
					}
					var fw []atkChunk
					for _, w := range want {
						if atkFilter(f).matches(w) {
							fw = append(fw, w)
						}
					}
					if len(res) == 0 || res[0].Chunk.ID != fmt.Sprintf("%s-near%d", camp, qi) {
						t.Errorf("%s, query %d, %d, %+v: first %v, want its own nearest chunk %s-near%d", camp, qi, k, f,
							ids(res, func(r memory.ChunkResult) string { return r.Chunk.ID }), camp, qi)
					}
					rids := ids(res, func(r memory.ChunkResult) string { return r.Chunk.ID })
					rd := make([]float64, len(res))
					for i, r := range res {
						rd[i] = r.Distance
					}
					all := map[string]bool{}
					for _, w := range want {
						all[w.id] = true
					}
					checkRanking(t, fmt.Sprintf("%s Search(query %d, %d, %+v)", camp, qi, k, f), rids, rd, fw, all, k, !tc.index)
					if hits != nil {
						hids := ids(hits, func(h postgres.ChunkHit) string { return h.Chunk.ID })
						hd := make([]float64, len(hits))
						for i, h := range hits {
							hd[i] = 1 - h.Score
						}
						checkRanking(t, fmt.Sprintf("%s VectorSearch(query %d, %d)", camp, qi, k), hids, hd, fw, all, k, !tc.index)
					}
				}
			}
		}
	}
}

// TestAttackNearestInTxSettingsStayLocal: searches inside a caller's
// transaction (InTx), through the index and exactly, find what they find
// outside; once the transaction ends, the connection (the store's only
// one) has pgvector's defaults again: neither the iterative scan nor the
// raised ef_search outlives it. A transaction that fails after a search
// leaves them too.
func TestAttackNearestInTxSettingsStayLocal(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, _ := pgtest.NewStore(t, testDims, postgres.WithExactSearch(50), postgres.WithMaxConns(1))
	settings := func() (string, string) {
		var scan, ef string
		check(t, s.Pool().QueryRow(ctx, `SELECT coalesce(current_setting('hnsw.iterative_scan', true), ''),
			coalesce(current_setting('hnsw.ef_search', true), '')`).Scan(&scan, &ef))
		return scan, ef
	}
	write := func(camp string, n int) {
		c := pgtest.Campaign(t, s, camp)
		var cs []memory.Chunk
		for i := range n {
			cs = append(cs, memory.Chunk{ID: fmt.Sprintf("%s-%03d", camp, i), SessionID: "s1", Content: camp,
				Embedding: unit(i, i+2, float64(i%5)/10)})
		}
		check(t, c.Index().IndexChunks(ctx, cs))
	}
	write("big", 120)
	write("little", 20)
	// Load pgvector in the connection, so its settings are real ones.
	must[[]postgres.ChunkHit](t)(pgtest.Campaign(t, s, "big").Index().VectorSearch(ctx, unit(1, 2, 0.5), 5, nil))
	scan0, ef0 := settings()
	if scan0 == "strict_order" || ef0 != "40" {
		t.Fatalf("after a search outside a transaction: iterative_scan %q, ef_search %q", scan0, ef0)
	}
	for _, camp := range []string{"big", "little"} {
		outside := must[[]postgres.ChunkHit](t)(pgtest.Campaign(t, s, camp).Index().VectorSearch(ctx, unit(1, 2, 0.5), 7, nil))
		var inside []postgres.ChunkHit
		var res []memory.ChunkResult
		check(t, s.InTx(ctx, camp, func(c *postgres.Campaign) error {
			var err error
			if inside, err = c.Index().VectorSearch(ctx, unit(1, 2, 0.5), 7, nil); err != nil {
				return err
			}
			res, err = c.Index().Search(ctx, unit(1, 2, 0.5), 7, memory.ChunkFilter{})
			return err
		}))
		if fmt.Sprint(ids(inside, func(h postgres.ChunkHit) string { return h.Chunk.ID })) !=
			fmt.Sprint(ids(outside, func(h postgres.ChunkHit) string { return h.Chunk.ID })) || len(res) != 7 {
			t.Errorf("%s: in a transaction %v (Search %d), outside %v", camp, ids(inside, func(h postgres.ChunkHit) string { return h.Chunk.ID }),
				len(res), ids(outside, func(h postgres.ChunkHit) string { return h.Chunk.ID }))
		}
		if scan, ef := settings(); scan != scan0 || ef != ef0 {
			t.Errorf("%s: after a transaction that searched, the connection has iterative_scan %q, ef_search %q (want %q, %q)",
				camp, scan, ef, scan0, ef0)
		}
		err := s.InTx(ctx, camp, func(c *postgres.Campaign) error {
			if _, err := c.Index().VectorSearch(ctx, unit(1, 2, 0.5), 7, nil); err != nil {
				return err
			}
			return fmt.Errorf("the caller gives up")
		})
		if err == nil {
			t.Fatal("the failed transaction succeeded")
		}
		if scan, ef := settings(); scan != scan0 || ef != ef0 {
			t.Errorf("%s: after a transaction that searched and failed: iterative_scan %q, ef_search %q", camp, scan, ef)
		}
	}
}

// TestAttackNearestSameDataSameRanking: the same chunks written twice,
// in opposite orders, into two campaigns of one database and into a
// campaign of another database (two imports of one file), with chunks at
// equal distances (repeated embeddings): an exact search ranks them the
// same, ties by id, in all three.
func TestAttackNearestSameDataSameRanking(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s1, _ := pgtest.NewStore(t, testDims)
	s2, _ := pgtest.NewStore(t, testDims)
	var cs []memory.Chunk
	for i := range 300 {
		cs = append(cs, memory.Chunk{ID: fmt.Sprintf("sess%d/%016x", i%5, uint64(i)*0x9e3779b97f4a7c15), SessionID: fmt.Sprintf("sess%d", i%5),
			Content: "x", StartAt: t0.Add(time.Duration(i) * time.Second), Embedding: unit(i%11, i%7+1, float64(i%3)/10)})
	}
	rev := slices.Clone(cs)
	slices.Reverse(rev)
	a, b, c := pgtest.Campaign(t, s1, "one"), pgtest.Campaign(t, s1, "two"), pgtest.Campaign(t, s2, "one")
	check(t, a.Index().IndexChunks(ctx, cs))
	for i := 0; i < len(rev); i += 37 {
		check(t, b.Index().IndexChunks(ctx, rev[i:min(i+37, len(rev))]))
	}
	check(t, c.Index().IndexChunks(ctx, rev))
	for qi, q := range [][]float32{unit(3, 4, 0.1), unit(0, 1, 0), unit(6, 2, 0.2), cs[17].Embedding} {
		for _, k := range []int{5, 30, 100} {
			var lists []string
			for _, camp := range []*postgres.Campaign{a, b, c} {
				hits := must[[]postgres.ChunkHit](t)(camp.Index().VectorSearch(ctx, q, k, nil))
				res := must[[]memory.ChunkResult](t)(camp.Index().Search(ctx, q, k, memory.ChunkFilter{}))
				hs := fmt.Sprint(ids(hits, func(h postgres.ChunkHit) string { return h.Chunk.ID }))
				if rs := fmt.Sprint(ids(res, func(r memory.ChunkResult) string { return r.Chunk.ID })); rs != hs {
					t.Errorf("query %d, %d: VectorSearch %s, Search %s", qi, k, hs, rs)
				}
				lists = append(lists, hs)
			}
			if lists[0] != lists[1] || lists[0] != lists[2] {
				t.Errorf("query %d, %d: three imports of the same chunks ranked differently:\n %s\n %s\n %s", qi, k, lists[0], lists[1], lists[2])
			}
		}
	}
}

// embeddingsOutOfLine counts the values in the chunks' TOAST table of
// exactly an uncompressed embedding's size (4 + 4·dims bytes: pgvector's
// dimension and unused fields and the floats; the TOAST table keeps no
// varlena header), the embeddings stored out of line (PostgreSQL 15 has
// no pg_column_toast_chunk_id).
func embeddingsOutOfLine(t *testing.T, ctx context.Context, conn *pgx.Conn, dims int) int {
	t.Helper()
	var toast string
	check(t, conn.QueryRow(ctx, `SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'chunks'::regclass`).Scan(&toast))
	var n int
	check(t, conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT chunk_id FROM `+toast+` GROUP BY chunk_id
		HAVING sum(length(chunk_data)) = $1) v`, 4+4*dims).Scan(&n))
	return n
}

func embeddingStorage(t *testing.T, ctx context.Context, conn *pgx.Conn) string {
	t.Helper()
	var st string
	check(t, conn.QueryRow(ctx, `SELECT attstorage::text FROM pg_attribute WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'`).Scan(&st))
	return st
}

// atkVectors returns n deterministic unit vectors of dims dimensions.
func atkVectors(n, dims int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		v := make([]float32, dims)
		var norm float64
		for d := range v {
			x := math.Sin(float64(i*dims+d) * 1.618)
			v[d] = float32(x)
			norm += x * x
		}
		for d := range v {
			v[d] /= float32(math.Sqrt(norm))
		}
		out[i] = v
	}
	return out
}

// TestAttackMigration0043OnAnExistingDatabase: a database as 0042 left it
// (pgvector's EXTERNAL storage) holds chunks of 384 dimensions wide enough
// that their embeddings went to the TOAST table. Migrating applies 0043:
// the column's storage becomes MAIN; the old rows stay readable and are
// searched exactly, their embeddings where they were; a chunk written
// again, or a new one, keeps its embedding in the row.
func TestAttackMigration0043OnAnExistingDatabase(t *testing.T) {
	t.Parallel()
	const dims = 384
	ctx := ctxT(t)
	s, dsn := pgtest.NewStore(t, dims)
	conn, err := pgx.Connect(ctx, dsn)
	check(t, err)
	defer conn.Close(context.Background())
	for _, q := range []string{
		`ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE EXTERNAL`,
		`DELETE FROM schema_migrations WHERE version = 43`,
	} {
		_, err := conn.Exec(ctx, q)
		check(t, err)
	}
	c := pgtest.Campaign(t, s, "old")
	vecs := atkVectors(60, dims)
	var cs []memory.Chunk
	for i, v := range vecs {
		var words []string
		for w := range 70 {
			words = append(words, fmt.Sprintf("w%dx%d", (i*131+w*17)%997, w%13))
		}
		cs = append(cs, memory.Chunk{ID: fmt.Sprintf("old-%02d", i), SessionID: "s1", Content: strings.Join(words, " "),
			StartAt: t0.Add(time.Duration(i) * time.Minute), Embedding: v})
	}
	check(t, c.Index().IndexChunks(ctx, cs[:50]))
	out := embeddingsOutOfLine(t, ctx, conn, dims)
	if out == 0 {
		t.Fatal("the test's rows do not push the embedding out of line under EXTERNAL storage: no premise")
	}
	t.Logf("before 0043: %d of 50 embeddings out of line", out)
	check(t, postgres.Migrate(ctx, conn, dims))
	if st := embeddingStorage(t, ctx, conn); st != "m" {
		t.Fatalf("after migrating, chunks.embedding has storage %q, want m", st)
	}
	var applied bool
	check(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 43)`).Scan(&applied))
	if !applied {
		t.Fatal("0043 not recorded")
	}
	exact := func(what string) {
		t.Helper()
		for qi, q := range [][]float32{vecs[3], vecs[55], atkVectors(61, dims)[60]} {
			want := truth(t, ctx, s, "old", q)
			hits := must[[]postgres.ChunkHit](t)(c.Index().VectorSearch(ctx, q, 10, nil))
			res := must[[]memory.ChunkResult](t)(c.Index().Search(ctx, q, 10, memory.ChunkFilter{}))
			if len(hits) != 10 || len(res) != 10 {
				t.Fatalf("%s, query %d: %d and %d chunks", what, qi, len(hits), len(res))
			}
			for i := range hits {
				if hits[i].Chunk.ID != want[i].id || res[i].Chunk.ID != want[i].id || len(res[i].Chunk.Embedding) != dims {
					t.Errorf("%s, query %d, rank %d: %s / %s (embedding %d), exact %s", what, qi, i+1, hits[i].Chunk.ID,
						res[i].Chunk.ID, len(res[i].Chunk.Embedding), want[i].id)
				}
			}
		}
	}
	exact("old rows after the migration")
	t.Logf("after 0043, before the rows are written again: %d out of line", embeddingsOutOfLine(t, ctx, conn, dims))
	check(t, c.Index().IndexChunks(ctx, cs)) // the old 50 written again, 10 new
	if n := embeddingsOutOfLine(t, ctx, conn, dims); n != 0 {
		t.Errorf("after the migration, %d chunks written (again) keep their embedding out of line", n)
	}
	exact("rows written after the migration")
}

// TestAttackReembedThenSearchBothPaths: glyphoxa migrate --reembed
// (postgres.Reembed) to another dimension: the storage stays MAIN, a
// search finds nothing until chunks are embedded again, then exactly the
// embedded ones, on both paths (a campaign whose chunk count, which counts
// the unembedded chunks too, is past the threshold goes through the index
// and falls back to exact when it returns short).
func TestAttackReembedThenSearchBothPaths(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s, dsn := pgtest.NewStore(t, testDims)
	c := pgtest.Campaign(t, s, "re")
	var cs []memory.Chunk
	for i := range 60 {
		cs = append(cs, memory.Chunk{ID: fmt.Sprintf("re-%02d", i), SessionID: fmt.Sprintf("s%d", i%3+1), Content: fmt.Sprintf("line %d", i),
			SpeakerIDs: []string{"u1"}, StartAt: t0.Add(time.Duration(i) * time.Minute), Embedding: unit(i, i+1, 0.3)})
	}
	check(t, c.Index().IndexChunks(ctx, cs))
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	check(t, err)
	n, err := postgres.Reembed(ctx, conn, 16)
	check(t, err)
	if st := embeddingStorage(t, ctx, conn); st != "m" || n != 60 {
		t.Fatalf("after reembed: storage %q, %d chunks to embed", st, n)
	}
	conn.Close(context.Background())
	vecs := atkVectors(60, 16)
	for _, tc := range []struct {
		name  string
		opts  []postgres.Option
		index bool
	}{{"exact", nil, false}, {"index", []postgres.Option{postgres.WithExactSearch(30)}, true}} {
		s16, err := postgres.NewStore(ctx, dsn, 16, append(tc.opts, postgres.WithMaxConns(1))...)
		check(t, err)
		defer s16.Close()
		hnswPlans(t, ctx, s16)
		c16 := pgtest.Campaign(t, s16, "re")
		if tc.name == "exact" {
			if hits := must[[]postgres.ChunkHit](t)(c16.Index().VectorSearch(ctx, vecs[0], 10, nil)); len(hits) != 0 {
				t.Fatalf("before re-embedding: %d hits", len(hits))
			}
			emb := map[string][]float32{}
			for i := range 40 {
				emb[fmt.Sprintf("re-%02d", i)] = vecs[i]
			}
			check(t, c16.Index().SetEmbeddings(ctx, emb))
		}
		for qi, q := range [][]float32{vecs[5], vecs[45], atkVectors(70, 16)[69]} {
			want := truth(t, ctx, s16, "re", q)
			if len(want) != 40 {
				t.Fatalf("%d embedded chunks", len(want))
			}
			for _, k := range []int{10, 50} {
				var hits []postgres.ChunkHit
				var res []memory.ChunkResult
				used := viaIndex(t, ctx, s16, func() {
					hits = must[[]postgres.ChunkHit](t)(c16.Index().VectorSearch(ctx, q, k, nil))
					res = must[[]memory.ChunkResult](t)(c16.Index().Search(ctx, q, k, memory.ChunkFilter{SpeakerID: "u1"}))
				})
				if used != tc.index {
					t.Errorf("%s, query %d, %d: through the index %v", tc.name, qi, k, used)
				}
				all := map[string]bool{}
				for _, w := range want {
					all[w.id] = true
				}
				hd, rd := make([]float64, len(hits)), make([]float64, len(res))
				for i := range hits {
					hd[i] = 1 - hits[i].Score
				}
				for i := range res {
					rd[i] = res[i].Distance
				}
				exact := !tc.index || k > 40 // the index returns short: the exact search answers
				checkRanking(t, fmt.Sprintf("%s VectorSearch(query %d, %d)", tc.name, qi, k),
					ids(hits, func(h postgres.ChunkHit) string { return h.Chunk.ID }), hd, want, all, k, exact)
				checkRanking(t, fmt.Sprintf("%s Search(query %d, %d)", tc.name, qi, k),
					ids(res, func(r memory.ChunkResult) string { return r.Chunk.ID }), rd, want, all, k, exact)
			}
		}
	}
}

// BenchmarkAttackPlayerNearestExactVsIndex: what the exact path costs a
// player. An exact search reads every chunk of the campaign, and a
// player's searches check each row they read against the lines the player
// may read (view.chunkVisible, a lookup of the chunk's lines and their
// presence rows; VectorSearch also the denied set): through the index,
// only the rows the scan yields. 10,000 chunks (the production threshold
// at 384 dimensions is 10,416), split scenes in every session, searched
// exactly (the default) and through the index (WithExactSearch(-1)), by the
// DM and by players.
//
//	go test ./memory/postgres -run '^$' -bench AttackPlayerNearest -benchtime 5x
func BenchmarkAttackPlayerNearestExactVsIndex(b *testing.B) {
	ctx := context.Background()
	for _, path := range []struct {
		name string
		opts []postgres.Option
	}{{"exact", nil}, {"index", []postgres.Option{postgres.WithExactSearch(-1)}}} {
		b.Run(path.name, func(b *testing.B) {
			s, _ := pgtest.NewStore(b, testDims, path.opts...)
			c := pgtest.Campaign(b, s, "bench")
			for _, q := range []string{
				benchSessionsSQL, benchLinesSQL,
				`INSERT INTO chunks (campaign_id, id, session_id, content, start_at, end_at, embedding)
				 SELECT 'bench', 's' || i || '-' || k, 's' || i, 'tale ' || k,
				        timestamptz '2026-01-01' + i * interval '1 day' + k * 5 * interval '10 seconds',
				        timestamptz '2026-01-01' + i * interval '1 day' + (k * 5 + 4) * interval '10 seconds' + interval '1 second',
				        ARRAY[sin(i * 50 + k), cos(i * 50 + k), sin(1.7 * (i * 50 + k)), cos(2.3 * (i * 50 + k)),
				              sin(3.1 * (i * 50 + k)), cos(0.3 * (i * 50 + k)), sin(0.7 * (i * 50 + k)), 0.5]::real[]::vector
				 FROM generate_series(1, 200) i, generate_series(0, 49) k`,
				benchSplitSQL,
				`ANALYZE sessions, transcript_entries, chunks, session_presence`,
			} {
				if _, err := s.Pool().Exec(ctx, q); err != nil {
					b.Fatal(err)
				}
			}
			for _, r := range benchViewers() {
				h, err := c.As(r.v)
				if err != nil {
					b.Fatal(err)
				}
				q := []float32{1, 0, 0.5, 0, 0, 0.2, 0, 0.5}
				b.Run(r.name+"/VectorSearch", func(b *testing.B) {
					for b.Loop() {
						if hits, err := h.Index().VectorSearch(ctx, q, 10, nil); err != nil || len(hits) != 10 {
							b.Fatal(len(hits), err)
						}
					}
				})
				b.Run(r.name+"/Search", func(b *testing.B) {
					for b.Loop() {
						if res, err := h.Index().Search(ctx, q, 10, memory.ChunkFilter{}); err != nil || len(res) != 10 {
							b.Fatal(len(res), err)
						}
					}
				})
			}
		})
	}
}
