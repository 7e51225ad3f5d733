package postgres_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// searchCampaign writes a campaign for the search attacks: session s1
// with Pia and Otto together, then Otto alone in a split scene, then
// together again, then struck (non-canon) lines; session s2, said before
// any presence was recorded. Both words "sapphire" and "emerald" are said
// in each part; "emerald" is said by everyone outside the scene only
// twice, so that most of its matches are lines a player may not read.
// With quiet, SearchSampleForTest newer lines that say neither follow (in
// s3): the campaign's newest lines then never say the words, and a search
// reads every match through the full-text index; without, they are
// common among the newest lines and read by time.
func searchCampaign(t *testing.T, quiet bool) *postgres.Campaign {
	t.Helper()
	ctx := ctxT(t)
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	l := c.Sessions()
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	for _, p := range []struct {
		at      int
		players []string
		split   bool
	}{{0, []string{"pia", "otto"}, false}, {1000, []string{"otto"}, true}, {2000, []string{"pia", "otto"}, false}} {
		check(t, l.RecordPresence(ctx, "s1", t0.Add(sec(p.at)), p.players, p.split))
	}
	var es []memory.TranscriptEntry
	speakers := []string{"dm", "pia", "otto"}
	for i := range 60 {
		sp := speakers[i%3]
		// Together, before the scene: a few lines say emerald.
		text := fmt.Sprintf("line %d of %s: the sapphire altar glows", i, sp)
		if i%30 == 0 {
			text = fmt.Sprintf("line %d of %s: an emerald and a sapphire", i, sp)
		}
		es = append(es, entry("s1", sp, text, sec(10*i)))
		// In the scene (Otto and the DM; Pia talks at the table).
		es = append(es, entry("s1", sp, fmt.Sprintf("scene line %d of %s: the emerald sapphire altar", i, sp), sec(1000+10*i)))
		// Together again.
		es = append(es, entry("s1", sp, fmt.Sprintf("late line %d of %s: sapphire dust, emerald dust", i, sp), sec(2000+5*i)))
		// Struck from canon below.
		es = append(es, entry("s1", sp, fmt.Sprintf("struck line %d of %s: the emerald sapphire altar", i, sp), sec(2500+5*i)))
	}
	for i := range 40 {
		sp := speakers[i%3]
		es = append(es, entry("s2", sp, fmt.Sprintf("s2 line %d of %s: a sapphire altar, an emerald", i, sp), sec(5000+10*i)))
	}
	if quiet {
		for i := range postgres.SearchSampleForTest {
			es = append(es, entry("s3", "dm", fmt.Sprintf("quiet line %d: the road goes on", i), sec(10000+i)))
		}
	}
	must[int](t)(l.WriteEntries(ctx, es))
	if n := must[int64](t)(l.MarkNonCanon(ctx, "s1", t0.Add(sec(2500)), t0.Add(sec(2500+5*59)))); n != 60 {
		t.Fatalf("struck %d lines, want 60", n)
	}
	return c
}

// visibleLines are the canon lines v reads (SessionLog.Entries, the
// row-by-row rule), by id.
func visibleLines(t *testing.T, c *postgres.Campaign) map[int64]memory.TranscriptEntry {
	t.Helper()
	out := map[int64]memory.TranscriptEntry{}
	for _, s := range []string{"s1", "s2", "s3"} {
		for _, e := range must[[]memory.TranscriptEntry](t)(c.Sessions().Entries(ctxT(t), s)) {
			if !e.NonCanon {
				out[e.ID] = e
			}
		}
	}
	return out
}

var searchViewers = []memory.Viewer{memory.DMViewer(), memory.PlayerViewer(), memory.PlayerViewerOf("pia"),
	memory.PlayerViewerOf("otto"), memory.NPCViewer("brannoc")}

