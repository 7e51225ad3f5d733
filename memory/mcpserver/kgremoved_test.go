package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestKGSyncTakesASecretOutOfAPlayersGraph: a player's assistant reads a
// fact with kg_read; the DM then makes it secret. The player's next
// kg_sync must name it removed, so that the assistant stops holding it;
// it used to keep it until its next kg_read. A fact secret from the
// start and then deleted is named to the DM's assistant only.
func TestKGSyncTakesASecretOutOfAPlayersGraph(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	url := serveShape(t, store)
	player, dm := goClient(t, url, shapePlayerToken), goClient(t, url, shapeDMToken)
	g := pgtest.Campaign(t, store, "ironhold-saga").Graph()
	for _, e := range []memory.Entity{{ID: "old-tam", Type: "npc", Name: "Old Tam"}, {ID: "pell", Type: "npc", Name: "Pell"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	write := func(rel string, attrs map[string]any) memory.Relationship {
		t.Helper()
		r, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "old-tam", TargetID: "pell", Type: rel, Attributes: attrs,
			Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	write("OWES_MONEY_TO", nil)
	write("SPIES_ON", map[string]any{"secret": true})
	owes := "edge:campaign:old-tam:owes-money-to:pell"
	spies := "edge:campaign:old-tam:spies-on:pell"

	register := func(name string, cs *mcp.ClientSession) string {
		t.Helper()
		out, ok := goCall(t, cs, "kg_register_session", nil)
		var s struct {
			ID string `json:"session_id"`
		}
		if !ok || json.Unmarshal([]byte(out), &s) != nil || s.ID == "" {
			t.Fatalf("%s: kg_register_session: %s", name, out)
		}
		return s.ID
	}
	pSess, dSess := register("player", player), register("dm", dm)
	sync := func(name string, cs *mcp.ClientSession, sess string) []string {
		t.Helper()
		out, ok := goCall(t, cs, "kg_sync", map[string]any{"session_id": sess})
		var so struct {
			Changes map[string]struct {
				Removed []string `json:"removed"`
			} `json:"changes"`
		}
		if !ok || json.Unmarshal([]byte(out), &so) != nil {
			t.Fatalf("%s: kg_sync: %s", name, out)
		}
		return so.Changes["campaign"].Removed
	}
	read, _ := goCall(t, player, "kg_read", nil)
	var view kgView
	if err := json.Unmarshal([]byte(read), &view); err != nil || view.Campaign == nil ||
		!slices.ContainsFunc(view.Campaign.Edges, func(e kgEdge) bool { return e.From == "old-tam" && e.Rel == "owes-money-to" }) {
		t.Fatalf("the player does not read the fact before it is made secret: %v %s", err, read)
	}

	// The DM makes the debt secret.
	fs, err := g.FindFacts(ctx, postgres.FactQuery{EntityIDs: []string{"old-tam"}, Types: []string{"OWES_MONEY_TO"}, Limit: 1})
	if err != nil || len(fs) != 1 {
		t.Fatalf("the debt: %v %v", fs, err)
	}
	debt := fs[0].Relationship
	debt.Attributes = map[string]any{"secret": true}
	if _, err := g.UpsertRelationship(ctx, debt); err != nil {
		t.Fatal(err)
	}
	if got := sync("player", player, pSess); !slices.Equal(got, []string{owes}) {
		t.Errorf("the player's kg_sync after the debt was made secret: removed %q, want %q", got, owes)
	}
	if got := sync("dm", dm, dSess); len(got) != 0 {
		t.Errorf("the DM's kg_sync names facts still in the DM's graph removed: %q", got)
	}

	// The DM deletes Pell: both facts go with him. The secret one is named
	// to the DM's assistant only.
	if err := g.DeleteEntity(ctx, "pell"); err != nil {
		t.Fatal(err)
	}
	if got, want := sync("player", player, pSess), []string{owes, "node:campaign:pell"}; !slices.Equal(got, want) {
		t.Errorf("the player's kg_sync after Pell was deleted: removed %q, want %q", got, want)
	}
	if got, want := sync("dm", dm, dSess), []string{owes, spies, "node:campaign:pell"}; !slices.Equal(got, want) {
		t.Errorf("the DM's kg_sync after Pell was deleted: removed %q, want %q", got, want)
	}
}
