package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackDeletedNodeShowsItsPendingFacts: a fact waiting for the DM's
// review (an unconfirmed extraction, another player's proposal) is hidden
// from players. The DM's assistant then deletes an entity it names
// (kg_delete_node): archiveEntity retires the entity's facts, the pending
// ones included, and a retired fact is no longer "pending" to the
// player filter (view.factVisible). The player token reads the
// never-confirmed fact, with its attributes, through read_graph's traces
// and recall_node.
func TestAttackDeletedNodeShowsItsPendingFacts(t *testing.T) {
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
	const marker = "mkx-unconfirmed-poisoner"
	pending, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "old-tam", TargetID: "pell", Type: "POISONED",
		Attributes: map[string]any{"evidence": marker}, Status: memory.StatusPending,
		Provenance: memory.Provenance{Confidence: 0.4, Source: memory.SourceInferred}})
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(pending.ID)
	leaks := func(when string) {
		t.Helper()
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"read_graph", map[string]any{"name": "Old Tam"}},
			{"read_graph", map[string]any{}},
			{"recall_node", map[string]any{"id": id}},
		} {
			out, _ := goCall(t, player, c.tool, c.args)
			if strings.Contains(out, marker) || strings.Contains(out, "POISONED") {
				t.Errorf("LEAK %s: the player's %s %v shows the fact the DM never confirmed: %.400s", when, c.tool, c.args, out)
			}
		}
	}
	leaks("while it waits for review")
	if t.Failed() {
		t.Fatal("the pending fact already shows: the attack proves nothing")
	}
	if out, ok := goCall(t, dm, "kg_delete_node", map[string]any{"level": "campaign", "id": "pell"}); !ok {
		t.Fatalf("the DM's kg_delete_node: %s", out)
	}
	leaks("after the DM deleted Pell")
}
