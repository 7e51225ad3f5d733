package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
)

// TestPickersEscapeNames: the graph page's "Seen by" choices are made once
// per snapshot, outside the templates' own escaping; a name written to
// break out of the option (an entity named by a player's line or an
// assistant's proposal) comes out as text, and a new entity shows up once
// the graph changed. The name suggestions (/api/names) send it as JSON
// text, never markup, and only to the DM.
func TestPickersEscapeNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.signInLink(t)
	// The pages made before the hostile entity exists: the snapshot
	// holds its choices.
	if resp, body := b.get("/graph"); resp.StatusCode != 200 || !strings.Contains(body, `<option value="vexa">Vexa Thorn</option>`) {
		t.Fatalf("graph page: %d, Vexa among the NPCs: %v", resp.StatusCode, strings.Contains(body, "Vexa"))
	}
	const hostile = `Mal"><script>alert(1)</script><option value="x`
	if err := f.camp.Graph().UpsertEntity(ctx, memory.Entity{ID: `mal"id`, Type: memory.EntityNPC, Name: hostile}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"/graph", `<option value="mal&#34;id">Mal&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;option value=&#34;x</option>`},
		{"/api/names?q=" + url.QueryEscape(`mal"`), `{"id":"mal\"id","name":"Mal\"\u003e\u003cscript\u003ealert(1)\u003c/script\u003e\u003coption value=\"x","type":"npc"}`},
	} {
		resp, body := b.get(tc.path)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %.300s", tc.path, resp.StatusCode, body)
		}
		if strings.Contains(body, "<script>alert(1)") {
			t.Errorf("%s: the name's markup reached the page", tc.path)
		}
		if !strings.Contains(body, tc.want) {
			t.Errorf("%s: no escaped option %s for the new entity", tc.path, tc.want)
		}
	}
	pb, _, _ := f.signInDiscord(t, player)
	if resp, _ := pb.get("/api/names?q=mal"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a player's name suggestions: %d, want 403", resp.StatusCode)
	}
}
