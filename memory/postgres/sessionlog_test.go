package postgres_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func entry(session, speaker, text string, at time.Duration) memory.TranscriptEntry {
	return memory.TranscriptEntry{SessionID: session, SpeakerID: speaker, SpeakerName: speaker, Text: text,
		RawText: text, At: t0.Add(at), Duration: 2 * time.Second, IdempotencyKey: fmt.Sprintf("%s/%s/%v", session, speaker, at)}
}

func TestSessionLogWritesExactlyOnce(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	l := pgtest.Campaign(t, s, "camp").Sessions()

	e := entry("s1", "u1", "Grimjaw, what news from Ironhold?", time.Minute)
	e.RawText = "grim jaw what news from iron hold"
	e.NPCID = ""
	if ok := must[bool](t)(l.WriteEntry(ctx, e)); !ok {
		t.Fatal("first write reported a duplicate")
	}
	if ok := must[bool](t)(l.WriteEntry(ctx, e)); ok {
		t.Fatal("second write with the same idempotency key reported new")
	}
	batch := []memory.TranscriptEntry{e, entry("s1", "u2", "I roll for insight", 2*time.Minute), entry("s1", "grimjaw", "Ironhold burns.", 3*time.Minute)}
	batch[2].NPCID = "grimjaw"
	if n := must[int](t)(l.WriteEntries(ctx, batch)); n != 2 {
		t.Fatalf("batch wrote %d new entries, want 2", n)
	}
	got := must[[]memory.TranscriptEntry](t)(l.Entries(ctx, "s1"))
	if len(got) != 3 {
		t.Fatalf("got %d entries, want 3", len(got))
	}
	if got[0].RawText != "grim jaw what news from iron hold" || got[0].Text != "Grimjaw, what news from Ironhold?" {
		t.Errorf("raw and corrected text not both kept: %+v", got[0])
	}
	if got[2].NPCID != "grimjaw" || got[2].Duration != 2*time.Second {
		t.Errorf("NPC line lost fields: %+v", got[2])
	}
	sess := must[[]memory.Session](t)(l.Sessions(ctx))
	if len(sess) != 1 || sess[0].ID != "s1" || sess[0].Entries != 3 || !sess[0].StartedAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("sessions: %+v", sess)
	}
	check(t, l.EndSession(ctx, "s1", t0.Add(4*time.Hour)))
	if s1 := must[memory.Session](t)(l.Session(ctx, "s1")); !s1.EndedAt.Equal(t0.Add(4 * time.Hour)) {
		t.Fatalf("ended_at: %+v", s1)
	}
}

func TestSessionLogRecentWindow(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	l := pgtest.Campaign(t, s, "camp").Sessions()
	var es []memory.TranscriptEntry
	for i := range 20 {
		es = append(es, entry("s1", "u1", fmt.Sprintf("line %d", i), time.Duration(i)*time.Minute))
	}
	es = append(es, entry("s2", "u1", "other session", 30*time.Minute))
	must[int](t)(l.WriteEntries(ctx, es))

	got := must[[]memory.TranscriptEntry](t)(l.GetRecent(ctx, "s1", 5*time.Minute))
	texts := ids(got, func(e memory.TranscriptEntry) string { return e.Text })
	want := []string{"line 14", "line 15", "line 16", "line 17", "line 18", "line 19"}
	if !slices.Equal(texts, want) {
		t.Fatalf("recent 5 minutes: got %v, want %v", texts, want)
	}
}

