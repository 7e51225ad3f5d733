package table_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
)

// TestAttackCorrectionSpellsASceneName attacks the entity secrecy of
// split scenes through the table's name correction: the cast (table.Cast,
// built from the table's campaign handle, which reads every entity) holds
// the names of entities first heard in a split scene, so an utterance of
// a player who was not in the scene is rewritten to the hidden entity's
// exact spelling, in their own transcript line (which they read: /ledger,
// the console's session page, their recap). Kael (p3) was in the tower
// while Thorin heard of "Korrin Ashvale" at the docks; back at the inn,
// Kael guesses "corin?" and his line reads "Korrin": he learns the name
// exists and how it is spelled.
func TestAttackCorrectionSpellsASceneName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 16)
	camp := pgtest.Campaign(t, store, "atkcast")
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"p1", "p3"}, false}, {time.Minute, []string{"p1"}, true}, {10 * time.Minute, []string{"p1", "p3"}, false}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "dm",
		Text: "At the docks a smuggler named Korrin Ashvale offers you a boat.", At: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	es, err := sl.Entries(ctx, "s1")
	if err != nil || len(es) != 1 {
		t.Fatalf("entries: %v, %v", es, err)
	}
	line := es[0]
	if err := camp.Graph().AddSceneEntity(ctx, memory.Entity{ID: "korrin-ashvale", Type: memory.EntityNPC, Name: "Korrin Ashvale",
		Aliases: []string{"Korrin"}}, []int64{line.ID}); err != nil {
		t.Fatal(err)
	}
	// The store hides it from Kael.
	kael := pgtest.Open(t, store, camp.ID(), memory.PlayerViewerOf("p3"))
	if es, err := kael.Graph().FindEntities(ctx, memory.EntityFilter{Name: "korrin"}); err != nil || len(es) != 0 {
		t.Fatalf("Kael finds %v, %v: the scene entity is not hidden, the attack proves nothing", es, err)
	}

	pipe, err := correction.NewPipeline()
	if err != nil {
		t.Fatal(err)
	}
	// The table's handle, as bench_test and cmd/glyphoxa open it.
	cast, err := table.NewCast(ctx, pgtest.Open(t, store, camp.ID(), memory.DMViewer()), pipe)
	if err != nil {
		t.Fatal(err)
	}
	heard := "corin, will you take us across?" // Kael, back at the inn (t0+11m)
	got := pipe.Correct(correction.Utterance{Text: heard}).Text
	if strings.Contains(strings.ToLower(got), "korrin") {
		t.Errorf("LEAK to Kael: his line %q was corrected to %q, the spelling of a name first heard in a scene he was not in", heard, got)
	}
	for _, m := range cast.FindNames(heard) {
		if m.EntityID == "korrin-ashvale" {
			t.Errorf("LEAK to Kael: his line is linked to %s (the chunker's mention, an NPC's addressing)", m.EntityID)
		}
	}
}
