package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// precedingChunks is the definition PrecedingAmong keeps to, read the
// plain way: for each of the chunks ids of campaign, the nearest chunk
// before it in its session (by start time, then id) that other speakers
// speak in, walking back through the whole session.
func precedingChunks(t *testing.T, s *postgres.Store, campaign string, ids []string) map[string]string {
	t.Helper()
	rows, err := s.Pool().Query(ctxT(t), `
		SELECT c.id, p.id FROM chunks c
		CROSS JOIN LATERAL (
		    SELECT p.id FROM chunks p
		    WHERE p.campaign_id = c.campaign_id AND p.session_id = c.session_id
		      AND (p.start_at < c.start_at OR (p.start_at = c.start_at AND p.id < c.id))
		      AND p.speaker_ids IS DISTINCT FROM c.speaker_ids
		    ORDER BY p.start_at DESC, p.id DESC LIMIT 1) p
		WHERE c.campaign_id = $1 AND c.id = ANY($2)`, campaign, ids)
	check(t, err)
	out := map[string]string{}
	var id, prev string
	_, err = pgx.ForEachRow(rows, []any{&id, &prev}, func() error {
		out[id] = prev
		return nil
	})
	check(t, err)
	return out
}

func TestPrecedingAmong(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	x := c.Index()
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	who := func(ids ...string) []string { return ids }
	check(t, x.IndexChunks(ctx, []memory.Chunk{
		// Written out of order: the order is the session's time.
		{ID: "s1-c", SessionID: "s1", Content: "third", SpeakerIDs: who("u1"), StartAt: at(20)},
		{ID: "s1-a", SessionID: "s1", Content: "first", SpeakerIDs: who("u1", "u2"), StartAt: at(0)},
		{ID: "s1-b", SessionID: "s1", Content: "second", SpeakerIDs: who("u2"), StartAt: at(10)},
		// Same start: the id breaks the tie.
		{ID: "s1-d", SessionID: "s1", Content: "fourth", SpeakerIDs: who("u2"), StartAt: at(20)},
		// A long turn of u1, cut into three chunks: each part answers s1-d.
		{ID: "s1-e", SessionID: "s1", Content: "a long turn", SpeakerIDs: who("u1"), StartAt: at(30)},
		{ID: "s1-f", SessionID: "s1", Content: "a long turn, on", SpeakerIDs: who("u1"), StartAt: at(31)},
		{ID: "s1-g", SessionID: "s1", Content: "a long turn, ending", SpeakerIDs: who("u1"), StartAt: at(32)},
		// Another session starts again: its first chunk follows nothing.
		{ID: "s2-a", SessionID: "s2", Content: "other session", SpeakerIDs: who("u1"), StartAt: at(15)},
		{ID: "s2-b", SessionID: "s2", Content: "other session, later", SpeakerIDs: who("u2"), StartAt: at(30)},
	}))
	tests := []struct {
		ids  []string
		want string
	}{
		{[]string{"s1-a", "s1-b", "s1-c", "s1-d", "s2-a", "s2-b"}, "map[s1-b:s1-a s1-c:s1-b s1-d:s1-c s2-b:s2-a]"},
		{[]string{"s1-e", "s1-f", "s1-g"}, "map[s1-e:s1-d s1-f:s1-d s1-g:s1-d]"},
		{[]string{"s1-d", "missing"}, "map[s1-d:s1-c]"},
		{nil, "map[]"},
	}
	for _, tc := range tests {
		got := precedingChunks(t, s, c.ID(), tc.ids)
		if fmt.Sprint(got) != tc.want {
			t.Errorf("the chunks before %v = %v, want %s", tc.ids, got, tc.want)
		}
	}
	// PrecedingAmong answers what the definition answers, restricted to
	// predecessors among the ids asked about: over subsets of the chunks
	// (and an id that does not exist).
	all := []string{"s1-a", "s1-b", "s1-c", "s1-d", "s1-e", "s1-f", "s1-g", "s2-a", "s2-b", "missing"}
	for mask := 0; mask < 1<<len(all); mask += 7 {
		var ids []string
		in := map[string]bool{}
		for i, id := range all {
			if mask&(1<<i) != 0 {
				ids = append(ids, id)
				in[id] = true
			}
		}
		want := map[string]string{}
		for id, p := range precedingChunks(t, s, c.ID(), ids) {
			if in[p] {
				want[id] = p
			}
		}
		got := must[map[string]string](t)(x.PrecedingAmong(ctx, ids))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("PrecedingAmong(%v) = %v, want %v", ids, got, want)
		}
	}
	// The nearest earlier chunk of other speakers among the ids is not the
	// predecessor when another lies between: s1-c (u1) stands between s1-a
	// (u1, u2) and s1-d (u2).
	if got := must[map[string]string](t)(x.PrecedingAmong(ctx, []string{"s1-a", "s1-d"})); len(got) != 0 {
		t.Errorf("PrecedingAmong(s1-a, s1-d) = %v, want nothing (s1-c lies between)", got)
	}
	// A query that cannot reach the database fails whole, with no partial
	// answer.
	dead, cancel := context.WithCancel(ctx)
	cancel()
	if got, err := x.PrecedingAmong(dead, []string{"s1-b", "s1-c"}); err == nil || got != nil {
		t.Errorf("PrecedingAmong with the connection gone: got %v, %v; want an error and no map", got, err)
	}
	// Another campaign's chunks are not seen.
	other := pgtest.Campaign(t, s, "other")
	if got := must[map[string]string](t)(other.Index().PrecedingAmong(ctx, []string{"s1-b", "s1-c"})); len(got) != 0 {
		t.Errorf("another campaign saw this one's chunks: %v", got)
	}
}