func TestSessionLogSearch(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	l := pgtest.Campaign(t, s, "camp").Sessions()
	must[int](t)(l.WriteEntries(ctx, []memory.TranscriptEntry{
		entry("s1", "u1", "We should ask Grimjaw about the stolen hammer", 1*time.Minute),
		entry("s1", "u2", "The hammer was forged in Ironhold", 2*time.Minute),
		entry("s1", "u1", "Pass the dice please", 3*time.Minute),
		entry("s2", "u2", "Grimjaw forged the hammers for the guild", 60*time.Minute),
		entry("s2", "u1", "Elara mentioned the Tower of Whispers", 61*time.Minute),
	}))
	cases := []struct {
		name  string
		query string
		opts  memory.SearchOpts
		want  []string // texts, best first; order checked only for the first
	}{
		{"word", "hammer", memory.SearchOpts{}, []string{
			"We should ask Grimjaw about the stolen hammer", "The hammer was forged in Ironhold", "Grimjaw forged the hammers for the guild"}},
		{"stemmed", "forging", memory.SearchOpts{}, []string{"The hammer was forged in Ironhold", "Grimjaw forged the hammers for the guild"}},
		{"session", "hammer", memory.SearchOpts{SessionID: "s2"}, []string{"Grimjaw forged the hammers for the guild"}},
		{"speaker", "hammer", memory.SearchOpts{SpeakerID: "u1"}, []string{"We should ask Grimjaw about the stolen hammer"}},
		{"time range", "grimjaw", memory.SearchOpts{After: t0.Add(30 * time.Minute)}, []string{"Grimjaw forged the hammers for the guild"}},
		{"before", "grimjaw", memory.SearchOpts{Before: t0.Add(30 * time.Minute)}, []string{"We should ask Grimjaw about the stolen hammer"}},
		{"phrase", `"tower of whispers"`, memory.SearchOpts{}, []string{"Elara mentioned the Tower of Whispers"}},
		{"exclusion", "hammer -stolen", memory.SearchOpts{}, []string{"The hammer was forged in Ironhold", "Grimjaw forged the hammers for the guild"}},
		{"no match", "dragon", memory.SearchOpts{}, nil},
		{"limit", "hammer", memory.SearchOpts{Limit: 1}, []string{"*"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits := must[[]memory.EntryHit](t)(l.Search(ctx, tc.query, tc.opts))
			got := ids(hits, func(h memory.EntryHit) string { return h.Entry.Text })
			if len(tc.want) == 1 && tc.want[0] == "*" {
				if len(got) != 1 {
					t.Fatalf("limit 1 returned %d", len(got))
				}
				return
			}
			if !sameSet(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := 1; i < len(hits); i++ {
				if hits[i].Rank > hits[i-1].Rank {
					t.Fatalf("results not ranked: %v", hits)
				}
			}
		})
	}
	// Ranking: the entry naming both query words outranks one naming one.
	hits := must[[]memory.EntryHit](t)(l.Search(ctx, "grimjaw hammer or ironhold", memory.SearchOpts{}))
	if len(hits) == 0 {
		t.Fatal("no hits")
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestSearchHeardOnlyFindsWhatTheNPCHeard(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	l := pgtest.Campaign(t, s, "camp").Sessions()
	npcLine := entry("s1", "grimjaw", "Aye, I forged that hammer.", 30*time.Minute)
	npcLine.NPCID = "grimjaw"
	must[int](t)(l.WriteEntries(ctx, []memory.TranscriptEntry{
		entry("s1", "u1", "Long ago the hammer was lost", 0),                // 30 min before: not heard
		entry("s1", "u1", "Grimjaw, who made this hammer?", 29*time.Minute), // heard
		npcLine,
		entry("s1", "u2", "The hammer glows near the dead", 35*time.Minute), // heard
		entry("s1", "u2", "Back at camp, the hammer is cold", 90*time.Minute),
		entry("s2", "u1", "A hammer in another session", 30*time.Minute),
	}))
	hits := must[[]memory.EntryHit](t)(l.SearchHeard(ctx, "grimjaw", "hammer", 10))
	got := ids(hits, func(h memory.EntryHit) string { return h.Entry.Text })
	want := []string{"Grimjaw, who made this hammer?", "Aye, I forged that hammer.", "The hammer glows near the dead"}
	if !sameSet(got, want) {
		t.Fatalf("heard %q, want %q", got, want)
	}
	if hits := must[[]memory.EntryHit](t)(l.SearchHeard(ctx, "elara", "hammer", 10)); len(hits) != 0 {
		t.Fatalf("an NPC who never spoke heard %d lines", len(hits))
	}
	// A line the DM struck from the record did not happen: the NPC was
	// not there to hear what was said around it.
	if _, err := s.Pool().Exec(ctx, `UPDATE transcript_entries SET noncanon = true
		WHERE campaign_id = 'camp' AND npc_id = 'grimjaw'`); err != nil {
		t.Fatal(err)
	}
	if hits := must[[]memory.EntryHit](t)(l.SearchHeard(ctx, "grimjaw", "hammer", 10)); len(hits) != 0 {
		t.Fatalf("with its only line struck, the NPC heard %q", ids(hits, func(h memory.EntryHit) string { return h.Entry.Text }))
	}
}

// TestSessionLogSearchOfACommonWord: a word more than SearchCandidates
// lines say is ranked among its newest lines, whether the campaign's
// newest lines say it often (read by time) or not at all (read through
// the full-text index, SearchSample lines on that never say it). A line of
// those saying it twice ranks first, the newest follow; an older line
// saying it twice is not reached (the documented price of a bounded
// search). A search for any of the words ranks every match: an old line
// with more of them ranks first.
func TestSessionLogSearchOfACommonWord(t *testing.T) {
	t.Parallel()
	for _, quiet := range []int{0, postgres.SearchSampleForTest} {
		t.Run(fmt.Sprintf("then %d lines without it", quiet), func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			ctx := ctxT(t)
			l := pgtest.Campaign(t, s, "camp").Sessions()
			n := postgres.SearchCandidates + 20
			es := make([]memory.TranscriptEntry, 0, n+quiet)
			for i := range n + quiet {
				text := fmt.Sprintf("the lantern flickers, line %d", i)
				switch {
				case i == 3:
					text = "the lantern lantern by the old well, line 3"
				case i == n-5:
					text = fmt.Sprintf("lantern, lantern, line %d", i)
				case i >= n:
					text = fmt.Sprintf("the road goes on, line %d", i)
				}
				es = append(es, entry("s1", "u1", text, time.Duration(i)*time.Second))
			}
			must[int](t)(l.WriteEntries(ctx, es))
			texts := func(hits []memory.EntryHit) []string {
				return ids(hits, func(h memory.EntryHit) string { return h.Entry.Text })
			}
			got := texts(must[[]memory.EntryHit](t)(l.Search(ctx, "lantern", memory.SearchOpts{Limit: 4})))
			want := []string{fmt.Sprintf("lantern, lantern, line %d", n-5), fmt.Sprintf("the lantern flickers, line %d", n-1),
				fmt.Sprintf("the lantern flickers, line %d", n-2), fmt.Sprintf("the lantern flickers, line %d", n-3)}
			if !slices.Equal(got, want) {
				t.Errorf("a common word: %q,\nwant %q", got, want)
			}
			// Narrowed to the old lines, the old line saying it twice is first.
			got = texts(must[[]memory.EntryHit](t)(l.Search(ctx, "lantern", memory.SearchOpts{Limit: 1, Before: t0.Add(10 * time.Second)})))
			if !slices.Equal(got, []string{"the lantern lantern by the old well, line 3"}) {
				t.Errorf("a common word before 10 s: %q", got)
			}
			// A word one line says is found among them all.
			got = texts(must[[]memory.EntryHit](t)(l.Search(ctx, "well", memory.SearchOpts{Limit: 4})))
			if !slices.Equal(got, []string{"the lantern lantern by the old well, line 3"}) {
				t.Errorf("a rare word: %q", got)
			}
			got = texts(must[[]memory.EntryHit](t)(l.Search(ctx, "lantern well", memory.SearchOpts{Limit: 1, Any: true})))
			if !slices.Equal(got, []string{"the lantern lantern by the old well, line 3"}) {
				t.Errorf("any of the words: %q, want the old line with both", got)
			}
		})
	}
}
