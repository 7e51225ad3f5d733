package retrieve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestParseMode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Mode
		ok   bool
	}{{"", ModeHybrid, true}, {"ppr", ModePPR, true}, {"graphrag", ModeGraphRAG, true}, {"PPR", "", false}, {"magic", "", false}} {
		got, err := ParseMode(c.in)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("ParseMode(%q) = %q, %v", c.in, got, err)
		}
	}
}

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// small writes two sessions: in s1 the smith Hadrik talks about his forge;
// in s2, a week later, the ferryman Ost talks about the river.
func small(t *testing.T) (*postgres.Campaign, *embed.Offline) {
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 64)
	c := pgtest.Campaign(t, store, "small")
	check(t, c.Graph().UpsertEntities(ctx, []memory.Entity{
		{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"},
		{ID: "ost", Type: memory.EntityNPC, Name: "Ost the Ferryman", Aliases: []string{"Ost"}},
		{ID: "river", Type: memory.EntityLocation, Name: "Greywater"},
	}))
	line := func(s string, min int, who, npc, text string) memory.TranscriptEntry {
		start := t0
		if s == "s2" {
			start = t0.Add(7 * 24 * time.Hour)
		}
		id := strings.ToLower(who)
		return memory.TranscriptEntry{SessionID: s, SpeakerID: id, SpeakerName: who, NPCID: npc, Text: text,
			At: start.Add(time.Duration(min) * time.Minute), IdempotencyKey: fmt.Sprint(s, min)}
	}
	check(t, c.Sessions().StartSession(ctx, "s1", t0))
	check(t, c.Sessions().StartSession(ctx, "s2", t0.Add(7*24*time.Hour)))
	_, err := c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
		line("s1", 0, "Thorin", "", "Hadrik, is the forge hot today?"),
		line("s1", 1, "Hadrik", "hadrik", "Hot enough to melt a crown. The bellows are new."),
		line("s2", 0, "Mira", "", "Ost, will you take us across?"),
		line("s2", 1, "Ost", "ost", "Across the Greywater, for a silver coin, when the fog lifts."),
	})
	check(t, err)
	e, _ := embed.NewOffline(64)
	_, err = chunk.Process(ctx, c, e, chunk.Options{})
	check(t, err)
	return c, e
}

func TestNPCScope(t *testing.T) {
	c, e := small(t)
	r, err := New(c, e, Config{})
	check(t, err)
	ctx := context.Background()
	for _, m := range Modes() {
		all, err := r.Search(ctx, Query{Text: "forge bellows river fog", Mode: m, K: 10})
		check(t, err)
		if len(all) != 2 {
			t.Errorf("%s unscoped: %d results, want both sessions", m, len(all))
		}
		own, err := r.Search(ctx, Query{Text: "forge bellows river fog", Mode: m, K: 10, NPCID: "ost"})
		check(t, err)
		if len(own) != 1 || own[0].SessionID != "s2" {
			t.Errorf("%s for Ost: %+v, want only his session", m, own)
		}
	}
	if _, err := r.Search(ctx, Query{Text: "x", NPCID: "nobody"}); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("unknown NPC: %v", err)
	}
	if _, err := r.Search(ctx, Query{Text: "  "}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("empty question: %v", err)
	}
	if _, err := r.Search(ctx, Query{Text: "x", Mode: "magic"}); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("bad mode: %v", err)
	}
}

