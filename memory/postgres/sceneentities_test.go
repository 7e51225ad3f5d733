package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// sceneCampaign records session s1 (Lyra and Thorin together, then from
// the first minute Thorin alone in a split scene) with one line of the
// scene, and returns the campaign and that line's id.
func sceneCampaign(t *testing.T, id string) (*postgres.Campaign, int64) {
	t.Helper()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, id)
	t0 := splitAfterAMinute(t, camp.Sessions())
	if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "marla", SpeakerName: "Marla",
		NPCID: "marla", Text: "The Veiled Abbess keeps the key.", At: t0.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	es, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil || len(es) != 1 {
		t.Fatalf("entries: %v, %v", es, err)
	}
	return camp, es[0].ID
}

// sees reports whether viewer v of camp finds entity id by id.
func sees(t *testing.T, camp *postgres.Campaign, v memory.Viewer, id string) bool {
	t.Helper()
	c, err := camp.As(v)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Graph().Entity(context.Background(), id)
	if err != nil && !errors.Is(err, memory.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestAddSceneEntityRefusesNoLines(t *testing.T) {
	t.Parallel()
	camp, _ := sceneCampaign(t, "nolines")
	err := camp.Graph().AddSceneEntity(context.Background(), memory.Entity{ID: "abbess", Type: "npc", Name: "Veiled Abbess"}, nil)
	if !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("AddSceneEntity without lines: %v, want ErrInvalid", err)
	}
	if sees(t, camp, memory.DMViewer(), "abbess") {
		t.Error("a refused entity was written")
	}
	lyra, err := camp.As(memory.PlayerViewerOf("lyra"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lyra.Graph().AddSceneEntity(context.Background(), memory.Entity{ID: "x", Type: "npc", Name: "X"}, []int64{1}); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player writes a scene entity: %v", err)
	}
	if err := lyra.Graph().AddEntityEvidence(context.Background(), map[string][]int64{"x": {1}}); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player adds entity evidence: %v", err)
	}
}

// TestMergeSceneEntity: merging an entity heard in a split scene into one
// every player sees keeps its names for the DM (hidden_aliases), not in
// the public aliases; merging a known entity into a scene entity is
// refused; two scene entities merge into one resting on both.
func TestMergeSceneEntity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	camp, line := sceneCampaign(t, "merge")
	g := camp.Graph()
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "abbess", Type: "npc", Name: "Veiled Abbess", Aliases: []string{"the Abbess"}},
		[]int64{line}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.AddEntity(ctx, memory.Entity{ID: "maren", Type: "npc", Name: "Sister Maren"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.MergeEntities(ctx, "maren", "abbess", ""); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("merging a known entity into a scene one: %v, want ErrInvalid", err)
	}
	m, err := g.MergeEntities(ctx, "abbess", "maren", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Into.Aliases) != 0 {
		t.Errorf("the scene's names became public aliases: %v", m.Into.Aliases)
	}
	hidden, _ := m.Into.Attributes["hidden_aliases"].([]any)
	if len(hidden) != 2 || hidden[0] != "Veiled Abbess" || hidden[1] != "the Abbess" {
		t.Errorf("hidden_aliases = %v, want the scene's names", m.Into.Attributes["hidden_aliases"])
	}
	lyra, err := camp.As(memory.PlayerViewerOf("lyra"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := lyra.Graph().Entity(ctx, "maren")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Aliases) != 0 || e.Attributes["hidden_aliases"] != nil {
		t.Errorf("Lyra reads the scene's names on Sister Maren: %v %v", e.Aliases, e.Attributes)
	}
	if found, err := lyra.Graph().FindEntities(ctx, memory.EntityFilter{Name: "abbess"}); err != nil || len(found) != 0 {
		t.Errorf("Lyra finds the Abbess by name: %v, %v", found, err)
	}
	// Two scene entities: the merged one rests on the lines of both.
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "key", Type: "item", Name: "Iron Key"}, []int64{line}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "key2", Type: "item", Name: "Black Key"}, []int64{line}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.MergeEntities(ctx, "key2", "key", ""); err != nil {
		t.Fatal(err)
	}
	if !sees(t, camp, memory.PlayerViewerOf("thorin"), "key") || sees(t, camp, memory.PlayerViewerOf("lyra"), "key") {
		t.Error("the merged scene entity is not Thorin's alone")
	}
}

// TestSceneEntityPublishedAsACharacter: an entity made a player's
// character is listed to every player (PlayerCharacters), so it is
// published.
func TestSceneEntityPublishedAsACharacter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	camp, line := sceneCampaign(t, "character")
	if err := camp.Graph().AddSceneEntity(ctx, memory.Entity{ID: "abbess", Type: "player", Name: "Veiled Abbess"}, []int64{line}); err != nil {
		t.Fatal(err)
	}
	if sees(t, camp, memory.PlayerViewer(), "abbess") {
		t.Fatal("any player sees the scene entity")
	}
	if _, err := camp.SetPlayerCharacter(ctx, "mira", "abbess"); err != nil {
		t.Fatal(err)
	}
	if !sees(t, camp, memory.PlayerViewer(), "abbess") {
		t.Error("a character's entity stays hidden while PlayerCharacters lists it")
	}
}

