package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSessionEntities: the entities a session's lines name are those its
// chunks link, the ends of the facts resting on its lines, and those first
// heard in it in a split scene. A player outside the scene is told
// nothing the scene's line named: not the scene entity's id (a slug of its
// name), nor the ends of the fact resting on it. Another session's names,
// and another campaign's, are not among them.
func TestSessionEntities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	other := pgtest.Campaign(t, s, "other")
	sl, g := camp.Sessions(), camp.Graph()
	t0 := splitAfterAMinute(t, sl)
	for _, e := range []memory.Entity{{ID: "gate", Type: memory.EntityLocation, Name: "Iron Gate"},
		{ID: "warden", Type: memory.EntityNPC, Name: "Warden"}, {ID: "thorin", Type: memory.EntityPlayer, Name: "Thorin"},
		{ID: "elsewhere", Type: memory.EntityLocation, Name: "Elsewhere"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for i, text := range []string{"Together at the Iron Gate.", "Thorin alone meets the Masked Warden."} {
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "Dana",
			Text: text, At: t0.Add(time.Duration(i)*time.Minute + 30*time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s2", SpeakerID: "dm", SpeakerName: "Dana",
		Text: "Far away, Elsewhere.", At: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	lines := must[[]memory.TranscriptEntry](t)(sl.Entries(ctx, "s1"))
	if err := camp.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "c1", SessionID: "s1", Content: lines[0].Text, StartAt: lines[0].At, EndAt: lines[0].At, EntityIDs: []string{"gate"}},
		{ID: "c2", SessionID: "s2", Content: "Far away, Elsewhere.", StartAt: t0.Add(time.Hour), EndAt: t0.Add(time.Hour),
			EntityIDs: []string{"elsewhere"}}}); err != nil {
		t.Fatal(err)
	}
	fact := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "thorin", TargetID: "warden",
		Type: "MEETS", Status: memory.StatusActive}))
	if err := g.AddEvidence(ctx, fact.ID, []int64{lines[1].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.ConfirmFact(ctx, fact.ID); err != nil {
		t.Fatal(err)
	}
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "masked-warden", Type: memory.EntityNPC, Name: "Masked Warden"},
		[]int64{lines[1].ID}); err != nil {
		t.Fatal(err)
	}
	// The other campaign has a session s1 of its own, naming its own gate.
	if err := other.Graph().UpsertEntity(ctx, memory.Entity{ID: "their-gate", Type: memory.EntityLocation, Name: "Iron Gate"}); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "Dana",
		Text: "Their Iron Gate.", At: t0}); err != nil {
		t.Fatal(err)
	}
	if err := other.Index().IndexChunks(ctx, []memory.Chunk{{ID: "c1", SessionID: "s1", Content: "Their Iron Gate.",
		StartAt: t0, EndAt: t0, EntityIDs: []string{"their-gate"}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v        memory.Viewer
		sessions []string
		want     []string
	}{
		{memory.DMViewer(), []string{"s1"}, []string{"gate", "masked-warden", "thorin", "warden"}},
		{memory.PlayerViewerOf("thorin"), []string{"s1"}, []string{"gate", "masked-warden", "thorin", "warden"}},
		{memory.PlayerViewerOf("lyra"), []string{"s1"}, []string{"gate"}},
		{memory.PlayerViewer(), []string{"s1"}, []string{"gate"}},
		{memory.DMViewer(), []string{"s1", "s2"}, []string{"elsewhere", "gate", "masked-warden", "thorin", "warden"}},
		{memory.DMViewer(), []string{"s3"}, []string{}},
		{memory.DMViewer(), nil, []string{}},
	} {
		h := must[*postgres.Campaign](t)(camp.As(tc.v))
		got := must[[]string](t)(h.Graph().SessionEntities(ctx, tc.sessions))
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%s, sessions %v: %v, want %v", tc.v, tc.sessions, got, tc.want)
		}
	}
}