// TestAttackSearchEitherReadKeepsToTheViewer attacks SessionLog.Search's
// two reads of a search for all of its words (the newest matches by time
// when the campaign's newest lines say the words often, every match
// through the full-text index otherwise; the sample counts lines no
// player may read). For each viewer, with and without the session,
// speaker, After and Before filters, both reads return exactly the canon
// lines the viewer reads (SessionLog.Entries) that say every word: never
// a line of a split scene the player was not in, never a struck line.
// (Holds.)
func TestAttackSearchEitherReadKeepsToTheViewer(t *testing.T) {
	t.Parallel()
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet newest lines %t", quiet), func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			dm := searchCampaign(t, quiet)
			opts := []memory.SearchOpts{{}, {SessionID: "s1"}, {SessionID: "s2"}, {SpeakerID: "otto"}, {SpeakerID: "pia", SessionID: "s1"},
				{After: t0.Add(999 * time.Second)}, {Before: t0.Add(2000 * time.Second)},
				{After: t0.Add(1000 * time.Second), Before: t0.Add(1590 * time.Second)}, {SessionID: "nope"}}
			for _, v := range searchViewers {
				c := must[*postgres.Campaign](t)(dm.As(v))
				lines := visibleLines(t, c)
				who := strings.TrimSpace(v.String() + " " + v.PlayerID)
				for _, q := range []string{"sapphire", "emerald", "emerald sapphire altar", "Emerald   SAPPHIRE"} {
					words := strings.Fields(strings.ToLower(q))
					for _, o := range opts {
						var want []int64
						for id, e := range lines {
							text := strings.ToLower(e.Text)
							if (o.SessionID == "" || e.SessionID == o.SessionID) && (o.SpeakerID == "" || e.SpeakerID == o.SpeakerID) &&
								(o.After.IsZero() || e.At.After(o.After)) && (o.Before.IsZero() || e.At.Before(o.Before)) &&
								!slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(text, w) }) {
								want = append(want, id)
							}
						}
						o.Limit = 1000
						hits := must[[]memory.EntryHit](t)(c.Sessions().Search(ctx, q, o))
						got := make([]int64, 0, len(hits))
						for _, h := range hits {
							got = append(got, h.Entry.ID)
							if _, ok := lines[h.Entry.ID]; !ok {
								t.Errorf("LEAK to %s: %q %+v finds line %d (%s, %q), not one they read", who, q, o, h.Entry.ID, h.Entry.SessionID, h.Entry.Text)
							}
						}
						slices.Sort(got)
						slices.Sort(want)
						if !slices.Equal(got, want) {
							t.Errorf("%s: %q %+v finds %d lines, want %d", who, q, o, len(got), len(want))
						}
					}
				}
				// The campaign is what the test means: Pia reads no line of
				// the scene but her own, Otto all of the scene, nobody a
				// struck line.
				scene := 0
				for _, e := range lines {
					if strings.HasPrefix(e.Text, "scene line") && e.SpeakerID != "pia" {
						scene++
					}
					if strings.HasPrefix(e.Text, "struck") {
						t.Fatalf("%s reads struck line %q", who, e.Text)
					}
				}
				if want := map[string]int{"pia": 0, "otto": 40}[v.PlayerID]; v.Role == memory.RolePlayer && scene != want {
					t.Fatalf("%s reads %d lines of the scene not said by Pia, want %d", who, scene, want)
				}
			}
		})
	}
}

// TestAttackSearchMalformedQueries sends Search queries a player may type
// in the console's search box or an MCP client may pass: quotes, a
// backslash, tsquery operators (!, <->, &, |, :*, parentheses), websearch
// syntax ("or", "-", unbalanced quotes), stop words only, an SQL
// injection, through both reads and the any-word search, as each viewer
// (33 dashes and more: TestAttackSearchManyNegations).
// None errors (but a NUL byte, refused as invalid) and none returns a line
// the viewer may not read. (Holds.)
func TestAttackSearchMalformedQueries(t *testing.T) {
	t.Parallel()
	for _, quiet := range []bool{false, true} {
		t.Run(fmt.Sprintf("quiet newest lines %t", quiet), func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			dm := searchCampaign(t, quiet)
			queries := []string{`'`, `''`, `"`, `""`, `"sapphire`, `sapphire"`, `"emerald sapphire"`, `\`, `\'`, `'\''`, `!`, `!!sapphire`,
				`!sapphire`, `-sapphire`, `-`, `- -`, `--`, `-emerald -sapphire`, `sapphire -emerald`, `<->`, `sapphire <-> altar`,
				`sapphire<->altar`, `<2>`, `sapphire <2> altar`, `&`, `|`, `sapphire & emerald`, `sapphire | emerald`, `or`, `OR`, `or or`,
				`sapphire or emerald`, `emerald or`, `or emerald`, `:*`, `sapph:*`, `sapphire:A`, `sapphire:*A`, `(`, `)`, `(sapphire`,
				`sapphire)`, `()`, `the`, `the a an of`, `'; DROP TABLE transcript_entries; --`, `$1`, `$8`, `%`, `_`, `*`,
				`sapphire'emerald`, `ſapphire`, "sapphire\u00a0emerald", "\u200b", `émerald`, `𝔰𝔞𝔭𝔭𝔥𝔦𝔯𝔢`,
				strings.Repeat("sapphire ", 30), strings.Repeat(`"`, 200), strings.Repeat("-", 32), strings.Repeat("!", 500)}
			for _, v := range searchViewers[1:4] {
				c := must[*postgres.Campaign](t)(dm.As(v))
				lines := visibleLines(t, c)
				who := strings.TrimSpace(v.String() + " " + v.PlayerID)
				for _, q := range queries {
					for _, anyWord := range []bool{false, true} {
						for _, o := range []memory.SearchOpts{{Limit: 1000, Any: anyWord}, {Limit: 1000, Any: anyWord, SessionID: "s1", SpeakerID: "otto"}} {
							hits, err := c.Sessions().Search(ctx, q, o)
							if err != nil {
								if strings.TrimSpace(q) == "" || errors.Is(err, memory.ErrInvalid) {
									continue
								}
								t.Errorf("%s: Search(%q, any %t): %v", who, q, anyWord, err)
								continue
							}
							for _, h := range hits {
								if _, ok := lines[h.Entry.ID]; !ok {
									t.Errorf("LEAK to %s: Search(%q, any %t) finds line %d (%q)", who, q, anyWord, h.Entry.ID, h.Entry.Text)
								}
							}
						}
					}
				}
				_, err := c.Sessions().Search(ctx, "sapphire\x00emerald", memory.SearchOpts{})
				if !errors.Is(err, memory.ErrInvalid) {
					t.Errorf("%s: a NUL byte: %v, want invalid", who, err)
				}
			}
		})
	}
}

