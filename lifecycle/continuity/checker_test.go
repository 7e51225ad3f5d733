package continuity_test

import (
	"context"
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestCheckerAgainstCanon checks lines against a real campaign's canon,
// read through the memory door, and follows canon as the DM changes it:
// the checker reloads only when the change log moved.
func TestCheckerAgainstCanon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	dm := pgtest.Open(t, store, camp.ID(), memory.DMViewer())
	c, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(dm)})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Check("Thorin", "Grimjaw is in Duskwood."); len(got) != 0 {
		t.Fatalf("before canon is loaded: %+v; want nothing", got)
	}
	if re, err := c.Refresh(ctx); err != nil || !re {
		t.Fatalf("first refresh: reloaded %v, %v", re, err)
	}
	cases := []struct {
		speaker, line string
		want          continuity.Kind // "" for none
		canon         string
	}{
		{"Thorin", "Grimjaw is in Duskwood.", continuity.KindPlace, "Grimjaw —LOCATED_AT→ Ironhold"},
		{"Thorin", "Grimjaw is in Ironhold.", "", ""},
		{"Lyra", "Brannoc is at the Rusty Tankard.", "", ""},
		{"Lyra", "Brannoc is in Ironhold.", "", ""}, // the Tankard is in Ironhold
		{"Lyra", "Grimjaw was in Duskwood.", "", ""},
		{"Kael", "Thorin has the Dawn Hammer.", continuity.KindHolder, "Grimjaw —OWNS→ Dawn Hammer"},
		{"Kael", "Here, take the Dawn Hammer.", continuity.KindHolder, "Grimjaw —OWNS→ Dawn Hammer"},
		{"Kael", "Grimjaw has the Dawn Hammer.", "", ""},
	}
	for _, tc := range cases {
		got := c.Check(tc.speaker, tc.line)
		switch {
		case tc.want == "" && len(got) != 0:
			t.Errorf("%q: %+v; want no card", tc.line, got)
		case tc.want != "" && (len(got) != 1 || got[0].Kind != tc.want || got[0].Canon.Text != tc.canon || got[0].Canon.ID == 0):
			t.Errorf("%q: %+v; want one %s card against %q", tc.line, got, tc.want, tc.canon)
		}
	}

	// Nothing changed: no reload.
	if re, err := c.Refresh(ctx); err != nil || re {
		t.Fatalf("refresh without a change: reloaded %v, %v; want no reload", re, err)
	}
	// The DM retires Brannoc, dead; and moves Grimjaw to Duskwood.
	if _, err := dm.Graph().RetireEntity(ctx, "brannoc", "", "killed by Vexa"); err != nil {
		t.Fatal(err)
	}
	if _, err := dm.Graph().WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "grimjaw", TargetID: "duskwood",
		Type: "LOCATED_AT", Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}, "moved"); err != nil {
		t.Fatal(err)
	}
	if re, err := c.Refresh(ctx); err != nil || !re {
		t.Fatalf("refresh after changes: reloaded %v, %v", re, err)
	}
	if got := c.Check("Lyra", "Brannoc pours us another ale."); len(got) != 1 || got[0].Kind != continuity.KindDead {
		t.Errorf("the dead innkeeper pouring: %+v; want a dead card", got)
	}
	if got := c.Check("Lyra", "Brannoc is dead, poor man."); len(got) != 0 {
		t.Errorf("the dead innkeeper mourned: %+v; want none", got)
	}
	if got := c.Check("Thorin", "Grimjaw is in Duskwood."); len(got) != 0 {
		t.Errorf("Grimjaw in Duskwood after the DM moved him: %+v; want none", got)
	}
	if got := c.Check("Thorin", "Grimjaw is in Ironhold."); len(got) != 1 || got[0].Kind != continuity.KindPlace {
		t.Errorf("Grimjaw in Ironhold after the DM moved him: %+v; want a place card", got)
	}
}

// TestCanonNeedsTheDM: canon includes secret facts, so only the DM's
// handle reads it.
func TestCanonNeedsTheDM(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	player := pgtest.Open(t, store, camp.ID(), memory.PlayerViewer())
	c, err := continuity.New(continuity.Config{Source: continuity.CampaignSource(player)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Refresh(context.Background()); err == nil {
		t.Fatal("a player's handle loaded canon; want it refused")
	}
}
