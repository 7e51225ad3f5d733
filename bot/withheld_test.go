package bot_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestWithheldFollowsWhatTheSessionNames: the avoid list of a player-safe
// recap holds the withheld facts of the entities the session names however
// old they are, found through the chunker's links (Ashen Circle) and the
// facts extraction rested on its lines (Vexa), not only the campaign's
// newest facts. A
// secret fact of both, written before 1,100 newer facts, is in the list of
// the session that names them, and in no list of a session that names
// neither; so is Vexa's secret attribute.
func TestWithheldFollowsWhatTheSessionNames(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	g := h.camp.Graph()
	secret, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "vexa", TargetID: "ashen-circle", Type: "FUNDS",
		Status: memory.StatusActive, Attributes: map[string]any{"secret": true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ConfirmFact(ctx, secret.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := g.UpdateEntity(ctx, "vexa", memory.EntityUpdate{SetAttributes: map[string]any{"secret_motive": "revenge on the guild"}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []memory.Entity{{ID: "filler-a", Type: memory.EntityNPC, Name: "Ammo Filler"},
		{ID: "filler-b", Type: memory.EntityNPC, Name: "Bobo Filler"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1100 {
		if _, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "filler-a", TargetID: "filler-b",
			Type: fmt.Sprintf("MET_%04d", i), Status: memory.StatusActive}); err != nil {
			t.Fatal(err)
		}
	}
	// Session s9 names both, aloud; session s8 names neither.
	sl := h.camp.Sessions()
	at := time.Date(2026, 4, 1, 19, 0, 0, 0, time.UTC)
	for _, l := range []memory.TranscriptEntry{
		{SessionID: "s8", SpeakerID: "u1", SpeakerName: "Thorin", Text: "We rest at the inn and mend our boots.", At: at},
		{SessionID: "s9", SpeakerID: "u1", SpeakerName: "Thorin", Text: "Everyone hears it: Vexa Thorn pays the cult.", At: at.Add(24 * time.Hour)},
		{SessionID: "s9", SpeakerID: "u2", SpeakerName: "Lyra", Text: "The Ashen Circle meets tonight.", At: at.Add(24*time.Hour + time.Minute)},
	} {
		if _, err := sl.WriteEntry(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	lines, err := sl.Entries(ctx, "s9")
	if err != nil || len(lines) != 2 {
		t.Fatalf("lines of s9: %v %v", lines, err)
	}
	// Extraction rested a fact of Vexa's on the first line.
	told, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "vexa", TargetID: "thorin", Type: "PAID",
		Status: memory.StatusActive})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddEvidence(ctx, told.ID, []int64{lines[0].ID}); err != nil {
		t.Fatal(err)
	}
	if err := h.camp.Index().IndexChunks(ctx, []memory.Chunk{{ID: "s9-c1", SessionID: "s9", Content: lines[1].Text,
		StartAt: lines[1].At, EndAt: lines[1].At, EntityIDs: []string{"ashen-circle"}}}); err != nil {
		t.Fatal(err)
	}
	named, err := g.SessionEntities(ctx, []string{"s9"})
	if err != nil || !slices.Equal(named, []string{"ashen-circle", "thorin", "vexa"}) {
		t.Fatalf("the entities s9 names: %v %v, want ashen-circle, thorin and vexa", named, err)
	}
	const sentence, motive = "Vexa Thorn funds Ashen Circle", "revenge on the guild"
	for _, tc := range []struct {
		sessions []string
		want     bool
	}{{[]string{"s9"}, true}, {[]string{"s8"}, false}, {[]string{"s8", "s9"}, true}, {nil, false}} {
		avoid, err := bot.Withheld(ctx, h.camp, tc.sessions, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(avoid, sentence); got != tc.want {
			t.Errorf("sessions %v: %q in the avoid list %t, want %t", tc.sessions, sentence, got, tc.want)
		}
		if got := slices.Contains(avoid, motive); got != tc.want {
			t.Errorf("sessions %v: %q in the avoid list %t, want %t", tc.sessions, motive, got, tc.want)
		}
	}
	// The ends of the recap's facts count as named.
	avoid, err := bot.Withheld(ctx, h.camp, []string{"s8"}, []string{"vexa"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(avoid, sentence) {
		t.Errorf("Vexa given as a fact's end: %q not in the avoid list", sentence)
	}
}
