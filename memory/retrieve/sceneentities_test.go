package retrieve

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestHybridAskHidesSceneEntities asks, in every mode, about an entity
// first heard in a split scene (Thorin alone with Hadrik), as Thorin, as
// Mira (not there), as any player and as the DM: the hybrid ask's kind
// "entity" result, and any result's text, names it only to Thorin and the
// DM; the question's name matching (the mention matcher, fuzzy spellings
// included) does not find it for the others.
func TestHybridAskHidesSceneEntities(t *testing.T) {
	ctx := context.Background()
	c := abbessScene(ctx, t, "sceneask", "abbess")
	sl := c.Sessions()
	// A session of the party together, which every player may read.
	check(t, sl.StartSession(ctx, "s2", t0.Add(7*24*time.Hour)))
	check(t, sl.RecordPresence(ctx, "s2", t0.Add(7*24*time.Hour), []string{"thorin", "mira"}, false))
	_, err := sl.WriteEntries(ctx, []memory.TranscriptEntry{
		{SessionID: "s2", SpeakerID: "mira", SpeakerName: "Mira", Text: "Who buys the crowns Hadrik forges?", At: t0.Add(7*24*time.Hour + time.Minute)},
		{SessionID: "s2", SpeakerID: "thorin", SpeakerName: "Thorin", Text: "Someone rich; the forge is hot all night.", At: t0.Add(7*24*time.Hour + 2*time.Minute)},
	})
	check(t, err)
	e, _ := embed.NewOffline(64)
	_, err = chunk.Process(ctx, c, e, chunk.Options{})
	check(t, err)
	for _, tc := range []struct {
		v    memory.Viewer
		sees bool
	}{{memory.PlayerViewerOf("thorin"), true}, {memory.DMViewer(), true}, {memory.PlayerViewerOf("mira"), false}, {memory.PlayerViewer(), false}} {
		as, err := c.As(tc.v)
		check(t, err)
		r, err := New(as, e, Config{RefreshEvery: -1})
		check(t, err)
		for _, m := range Modes() {
			for _, q := range []string{"Who is the Veiled Abbess?", "what does the abbess buy", "tell me of the Veiled Abess"} {
				rs, err := r.Search(ctx, Query{Text: q, Mode: m, K: 5})
				check(t, err)
				named := false
				for _, x := range rs {
					if x.Kind == KindEntity && x.ID == "abbess" {
						named = true
					}
					for _, id := range x.EntityIDs {
						named = named || id == "abbess"
					}
					named = named || strings.Contains(strings.ToLower(x.Content), "abbess")
				}
				if named && !tc.sees {
					t.Errorf("LEAK: %s asking %q (%s) reads the Veiled Abbess: %+v", tc.v, q, m, rs)
				}
				if m == ModeHybrid && q == "Who is the Veiled Abbess?" {
					if !named && tc.sees {
						t.Errorf("%s asking %q (%s) does not find the Veiled Abbess: %+v", tc.v, q, m, rs)
					}
				}
			}
		}
		// The reader is given entity results: the check is not vacuous.
		rs, err := r.Search(ctx, Query{Text: "What does Hadrik forge?", Mode: ModeHybrid, K: 5})
		check(t, err)
		if kinds := resultKinds(rs); !strings.Contains(kinds, KindEntity) {
			t.Errorf("%s: no entity result for Hadrik: %s", tc.v, kinds)
		}
	}
}

