package console_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

// TestPlayerOnTheDMsNewPages: a player signed in with Discord reads the As
// of page for every entity at every session and a date without a secret,
// and gets 403 from the Entities pages, the backup download and every
// entity write (with a valid CSRF token), which change nothing.
func TestPlayerOnTheDMsNewPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	g := f.camp.Graph()
	ents, err := g.FindEntities(ctx, memory.EntityFilter{})
	if err != nil || len(ents) < 2 {
		t.Fatalf("entities of the sample: %d %v", len(ents), err)
	}
	b, _, _ := f.signInDiscord(t, player)
	for _, e := range ents {
		for _, at := range []string{"s1", "s2", "2099-01-01"} {
			p := "/asof?entity=" + url.QueryEscape(e.ID) + "&as_of=" + at
			resp, body := b.get(p)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %d", p, resp.StatusCode)
			}
			for _, s := range secrets {
				if strings.Contains(strings.ToLower(body), strings.ToLower(s)) {
					t.Errorf("%s shows the secret %q to a player", p, s)
				}
			}
		}
	}
	for _, p := range []string{"/entities", "/entities/" + ents[0].ID, "/export"} {
		if resp, _ := b.get(p); resp.StatusCode != http.StatusForbidden {
			t.Errorf("player GET %s: %d, want 403", p, resp.StatusCode)
		}
	}
	before, err := g.FindEntities(ctx, memory.EntityFilter{IncludeRetired: true})
	if err != nil {
		t.Fatal(err)
	}
	tok := b.csrf()
	a, z := ents[0].ID, ents[1].ID
	for _, p := range []struct {
		path string
		form url.Values
	}{
		{"/entities", url.Values{"name": {"Player's Plant"}, "kind": {"npc"}, "dm_notes": {"x"}}},
		{"/entities/" + a + "/edit", url.Values{"name": {"Renamed"}, "attributes": {`{"secret_knowledge":"mine"}`}}},
		{"/entities/" + a + "/merge", url.Values{"into": {z}}},
		{"/entities/" + a + "/retire", url.Values{"reason": {"gone"}}},
		{"/entities/" + a + "/reveal", url.Values{}},
	} {
		p.form.Set("csrf", tok)
		if resp, _ := b.post(p.path, p.form, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("a player's POST %s: %d, want 403", p.path, resp.StatusCode)
		}
	}
	after, err := g.FindEntities(ctx, memory.EntityFilter{IncludeRetired: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("a player's entity writes changed the campaign: %d entities before, %d after", len(before), len(after))
	}
}
