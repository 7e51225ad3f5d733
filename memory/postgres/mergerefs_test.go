package postgres_test

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// A merge carries the memory tools' references along: touches naming the
// merged entity, artifact edges from it (two that become one keep both
// notes), and the DM's private node about it, whose notes join the DM's
// node about the entity it is merged into; the DM's edges follow.
func TestMergeMovesMemoryToolRefs(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "grimm", Type: memory.EntityNPC, Name: "Grimm the Smith"}))
	put := func(level postgres.KGLevel, id, gist string, touches, notes []string) {
		t.Helper()
		must[postgres.KGNode](t)(c.KGPutNode(ctx, level, postgres.KGNodeInput{ID: id, Gist: gist, Touches: touches, Notes: notes}, t0))
	}
	put(postgres.KGCampaign, "rumour-mill", "rumours at the forge", []string{"grimm", "grimjaw", "docs/forge.md"}, nil)
	put(postgres.KGCampaign, "grimm", "the smith's double?", []string{"grimjaw", "vault"}, nil)
	put(postgres.KGDM, "grimm", "Grimm is a spy", []string{"guild"}, []string{"reports to the guild", "shared"})
	put(postgres.KGDM, "grimjaw", "Grimjaw hides debts", []string{"grimm"}, []string{"shared"})
	put(postgres.KGDM, "plot", "the guild plot", []string{"grimm", "ironhold"}, nil)
	check(t, c.KGPutDMEdge(ctx, "plot", "grimm", "suspects", []string{"a"}, t0))
	check(t, c.KGPutDMEdge(ctx, "plot", "grimjaw", "suspects", []string{"b"}, t0))
	check(t, c.KGPutArtifactEdge(ctx, "grimm", "docs/forge.md", "described-in", []string{"x"}, t0))
	check(t, c.KGPutArtifactEdge(ctx, "grimjaw", "docs/forge.md", "described-in", []string{"y", "x"}, t0))
	check(t, c.KGPutArtifactEdge(ctx, "grimm", "maps/ironhold.png", "drawn-on", nil, t0))

	m := must[postgres.EntityMerge](t)(g.MergeEntities(ctx, "grimm", "grimjaw", "s3"))
	if m.ToolRefs == 0 {
		t.Errorf("merge %+v moved no memory-tool reference", m)
	}
	if got := m.Into.Attributes["touches"]; fmt.Sprint(got) != "[vault]" {
		t.Errorf("the merged entity's touches = %v, want [vault] (from its own, without itself)", got)
	}
	view := must[postgres.KGView](t)(c.KGRead(ctx, true))
	nodes := map[string]postgres.KGNode{}
	for _, n := range view.Nodes {
		nodes[string(n.Level)+"/"+n.ID] = n
		if slices.Contains(n.Touches, "grimm") {
			t.Errorf("node %s/%s still touches grimm: %v", n.Level, n.ID, n.Touches)
		}
	}
	if n := nodes["campaign/rumour-mill"]; !slices.Equal(n.Touches, []string{"grimjaw", "docs/forge.md"}) {
		t.Errorf("rumour-mill touches %v, want grimm replaced and kept once", n.Touches)
	}
	if _, ok := nodes["dm/grimm"]; ok {
		t.Errorf("the DM's node about grimm is still there")
	}
	dm := nodes["dm/grimjaw"]
	if dm.Gist != "Grimjaw hides debts" || !slices.Equal(dm.Notes, []string{"shared", "reports to the guild"}) ||
		!slices.Equal(dm.Touches, []string{"guild"}) {
		t.Errorf("the DM's node about grimjaw = %+v, want its gist, both notes once, grimm's touches without itself", dm)
	}
	var edges []string
	for _, e := range view.Edges {
		if e.From == "grimm" || e.To == "grimm" {
			t.Errorf("edge %+v still names grimm", e)
		}
		if e.Rel == "suspects" || e.Rel == "described-in" || e.Rel == "drawn-on" {
			notes := slices.Clone(e.Notes)
			sort.Strings(notes)
			edges = append(edges, fmt.Sprintf("%s %s-%s->%s %v", e.Level, e.From, e.Rel, e.To, notes))
		}
	}
	sort.Strings(edges)
	want := []string{
		"campaign grimjaw-described-in->docs/forge.md [x y]",
		"campaign grimjaw-drawn-on->maps/ironhold.png []",
		"dm plot-suspects->grimjaw [a b]",
	}
	if !slices.Equal(edges, want) {
		t.Errorf("edges after the merge:\n%q\nwant\n%q", edges, want)
	}
}
