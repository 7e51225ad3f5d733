package console_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

// The console's entity pages run the same operations as /memory entity in
// Discord: add, edit, merge and retire, for the DM only.
func TestEntityPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	g := f.camp.Graph()
	b := f.signInLink(t)
	tok := b.csrf()

	resp, body := b.get("/entities")
	if resp.StatusCode != 200 || !strings.Contains(body, "Grimjaw") || !strings.Contains(body, `<option value="location">`) {
		t.Fatalf("entity list: %d %.500s", resp.StatusCode, body)
	}

	// Add: the redirect lands on the new entity's page.
	resp, body = b.post("/entities", url.Values{"csrf": {tok}, "name": {"Old Mill Tower"}, "kind": {"Location"},
		"aliases": {"the mill"}, "description": {"a ruined mill"}, "dm_notes": {"the cult meets here"}}, nil)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/entities/old-mill-tower" || !strings.Contains(body, "Added Old Mill Tower (location).") {
		t.Fatalf("add: %d at %s: %.500s", resp.StatusCode, resp.Request.URL, body)
	}
	e, err := g.Entity(ctx, "old-mill-tower")
	if err != nil || e.Attributes["dm_notes"] != "the cult meets here" || !slices.Equal(e.Aliases, []string{"the mill"}) {
		t.Fatalf("stored %+v %v", e, err)
	}
	// A duplicate name is refused and says which entity has it.
	_, body = b.post("/entities", url.Values{"csrf": {tok}, "name": {"The Mill"}, "kind": {"location"}}, nil)
	if !strings.Contains(body, "Nothing was added") || !strings.Contains(body, "Old Mill Tower") {
		t.Fatalf("duplicate add: %.500s", body)
	}

	// Edit: kind and attributes; a key missing from the YAML is removed.
	resp, body = b.post("/entities/old-mill-tower/edit", url.Values{"csrf": {tok}, "name": {"Old Mill Tower"}, "kind": {"ruin"},
		"aliases": {"the mill, Mill"}, "attributes": {"description: a burnt mill\n"}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "Saved Old Mill Tower.") {
		t.Fatalf("edit: %d %.500s", resp.StatusCode, body)
	}
	if e, _ = g.Entity(ctx, "old-mill-tower"); e.Type != "ruin" || e.Attributes["dm_notes"] != nil || len(e.Aliases) != 2 {
		t.Fatalf("after edit %+v", e)
	}
	_, body = b.post("/entities/old-mill-tower/edit", url.Values{"csrf": {tok}, "name": {"Old Mill Tower"}, "kind": {"ruin"},
		"attributes": {"description: [unclosed"}}, nil)
	if !strings.Contains(body, "Nothing was changed") || !strings.Contains(body, "YAML") {
		t.Fatalf("bad YAML: %.500s", body)
	}

	// Merge the new entity into Duskwood by name.
	if _, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "vexa", TargetID: "old-mill-tower", Type: "HIDES_AT",
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}); err != nil {
		t.Fatal(err)
	}
	resp, body = b.post("/entities/old-mill-tower/merge", url.Values{"csrf": {tok}, "into": {"Duskwood"}}, nil)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/entities/duskwood" || !strings.Contains(body, "Merged old-mill-tower into Duskwood: 1 facts") ||
		!strings.Contains(body, "Old Mill Tower") || !strings.Contains(body, "HIDES_AT") {
		t.Fatalf("merge: %d at %s: %.800s", resp.StatusCode, resp.Request.URL, body)
	}
	if resp, _ := b.get("/entities/old-mill-tower"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the merged entity's page: %d", resp.StatusCode)
	}

	// Retire Duskwood: its facts stop holding; the page says so.
	resp, body = b.post("/entities/duskwood/retire", url.Values{"csrf": {tok}, "reason": {"burnt down"}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "Retired Duskwood") || !strings.Contains(body, "burnt down") {
		t.Fatalf("retire: %d %.800s", resp.StatusCode, body)
	}
	if rels, _ := g.Relationships(ctx, "duskwood", memory.TraversalOpts{}); len(rels) != 0 {
		t.Fatalf("canon facts of a retired entity: %+v", rels)
	}
	if _, body = b.get("/entities"); strings.Contains(body, ">Duskwood<") {
		t.Fatal("a retired entity is in the list")
	}
	if _, body = b.get("/entities?retired=1"); !strings.Contains(body, ">Duskwood<") {
		t.Fatal("the list with retired entities lacks it")
	}
	_, body = b.post("/entities/duskwood/retire", url.Values{"csrf": {tok}}, nil)
	if !strings.Contains(body, "Nothing was retired") {
		t.Fatalf("retired twice: %.500s", body)
	}

	// A player may neither see the pages nor post to them; without the
	// CSRF token even the DM's post is refused.
	pb, _, _ := f.signInDiscord(t, player)
	if resp, _ := pb.get("/entities"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("player GET /entities: %d", resp.StatusCode)
	}
	if resp, _ := pb.post("/entities", url.Values{"csrf": {pb.csrf()}, "name": {"Sneaky"}, "kind": {"npc"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("player POST /entities: %d", resp.StatusCode)
	}
	if resp, _ := b.post("/entities", url.Values{"name": {"Sneaky"}, "kind": {"npc"}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST without CSRF: %d", resp.StatusCode)
	}
	if _, err := g.Entity(ctx, "sneaky"); err == nil {
		t.Fatal("a refused add was stored")
	}
}
