package console_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
)

// TestGraphOpensOnTheHubAfterEdits: a campaign larger than a graph view
// opens on the view around its best-connected entity. A console that
// brings its snapshot up to date after each edit opens on the same entity
// as one that loads the graph afresh, while a quiet entity gains more facts
// than anyone, loses them again, and the hub is deleted.
func TestGraphOpensOnTheHubAfterEdits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	spec := benchdata.Spec{Name: "hub", Entities: 400, Relationships: 1200, Entries: 100, Chunks: 10,
		EntriesPerSession: 50, Dims: 8, Seed: 2}
	door := generateCampaign(t, "bench", spec)
	open := func(c *console.Server) string {
		t.Helper()
		link, err := c.OneTimeLink("bench")
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, link, nil))
		cookies := rec.Result().Cookies()
		if len(cookies) != 1 {
			t.Fatalf("signing in: %d %s", rec.Code, rec.Body)
		}
		req := httptest.NewRequest(http.MethodGet, "/api/graph", nil)
		req.AddCookie(cookies[0])
		rec = httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		var d struct{ Focus string }
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &d) != nil || d.Focus == "" {
			t.Fatalf("GET /api/graph: %d %.300s", rec.Code, rec.Body)
		}
		return d.Focus
	}
	newConsole := func() *console.Server {
		c, err := console.New(console.Config{Door: door, Campaigns: []bot.Guild{{Campaign: "bench"}},
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	warm := newConsole()
	hub := func(step string) string {
		t.Helper()
		got, want := open(warm), open(newConsole())
		if got != want {
			t.Fatalf("%s: the console kept up to date opens around %s, one loaded afresh around %s", step, got, want)
		}
		return got
	}
	camp, err := door.Open(ctx, "bench", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	g := camp.Graph()
	first := hub("as generated")
	quiet := benchdata.EntityID(spec.Entities - 1)
	if quiet == first {
		t.Fatalf("the hub is %s, the entity meant to be quiet", quiet)
	}
	var added []int64
	for i := range 60 {
		f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: quiet, TargetID: benchdata.EntityID(i), Type: "KNOWS",
			Provenance: memory.Provenance{Confidence: 1}})
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, f.ID)
	}
	if got := hub("a quiet entity gained 60 facts"); got != quiet {
		t.Errorf("after 60 facts the hub is %s, not %s", got, quiet)
	}
	for _, id := range added {
		if _, err := g.RetireFact(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
	}
	// Retired facts are drawn: the hub stays until they go.
	hub("its facts retired")
	if err := g.DeleteEntity(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	if got := hub("the hub deleted"); got != first {
		t.Errorf("after the new hub was deleted the view opens around %s, not %s as before", got, first)
	}
	if err := g.DeleteEntity(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := hub("the first hub deleted"); got == first {
		t.Errorf("the view opens around %s, deleted", got)
	}
}
