package retrieve

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
)

func TestQuestionSpan(t *testing.T) {
	day := func(m time.Month, d int) time.Time { return time.Date(2025, m, d, 0, 0, 0, 0, time.UTC) }
	ss := []memory.Session{{ID: "a", StartedAt: day(3, 2).Add(20 * time.Hour), EndedAt: day(3, 2).Add(23 * time.Hour)},
		{ID: "b", StartedAt: day(3, 9).Add(20 * time.Hour), EndedAt: day(3, 9).Add(23 * time.Hour)},
		{ID: "c", StartedAt: day(12, 28).Add(20 * time.Hour), EndedAt: day(12, 28).Add(23 * time.Hour)}}
	cases := []struct {
		q        string
		ok       bool
		from, to time.Time
	}{
		{"what happened last session?", true, ss[2].StartedAt, ss[2].StartedAt},
		{"In the previous session, who left?", true, ss[2].StartedAt, ss[2].StartedAt},
		{"what did we do in the first session", true, ss[0].StartedAt, ss[0].StartedAt},
		{"what was going on around March 9?", true, day(3, 6), day(3, 13)},
		{"what did Tom say on the 9th of March", true, day(3, 8), day(3, 11)},
		{"anything before Mar 9th?", true, time.Time{}, day(3, 9)},
		{"what changed after March 2", true, day(3, 3), time.Time{}},
		// January is nearest to the December session: next year.
		{"around January 3", true, time.Date(2025, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 7, 0, 0, 0, 0, time.UTC)},
		{"Which city is Nadia flying to in May?", false, time.Time{}, time.Time{}},
		{"What did the March Hare say about 9 gold?", false, time.Time{}, time.Time{}},
		{"around March 42", false, time.Time{}, time.Time{}},
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			sp, ok := questionSpan(c.q, ss)
			if ok != c.ok || !sp.from.Equal(c.from) || !sp.to.Equal(c.to) {
				t.Errorf("got %v %v..%v, want %v %v..%v", ok, sp.from, sp.to, c.ok, c.from, c.to)
			}
		})
	}
	// During a session, the last session is the one before it.
	live := append(append([]memory.Session(nil), ss...), memory.Session{ID: "d", StartedAt: day(12, 30)})
	if sp, ok := questionSpan("what happened last session?", live); !ok || !sp.from.Equal(ss[2].StartedAt) {
		t.Errorf("during a session: %v %v", sp, ok)
	}
	if _, ok := questionSpan("last session", nil); ok {
		t.Error("a campaign without sessions has no last session")
	}
}

// As of a session, and for "last session", only the sessions meant answer.
func TestTimeScope(t *testing.T) {
	c, e := small(t)
	r, err := New(c, e, Config{})
	check(t, err)
	ctx := context.Background()
	cases := []struct {
		q        Query
		sessions string // the sessions results may come from
	}{
		{Query{Text: "forge bellows river fog"}, "s1 s2"},
		{Query{Text: "forge bellows river fog", AsOf: "s1"}, "s1"},
		{Query{Text: "forge bellows river fog", AsOf: "s2"}, "s1 s2"},
		{Query{Text: "what about the forge and the fog last session?"}, "s2"},
		{Query{Text: "what about the forge and the fog last session?", AsOf: "s1"}, "s1"},
		{Query{Text: "what about the forge and the fog around March 8?"}, "s2"},
		// A day no session matches restricts nothing.
		{Query{Text: "what about the forge and the fog around June 8?"}, "s1 s2"},
	}
	for _, tc := range cases {
		for _, m := range Modes() {
			q := tc.q
			q.Mode, q.K = m, 10
			rs, err := r.Search(ctx, q)
			check(t, err)
			got := map[string]bool{}
			for _, x := range rs {
				if x.Kind == KindEntity {
					continue
				}
				if x.Kind == KindFact && q.AsOf != "" {
					t.Errorf("%s %+v: a fact as of a session: %+v", m, q, x)
				}
				if x.Kind == KindChunk {
					got[x.SessionID] = true
					if x.At.IsZero() {
						t.Errorf("%s %+v: chunk without a date", m, q)
					}
				}
			}
			want := map[string]bool{}
			for _, s := range []string{"s1", "s2"} {
				if slices.Contains(strings.Fields(tc.sessions), s) {
					want[s] = true
				}
			}
			if len(got) != len(want) || (want["s1"] != got["s1"]) || (want["s2"] != got["s2"]) {
				t.Errorf("%s %q as of %q: sessions %v, want %s", m, q.Text, q.AsOf, got, tc.sessions)
			}
		}
	}
	if _, err := r.Search(ctx, Query{Text: "forge", AsOf: "s9"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
}

// A session's in-game date comes with its results, and a question naming
// it is answered from that session.
func TestGameDate(t *testing.T) {
	c, e := small(t)
	ctx := context.Background()
	check(t, c.Sessions().SetGameDate(ctx, "s2", "3rd of  Frostfall"))
	if err := c.Sessions().SetGameDate(ctx, "s9", "x"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
	r, err := New(c, e, Config{})
	check(t, err)
	for _, m := range Modes() {
		rs, err := r.Search(ctx, Query{Text: "forge bellows river fog", Mode: m, K: 10})
		check(t, err)
		for _, x := range rs {
			want := map[string]string{"s1": "", "s2": "3rd of  Frostfall"}[x.SessionID]
			if x.Kind == KindChunk && x.GameDate != want {
				t.Errorf("%s: %s has game date %q, want %q", m, x.SessionID, x.GameDate, want)
			}
		}
		rs, err = r.Search(ctx, Query{Text: "what about the forge and the fog on the 3rd of Frostfall?", Mode: m, K: 10})
		check(t, err)
		if len(rs) == 0 {
			t.Errorf("%s: nothing on the 3rd of Frostfall", m)
		}
		for _, x := range rs {
			if x.Kind == KindChunk && x.SessionID != "s2" {
				t.Errorf("%s: %s answers a question about the 3rd of Frostfall", m, x.SessionID)
			}
		}
	}
}
