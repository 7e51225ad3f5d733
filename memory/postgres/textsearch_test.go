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
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// checkTextStats compares the maintained lexeme counts of every campaign
// with counts taken from the chunks themselves.
func checkTextStats(t *testing.T, s *postgres.Store, when string) {
	t.Helper()
	ctx := ctxT(t)
	var diff int
	check(t, s.Pool().QueryRow(ctx, `
		WITH truth AS (SELECT c.campaign_id, l.lexeme, count(*)::int AS df FROM chunks c, unnest(c.tsv) l GROUP BY 1, 2)
		SELECT count(*) FROM truth t FULL JOIN chunk_lexemes k USING (campaign_id, lexeme)
		WHERE t.df IS DISTINCT FROM k.df`).Scan(&diff))
	if diff != 0 {
		t.Errorf("%s: %d lexeme counts differ from the chunks'", when, diff)
	}
	check(t, s.Pool().QueryRow(ctx, `
		WITH truth AS (SELECT campaign_id, count(*) AS n FROM chunks GROUP BY 1)
		SELECT count(*) FROM truth t FULL JOIN chunk_counts k USING (campaign_id)
		WHERE t.n IS DISTINCT FROM k.chunks`).Scan(&diff))
	if diff != 0 {
		t.Errorf("%s: %d chunk counts differ from the chunks'", when, diff)
	}
	check(t, s.Pool().QueryRow(ctx, `
		WITH truth AS (SELECT c.campaign_id, sum((SELECT sum(coalesce(array_length(u.positions, 1), 1)) FROM unnest(c.tsv) u))::bigint AS n
		               FROM chunks c GROUP BY 1)
		SELECT count(*) FROM truth t FULL JOIN chunk_counts k USING (campaign_id)
		WHERE t.n IS DISTINCT FROM k.tokens`).Scan(&diff))
	if diff != 0 {
		t.Errorf("%s: %d token totals differ from the chunks'", when, diff)
	}
	check(t, s.Pool().QueryRow(ctx, `
		WITH truth AS (SELECT c.campaign_id, c.id AS chunk_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf, c.doc_len
		               FROM chunks c, unnest(c.tsv) u)
		SELECT count(*) FROM truth t FULL JOIN chunk_postings p USING (campaign_id, chunk_id, lexeme)
		WHERE t.tf IS DISTINCT FROM p.tf OR t.doc_len IS DISTINCT FROM p.doc_len`).Scan(&diff))
	if diff != 0 {
		t.Errorf("%s: %d postings differ from the chunks'", when, diff)
	}
}