func TestRetrievalSeesWritesAfterRefresh(t *testing.T) {
	c, e := small(t)
	clock := t0
	r, err := New(c, e, Config{RefreshEvery: time.Second, Now: func() time.Time { return clock }})
	check(t, err)
	ctx := context.Background()
	// Ost's chunk gets PageRank mass from Hadrik only through the graph.
	ostScore := func() float64 {
		t.Helper()
		rs, err := r.Search(ctx, Query{Text: "Hadrik", Mode: ModePPR})
		check(t, err)
		for _, x := range rs {
			if x.SessionID == "s2" {
				return x.Score
			}
		}
		return 0
	}
	before := ostScore()
	edges := r.Graph().Stats().Edges
	_, err = c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "hadrik", TargetID: "ost", Type: "KNOWS",
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}})
	check(t, err)
	if got := ostScore(); got != before {
		t.Fatalf("refreshed before RefreshEvery passed: %v -> %v", before, got)
	}
	clock = clock.Add(2 * time.Second)
	if got := ostScore(); got < 2*before || r.Graph().Stats().Edges != edges+1 {
		t.Fatalf("after refresh: Ost's chunk %v (before %v), %d edges (before %d)", got, before, r.Graph().Stats().Edges, edges)
	}
	// Hybrid retrieval returns the fact the question's relationship word
	// leads to.
	rs, err := r.Search(ctx, Query{Text: "Who is Hadrik's friend?", K: 5})
	check(t, err)
	found := false
	for _, x := range rs {
		if x.Kind == KindFact {
			found = x.Content == "Hadrik KNOWS Ost the Ferryman" && fmt.Sprint(x.EntityIDs) == "[hadrik ost]"
		}
	}
	if !found {
		t.Errorf("no fact result: %+v", rs)
	}
	// A renamed entity is matched by its new name.
	name := "Ostrin"
	_, err = c.Graph().UpdateEntity(ctx, "ost", memory.EntityUpdate{Name: &name})
	check(t, err)
	clock = clock.Add(2 * time.Second)
	m, err := r.prepare(ctx)
	check(t, err)
	if s := m.Seeds("where is Ostrin"); len(s) == 0 || s[0].EntityID != "ost" {
		t.Errorf("new name not matched: %v", s)
	}
}

func TestEntryFallbackBeforeProcessing(t *testing.T) {
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 64)
	c := pgtest.Campaign(t, store, "raw")
	check(t, c.Sessions().StartSession(ctx, "s1", t0))
	_, err := c.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "u1", SpeakerName: "Mira",
		Text: "The lantern is cracked.", At: t0})
	check(t, err)
	e, _ := embed.NewOffline(64)
	r, err := New(c, e, Config{})
	check(t, err)
	rs, err := r.Search(ctx, Query{Text: "what about the lantern?"})
	check(t, err)
	if len(rs) != 1 || rs[0].Kind != KindEntry || rs[0].Content != "Mira: The lantern is cracked." {
		t.Fatalf("fallback: %+v", rs)
	}
	wrong, _ := embed.NewOffline(32)
	if _, err := New(c, wrong, Config{}); !errors.Is(err, embed.ErrDimensionMismatch) {
		t.Errorf("dimension mismatch: %v", err)
	}
}

// Full-text and vector questions load no graph; graphrag loads the names
// only; ppr loads the graph.
func TestModesLoadOnlyWhatTheyNeed(t *testing.T) {
	c, e := small(t)
	r, err := New(c, e, Config{})
	check(t, err)
	ctx := context.Background()
	for _, c := range []struct {
		mode        Mode
		names, grph bool
	}{{ModeFTS, false, false}, {ModeVector, false, false}, {ModeGraphRAG, true, false}, {ModePPR, true, true}} {
		_, err := r.Search(ctx, Query{Text: "Hadrik and the forge", Mode: c.mode})
		check(t, err)
		r.mu.Lock()
		names, grph := r.matcher != nil, r.graphLoaded
		r.mu.Unlock()
		if names != c.names || grph != c.grph || (r.Graph().Stats().Nodes > 0) != c.grph {
			t.Errorf("after %s: names loaded %v, graph loaded %v (%d nodes); want %v, %v",
				c.mode, names, grph, r.Graph().Stats().Nodes, c.names, c.grph)
		}
	}
}

// graphrag falls back to the whole campaign when what the question names
// links no chunk, and fills up from it when the scope has too few.
func TestGraphRAGFallsBackToCampaign(t *testing.T) {
	c, e := small(t)
	ctx := context.Background()
	check(t, c.Graph().UpsertEntities(ctx, []memory.Entity{{ID: "vex", Type: memory.EntityNPC, Name: "Vex"}}))
	r, err := New(c, e, Config{})
	check(t, err)
	for _, q := range []struct {
		text      string
		wantFirst string
	}{
		{"Did Vex see the forge bellows?", "s1"},  // Vex is in no chunk
		{"Hadrik and the fog on the river", "s1"}, // Hadrik's scope has one chunk
	} {
		rs, err := r.Search(ctx, Query{Text: q.text, Mode: ModeGraphRAG, K: 2})
		check(t, err)
		if len(rs) != 2 || rs[0].SessionID != q.wantFirst || rs[0].Kind != KindChunk || rs[1].Kind != KindChunk {
			t.Errorf("%q: %+v, want both chunks, %s first", q.text, rs, q.wantFirst)
		}
	}
}