// abbessScene writes campaign name: the NPC Hadrik, and session s1, where
// Thorin, alone with Hadrik in a split scene from minute 2, hears of the
// Veiled Abbess (alias "the Abbess"), the entity id first heard in that
// line; later are further lines of s1, written with them. The chunks are
// the caller's to make.
func abbessScene(ctx context.Context, t *testing.T, name, id string, later ...memory.TranscriptEntry) *postgres.Campaign {
	t.Helper()
	store, _ := pgtest.NewStore(t, 64)
	c := pgtest.Campaign(t, store, name)
	check(t, c.Graph().UpsertEntities(ctx, []memory.Entity{{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"}}))
	sl := c.Sessions()
	check(t, sl.StartSession(ctx, "s1", t0))
	check(t, sl.RecordPresence(ctx, "s1", t0, []string{"thorin", "mira"}, false))
	check(t, sl.RecordPresence(ctx, "s1", t0.Add(2*time.Minute), []string{"thorin"}, true))
	_, err := sl.WriteEntries(ctx, append([]memory.TranscriptEntry{
		{SessionID: "s1", SpeakerID: "thorin", SpeakerName: "Thorin", Text: "Mira, wait here, I go to the forge.", At: t0.Add(time.Minute)},
		{SessionID: "s1", SpeakerID: "hadrik", SpeakerName: "Hadrik", NPCID: "hadrik",
			Text: "The Veiled Abbess buys every crown I forge.", At: t0.Add(3 * time.Minute)},
	}, later...))
	check(t, err)
	es, err := sl.Entries(ctx, "s1")
	check(t, err)
	check(t, c.Graph().AddSceneEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: "Veiled Abbess",
		Aliases: []string{"the Abbess"}}, []int64{es[1].ID}))
	return c
}

// TestResidentPlayerLearnsASceneEntityByATrace: a player's resident
// retriever (an MCP token's, kept between questions) matches the names of
// the entities they may see. Mira did not hear of the Veiled Abbess in
// Thorin's scene; when the party, together, later says her full name, Mira
// may see her, although the entity itself did not change. The resident
// retriever then finds her as a fresh one does.
func TestResidentPlayerLearnsASceneEntityByATrace(t *testing.T) {
	ctx := context.Background()
	c := abbessScene(ctx, t, "scenetrace", "abbess")
	sl := c.Sessions()
	s2 := t0.Add(7 * 24 * time.Hour)
	check(t, sl.StartSession(ctx, "s2", s2))
	check(t, sl.RecordPresence(ctx, "s2", s2, []string{"thorin", "mira"}, false))
	_, err := sl.WriteEntries(ctx, []memory.TranscriptEntry{
		{SessionID: "s2", SpeakerID: "mira", SpeakerName: "Mira", Text: "Who buys the crowns Hadrik forges?", At: s2.Add(time.Minute)},
	})
	check(t, err)
	e, _ := embed.NewOffline(64)
	_, err = chunk.Process(ctx, c, e, chunk.Options{})
	check(t, err)
	mira, err := c.As(memory.PlayerViewerOf("mira"))
	check(t, err)
	clock := t0
	now := func() time.Time { clock = clock.Add(time.Minute); return clock } // past RefreshEvery at each question
	resident, err := New(mira, e, Config{Now: now})
	check(t, err)
	finds := func(r *Retriever) bool {
		t.Helper()
		rs, err := r.Search(ctx, Query{Text: "Who is the Veiled Abbess?", Mode: ModeHybrid, K: 5})
		check(t, err)
		for _, x := range rs {
			if x.Kind == KindEntity && x.ID == "abbess" {
				return true
			}
		}
		return false
	}
	if finds(resident) {
		t.Fatal("LEAK: Mira finds the Veiled Abbess before anyone told her")
	}
	// Thorin names her in full with the party together.
	_, err = sl.WriteEntries(ctx, []memory.TranscriptEntry{
		{SessionID: "s2", SpeakerID: "thorin", SpeakerName: "Thorin", Text: "The Veiled Abbess buys them, Hadrik told me.",
			At: s2.Add(2 * time.Minute)},
	})
	check(t, err)
	_, err = chunk.Process(ctx, c, e, chunk.Options{})
	check(t, err)
	fresh, err := New(mira, e, Config{Now: now})
	check(t, err)
	if !finds(fresh) {
		t.Fatal("a fresh retriever of Mira's does not find the Veiled Abbess once told: the test shows nothing")
	}
	if !finds(resident) {
		t.Error("Mira's resident retriever does not find the Veiled Abbess once told, as a fresh one does")
	}
}