func TestTextStatsFollowChunkWrites(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	a := pgtest.Campaign(t, s, "a")
	b := pgtest.Campaign(t, s, "b")
	mk := func(id, session, content, speaker string) memory.Chunk {
		return memory.Chunk{ID: id, SessionID: session, Content: content, SpeakerIDs: []string{speaker}, StartAt: t0}
	}
	check(t, a.Index().IndexChunks(ctx, []memory.Chunk{
		mk("k1", "s1", "The gold was stolen near the crypt", "u1"),
		mk("k2", "s1", "Gold and silver, gold again", "u2"),
		mk("k3", "s2", "The crypt is cold", "u1"),
	}))
	check(t, b.Index().IndexChunks(ctx, []memory.Chunk{mk("k1", "s1", "A different campaign's gold", "u1")}))
	checkTextStats(t, s, "after indexing")

	// Re-indexing changes the words; storing an embedding changes none.
	check(t, a.Index().IndexChunks(ctx, []memory.Chunk{mk("k2", "s1", "Silver only, and a lantern", "u2")}))
	check(t, a.Index().SetEmbeddings(ctx, map[string][]float32{"k1": unit(0, 1, 0)}))
	checkTextStats(t, s, "after re-indexing")

	n := must[int64](t)(a.Index().DeleteSessionChunks(ctx, "s1", []string{"k1"}))
	if n != 1 {
		t.Fatalf("deleted %d chunks, want 1", n)
	}
	checkTextStats(t, s, "after deleting a chunk")

	must[memory.ForgetReport](t)(a.ForgetSpeaker(ctx, "u1"))
	checkTextStats(t, s, "after forgetting a speaker")
	var left, posts int
	check(t, s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM chunk_lexemes WHERE campaign_id = 'a'),
		(SELECT count(*) FROM chunk_postings WHERE campaign_id = 'a')`).Scan(&left, &posts))
	if left != 0 || posts != 0 {
		t.Errorf("campaign a has no chunks left but %d lexeme counts and %d postings", left, posts)
	}
	// Deleting the campaign's chunks outright (cascades included) leaves
	// no postings behind.
	check(t, b.Index().IndexChunks(ctx, []memory.Chunk{mk("k9", "s9", "The gold of the cold crypt", "u3")}))
	must[int64](t)(b.Index().DeleteSessionChunks(ctx, "s9", nil))
	checkTextStats(t, s, "after deleting a session's chunks")
}

// TestIndexChunksOneCall: one IndexChunks call that adds chunks, rewrites
// others, lists a chunk twice and creates a session writes what writing
// the chunks one by one would (a twice-listed chunk as its last listing),
// and leaves the text statistics and postings equal to the chunks'.
func TestIndexChunksOneCall(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "a")
	for _, id := range []string{"grimm", "elara", "ironhold"} {
		check(t, c.Graph().UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id}))
	}
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k1", SessionID: "s1", Content: "Grimm forged the gold hammer", SpeakerIDs: []string{"u1", "u2"},
			EntityIDs: []string{"grimm", "ironhold"}, StartAt: t0, EndAt: t0.Add(time.Minute)},
		{ID: "k2", SessionID: "s1", Content: "Elara kept the lantern", SpeakerIDs: []string{"u2"},
			EntityIDs: []string{"elara"}, StartAt: t0.Add(time.Minute)},
	}))
	checkTextStats(t, s, "after the first call")
	later := t0.Add(time.Hour)
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		// Rewritten: new words, speakers and entity links.
		{ID: "k1", SessionID: "s1", Content: "Grimm sold the silver hammer", SpeakerIDs: []string{"u3"},
			EntityIDs: []string{"grimm", "elara", "nobody"}, StartAt: t0, EndAt: t0.Add(2 * time.Minute)},
		// Listed twice: the last listing stands.
		{ID: "k3", SessionID: "s2", Content: "A draft that is replaced", SpeakerIDs: []string{"u1"},
			EntityIDs: []string{"ironhold"}, StartAt: later},
		// Unchanged words, links dropped.
		{ID: "k2", SessionID: "s1", Content: "Elara kept the lantern", StartAt: t0.Add(time.Minute)},
		{ID: "k3", SessionID: "s2", Content: "The crypt of Ironhold is cold", SpeakerIDs: []string{"u4", "u1"},
			EntityIDs: []string{"ironhold", "elara"}, StartAt: later, EndAt: later.Add(time.Minute)},
		// Speaker ids that an array literal would have to quote.
		{ID: "k4", SessionID: "s2", Content: "Nobody spoke", SpeakerIDs: []string{`u,"{5}"`, "NULL", ""},
			StartAt: later.Add(time.Minute)},
	}))
	checkTextStats(t, s, "after the second call")
	type row struct {
		content            string
		speakers, entities []string
		start, end         time.Time
	}
	want := map[string]row{
		"k1": {"Grimm sold the silver hammer", []string{"u3"}, []string{"elara", "grimm"}, t0, t0.Add(2 * time.Minute)},
		"k2": {"Elara kept the lantern", []string{}, []string{}, t0.Add(time.Minute), time.Time{}},
		"k3": {"The crypt of Ironhold is cold", []string{"u4", "u1"}, []string{"elara", "ironhold"}, later, later.Add(time.Minute)},
		"k4": {"Nobody spoke", []string{`u,"{5}"`, "NULL", ""}, []string{}, later.Add(time.Minute), time.Time{}},
	}
	got := map[string]row{}
	for _, sid := range []string{"s1", "s2"} {
		for _, ch := range must[[]memory.Chunk](t)(c.Index().Chunks(ctx, sid)) {
			got[ch.ID] = row{ch.Content, append([]string{}, ch.SpeakerIDs...), append([]string{}, ch.EntityIDs...), ch.StartAt, ch.EndAt}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d chunks, want %d: %+v", len(got), len(want), got)
	}
	for id, w := range want {
		g := got[id]
		slices.Sort(g.entities)
		if g.content != w.content || !slices.Equal(g.speakers, w.speakers) || !slices.Equal(g.entities, w.entities) ||
			!g.start.Equal(w.start) || !g.end.Equal(w.end) {
			t.Errorf("chunk %s: %+v, want %+v", id, g, w)
		}
	}
	ss := must[[]memory.Session](t)(c.Sessions().Sessions(ctx))
	if len(ss) != 2 || ss[1].ID != "s2" || !ss[1].StartedAt.Equal(later) {
		t.Errorf("sessions %+v, want s1 and s2 (from its first chunk's start)", ss)
	}
}

// referenceTextSearch scores every chunk matching any of the query's
// lexemes by Okapi BM25 (k1 1.2, b 0.75), counting document frequencies,
// lengths and the average length from the chunks themselves.
func referenceTextSearch(t *testing.T, s *postgres.Store, campaign, query string, limit int) []postgres.ChunkHit {
	t.Helper()
	rows, err := s.Pool().Query(ctxT(t), `
		WITH q AS (
		    SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $2))
		), len AS MATERIALIZED (
		    SELECT c.id, (SELECT sum(coalesce(array_length(u.positions, 1), 1)) FROM unnest(c.tsv) u)::float8 AS dl
		    FROM chunks c WHERE c.campaign_id = $1
		), n AS (
		    SELECT count(*)::float8 AS n, avg(dl) AS avgdl FROM len
		), df AS MATERIALIZED (
		    SELECT q.lexeme, (SELECT count(*) FROM chunks c WHERE c.campaign_id = $1
		                      AND c.tsv @@ quote_literal(q.lexeme)::tsquery)::float8 AS df FROM q
		), tf AS (
		    SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1)::float8 AS tf
		    FROM chunks c, unnest(c.tsv) u WHERE c.campaign_id = $1
		)
		SELECT tf.id, round(sum(ln(1 + (n.n - df.df + 0.5) / (df.df + 0.5))
		       * tf.tf * 2.2 / (tf.tf + 1.2 * (1 - 0.75 + 0.75 * len.dl / n.avgdl)))::numeric, 9)::float8 AS score
		FROM tf JOIN df USING (lexeme) JOIN len USING (id) CROSS JOIN n
		WHERE df.df > 0
		GROUP BY tf.id
		ORDER BY score DESC, tf.id
		LIMIT $3`, campaign, query, limit)
	check(t, err)
	defer rows.Close()
	var out []postgres.ChunkHit
	for rows.Next() {
		var h postgres.ChunkHit
		check(t, rows.Scan(&h.Chunk.ID, &h.Score))
		out = append(out, h)
	}
	check(t, rows.Err())
	return out
}

func TestTextSearchMatchesFullScoring(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	// Words of very different frequencies: a few names, a common noun in
	// about a third of the chunks, and filler in most.
	r := rand.New(rand.NewPCG(7, 8))
	names := []string{"anlymir", "thanarly", "edsazul", "quoprashi", "kastentor", "venlunzul"}
	common := []string{"gold", "crypt", "guard", "feather"}
	filler := []string{"close", "remind", "told", "near", "stolen", "back"}
	var cs []memory.Chunk
	for i := range 400 {
		var words []string
		if r.IntN(20) == 0 {
			words = append(words, names[r.IntN(len(names))])
		}
		for _, w := range common {
			if r.IntN(3) == 0 {
				words = append(words, w)
			}
		}
		for range 1 + r.IntN(4) {
			words = append(words, filler[r.IntN(len(filler))])
		}
		cs = append(cs, memory.Chunk{ID: fmt.Sprintf("c%03d", i), SessionID: "s1", Content: strings.Join(words, " "),
			StartAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	check(t, c.Index().IndexChunks(ctx, cs))
	checkTextStats(t, s, "after indexing")

	cases := []struct {
		query string
		limit int
	}{
		{"anlymir gold", 5}, // a rare word fills the result
		{"thanarly told us near the crypt", 5},
		{"edsazul quoprashi", 3},       // rare words only
		{"gold guard close remind", 5}, // common words only
		{"kastentor gold", 40},         // the rare word cannot fill the result
		{"venlunzul nowhere", 5},       // a word no chunk has
		{"nowhere", 5},
	}
	for _, tc := range cases {
		got := must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, tc.query, tc.limit, nil))
		want := referenceTextSearch(t, s, "camp", tc.query, tc.limit)
		if len(got) != len(want) {
			t.Errorf("%q: %d hits, full scoring %d", tc.query, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i].Chunk.ID != want[i].Chunk.ID || math.Abs(got[i].Score-want[i].Score) > 1e-9 {
				t.Errorf("%q hit %d: %s %.12f, full scoring %s %.12f", tc.query, i,
					got[i].Chunk.ID, got[i].Score, want[i].Chunk.ID, want[i].Score)
			}
		}
		if tc.query == "anlymir gold" && (len(got) == 0 || !strings.Contains(got[0].Chunk.Content, "anlymir")) {
			t.Errorf("%q: the rare word's chunk should come first, got %+v", tc.query, got)
		}
	}
}

func TestTextStatsConcurrentWriters(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	// Two writers re-index their chunks, several per transaction, changing
	// the same words in opposite orders.
	const rounds = 30
	words := [][]string{{"alpha lantern", "beta compass"}, {"gamma lantern", "delta compass"}}
	errs := make(chan error, 2)
	for w := range 2 {
		go func() {
			for i := range rounds {
				batch := []memory.Chunk{
					{ID: fmt.Sprint("w", w, "a"), SessionID: "s1", Content: words[i%2][0], StartAt: t0},
					{ID: fmt.Sprint("w", w, "b"), SessionID: "s1", Content: words[i%2][1], StartAt: t0},
				}
				if w == 1 {
					batch[0], batch[1] = batch[1], batch[0]
				}
				if err := c.Index().IndexChunks(ctx, batch); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent indexing: %v", err)
		}
	}
	checkTextStats(t, s, "after concurrent indexing")
	var df int
	check(t, s.Pool().QueryRow(ctx, `SELECT df FROM chunk_lexemes WHERE campaign_id = 'camp' AND lexeme = 'lantern'`).Scan(&df))
	if df != 2 {
		t.Errorf("lantern occurs in %d chunks, want 2", df)
	}
}

// TestTextSearchStopsEarly checks the early stop on impact-ordered
// postings: a rare word beside a common one is decided from the common
// word's top postings alone, a tie group larger than the read depth falls
// back to scoring every posting, and both give the ranking of full
// scoring, before and after longer chunks move the average length the
// postings were written under.
func TestTextSearchStopsEarly(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	var cs []memory.Chunk
	add := func(n int, prefix, content string) {
		for i := range n {
			cs = append(cs, memory.Chunk{ID: fmt.Sprintf("%s%03d", prefix, i), SessionID: "s1", Content: content,
				StartAt: t0.Add(time.Duration(len(cs)) * time.Minute)})
		}
	}
	add(200, "t", "the gold was near the old crypt") // one tie group: tf 1, 4 tokens
	add(40, "g", "gold, gold at the gate")           // tf 2
	add(3, "a", "Anlymir asked about the lantern")
	add(300, "f", "we rest at the inn tonight")
	check(t, c.Index().IndexChunks(ctx, cs))
	// Another campaign's best postings sort first in no search of this
	// one (the reference reads this campaign only).
	other := pgtest.Campaign(t, s, "other")
	check(t, other.Index().IndexChunks(ctx, []memory.Chunk{{ID: "a000", SessionID: "s1", Content: "gold gold gold Anlymir", StartAt: t0}}))

	cases := []struct {
		query  string
		limit  int
		proven bool // the top postings decide (false: the fallback scores them all)
	}{
		{"anlymir gold", 10, true},
		{"gold", 50, false}, // the 50th ties with 150 unread postings of equal tf and length
		{"gold crypt lantern", 5, false},
		{"anlymir", 5, true}, // every posting read
		{"nowhere", 5, true},
		{`gold's & | ! :* (crypt) 'lantern`, 5, false}, // query syntax is words, not operators
	}
	run := func(when string, decided bool) {
		checkTextStats(t, s, when)
		for _, tc := range cases {
			want := referenceTextSearch(t, s, "camp", tc.query, tc.limit)
			got := must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, tc.query, tc.limit, nil))
			sameHits(t, when+": "+tc.query, got, want)
			top, proven, err := c.Index().TopPostingsForTest(ctx, tc.query, tc.limit)
			check(t, err)
			if decided && tc.proven && !proven {
				t.Errorf("%s: %q: the top postings did not decide the result", when, tc.query)
			}
			if proven {
				sameHits(t, when+": "+tc.query+" (top postings)", top, want)
			}
		}
		// Restricted to some chunks (what an NPC heard), the search scores
		// those alone, with the campaign's statistics.
		only := []string{"a001", "g003", "g004", "t007", "t150", "f010", "nosuch"}
		got := must[[]postgres.ChunkHit](t)(c.Index().TextSearch(ctx, "anlymir gold", 3, only))
		var want []postgres.ChunkHit
		for _, h := range referenceTextSearch(t, s, "camp", "anlymir gold", 10000) {
			if slices.Contains(only, h.Chunk.ID) && len(want) < 3 {
				want = append(want, h)
			}
		}
		sameHits(t, when+": restricted", got, want)
	}
	run("as written", true)
	// Long monologues mentioning gold once: the average length triples.
	cs = cs[:0]
	add(200, "m", strings.Repeat("the dragon circled the tower while the wizard chanted, ", 6)+"and gold fell")
	check(t, c.Index().IndexChunks(ctx, cs))
	run("after long chunks", true)
	// Recaps saying gold three times in a long turn: their postings come
	// first in the index (tf 3), though the short lines saying it once or
	// twice outscore them.
	cs = cs[:0]
	add(60, "r", "previously: gold in the vault, gold on the road, and gold again at the inn, "+
		strings.Repeat("while the party argued about the map and the guild, ", 5))
	check(t, c.Index().IndexChunks(ctx, cs))
	run("after recaps", false)
}

// sameHits reports where got differs from want (ids, and scores to 1e-9).
func sameHits(t *testing.T, what string, got, want []postgres.ChunkHit) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d hits, full scoring %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if got[i].Chunk.ID != want[i].Chunk.ID || math.Abs(got[i].Score-want[i].Score) > 1e-9 {
			t.Errorf("%s hit %d: %s %.12f, full scoring %s %.12f", what, i,
				got[i].Chunk.ID, got[i].Score, want[i].Chunk.ID, want[i].Score)
		}
	}
}