// TestAttackSearchManyNegations: a search of 33 or more "-" (websearch's
// "not") in a row, as a player may type in the console's session search
// or an MCP client pass, failed the statement (websearch_to_tsquery:
// "tsquery stack too small", SQLSTATE XX000), which the console served as
// a 500. It is refused as invalid now (memory.CheckQuery,
// MaxQueryNegations).
func TestAttackSearchManyNegations(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	dm := searchCampaign(t, false)
	c := must[*postgres.Campaign](t)(dm.As(memory.PlayerViewerOf("pia")))
	for _, q := range []string{strings.Repeat("-", 33), strings.TrimSpace(strings.Repeat("- ", 33)), strings.Repeat("-", 40) + "sapphire"} {
		if _, err := c.Sessions().Search(ctx, q, memory.SearchOpts{}); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("Search(%q): %v, want an error wrapping memory.ErrInvalid", q, err)
		}
	}
	if _, err := c.Sessions().Search(ctx, strings.Repeat("-", 32)+"sapphire", memory.SearchOpts{}); err != nil {
		t.Errorf("32 negations: %v", err)
	}
}

// TestSearchSampleCountsWhatTheReaderMayRead: whether a search reads the
// newest lines by time or every match through the full-text index is
// decided by the newest lines the reader may read. Counting a split
// scene's lines, a word the scene said often sent a player who was not
// there down the read by time (all of the log, to find their one match):
// the search's time told them the scene had said it. The DM and Thorin
// (in the scene) read it by time; Lyra and any player through the index,
// and all find what they may read.
func TestSearchSampleCountsWhatTheReaderMayRead(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStore(t)
	camp := pgtest.Campaign(t, s, "camp")
	sl := camp.Sessions()
	t0 := splitAfterAMinute(t, sl)
	sessionLine(t, sl, "dana", "The moonstone glows on the altar.", t0.Add(10*time.Second))
	for i := range 30 {
		sessionLine(t, sl, "thorin", fmt.Sprintf("The moonstone is the key, says the voice, %d.", i), t0.Add(2*time.Minute+time.Duration(i)*time.Second))
	}
	for _, c := range []struct {
		v      memory.Viewer
		common bool
		lines  int
	}{
		{memory.DMViewer(), true, 31},
		{memory.PlayerViewerOf("thorin"), true, 31},
		{memory.PlayerViewerOf("lyra"), false, 1},
		{memory.PlayerViewer(), false, 1},
	} {
		l := must[*postgres.Campaign](t)(camp.As(c.v)).Sessions()
		if got := must[bool](t)(l.CommonForTest(ctx, "moonstone", memory.SearchOpts{})); got != c.common {
			t.Errorf("%s %s: the search takes moonstone for common: %t, want %t", c.v, c.v.PlayerID, got, c.common)
		}
		if hits := must[[]memory.EntryHit](t)(l.Search(ctx, "moonstone", memory.SearchOpts{Limit: 50})); len(hits) != c.lines {
			t.Errorf("%s %s: %d lines found, want %d", c.v, c.v.PlayerID, len(hits), c.lines)
		}
	}
}