// TestKGRecallLeavesHiddenEntities: a player's kg_recall of an entity
// they may not see answers as for one that does not exist, and does not
// touch it.
func TestKGRecallLeavesHiddenEntities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	camp, line := sceneCampaign(t, "recall")
	g := camp.Graph()
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "abbess", Type: "npc", Name: "Veiled Abbess"}, []int64{line}); err != nil {
		t.Fatal(err)
	}
	before, err := g.Entity(ctx, "abbess")
	if err != nil {
		t.Fatal(err)
	}
	lyra, err := camp.As(memory.PlayerViewerOf("lyra"))
	if err != nil {
		t.Fatal(err)
	}
	_, errHidden := lyra.KGRecall(ctx, postgres.KGCampaign, "abbess", false, time.Now().Add(time.Hour))
	_, errMissing := lyra.KGRecall(ctx, postgres.KGCampaign, "nobody", false, time.Now().Add(time.Hour))
	if !errors.Is(errHidden, memory.ErrNotFound) || !errors.Is(errMissing, memory.ErrNotFound) {
		t.Fatalf("KGRecall: %v / %v, want not found", errHidden, errMissing)
	}
	after, err := g.Entity(ctx, "abbess")
	if err != nil {
		t.Fatal(err)
	}
	if !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("Lyra's kg_recall touched the hidden entity: %v -> %v", before.UpdatedAt, after.UpdatedAt)
	}
}

// TestSceneEntityForgottenLines: a scene entity whose lines are forgotten
// (the speaker's forget-me) stays hidden from players (no trace is left),
// and the DM still reads it.
func TestSceneEntityForgottenLines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	camp, line := sceneCampaign(t, "forgotten")
	if err := camp.Graph().AddSceneEntity(ctx, memory.Entity{ID: "abbess", Type: "npc", Name: "Veiled Abbess"}, []int64{line}); err != nil {
		t.Fatal(err)
	}
	if !sees(t, camp, memory.PlayerViewerOf("thorin"), "abbess") {
		t.Fatal("Thorin, in the scene, does not see the Abbess")
	}
	if _, err := camp.ForgetSpeaker(ctx, "marla"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []memory.Viewer{memory.PlayerViewerOf("thorin"), memory.PlayerViewerOf("lyra"), memory.PlayerViewer()} {
		if sees(t, camp, v, "abbess") {
			t.Errorf("%s sees the Abbess after its only line was forgotten", v)
		}
	}
	if !sees(t, camp, memory.DMViewer(), "abbess") {
		t.Error("the DM lost the Abbess")
	}
}

// TestSceneEntityChangesHidden: a player's change feed names neither an
// entity first heard in a scene they were not in, nor, once deleted, one
// that was; a deleted public entity's deletion is still reported.
func TestSceneEntityChangesHidden(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	camp, line := sceneCampaign(t, "changes")
	g := camp.Graph()
	for _, id := range []string{"abbess", "gone"} {
		if err := g.AddSceneEntity(ctx, memory.Entity{ID: id, Type: "npc", Name: id}, []int64{line}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.AddEntity(ctx, memory.Entity{ID: "public-gone", Type: "npc", Name: "Public Gone"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"gone", "public-gone"} {
		if err := g.DeleteEntity(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		v    memory.Viewer
		want []string
	}{
		{memory.PlayerViewerOf("lyra"), []string{"public-gone"}},
		{memory.PlayerViewer(), []string{"public-gone"}},
		{memory.PlayerViewerOf("thorin"), []string{"abbess", "public-gone"}},
		{memory.DMViewer(), []string{"abbess", "gone", "public-gone"}},
	} {
		c, err := camp.As(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		chs, _, err := c.ChangesSinceFor(ctx, 0, "", 100, tc.v.Role == memory.RoleDM)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ch := range chs {
			if ch.Kind == "entity" && !slices.Contains(got, ch.Ref) {
				got = append(got, ch.Ref)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: entity changes %v, want %v", tc.v, got, tc.want)
		}
		sync, err := c.KGSync(ctx, postgres.ChangeCursor{}, "", tc.v.Role == memory.RoleDM)
		if err != nil {
			t.Fatal(err)
		}
		var removed []string
		for _, r := range sync.Removed {
			removed = append(removed, r)
		}
		want := []string{}
		for _, id := range tc.want {
			if id != "abbess" {
				want = append(want, "node:campaign:"+id)
			}
		}
		if !slices.Equal(removed, want) && !(len(removed) == 0 && len(want) == 0) {
			t.Errorf("%s: kg_sync removed %v, want %v", tc.v, removed, want)
		}
	}
}
