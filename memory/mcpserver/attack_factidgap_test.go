package mcpserver_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackProposalIDsCountSecretFacts: put_edge answers a player with
// the id of the fact their proposal became, drawn from the sequence every
// fact of the campaign is numbered from. A player who proposes a fact,
// waits, and proposes another reads from the gap how many facts were
// written in between that they cannot see: here the DM's three secret
// facts. (read_graph's fact ids have the same gaps.)
func TestAttackProposalIDsCountSecretFacts(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	url := serveShape(t, store)
	player := goClient(t, url, shapePlayerToken)
	g := pgtest.Campaign(t, store, "ironhold-saga").Graph()
	for _, e := range []memory.Entity{{ID: "old-tam", Type: "npc", Name: "Old Tam"}, {ID: "pell", Type: "npc", Name: "Pell"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	propose := func(rel string) int64 {
		t.Helper()
		out, ok := goCall(t, player, "put_edge", map[string]any{"source": "old-tam", "type": rel, "target": "pell"})
		var c struct {
			ID string `json:"id"`
		}
		if !ok || json.Unmarshal([]byte(out), &c) != nil {
			t.Fatalf("put_edge: %s", out)
		}
		if c.ID == "" {
			return 0 // no id: nothing to count
		}
		id, err := strconv.ParseInt(c.ID, 10, 64)
		if err != nil {
			t.Fatalf("put_edge answered an id that is no fact id: %s", out)
		}
		return id
	}
	before := propose("FISHES_WITH")
	for _, rel := range []string{"BLACKMAILS", "POISONED", "SPIES_ON"} {
		if _, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "old-tam", TargetID: "pell", Type: rel,
			Attributes: map[string]any{"secret": true}, Status: memory.StatusActive,
			Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}}); err != nil {
			t.Fatal(err)
		}
	}
	after := propose("DRINKS_WITH")
	if gap := after - before - 1; before != 0 && after != 0 && gap != 0 {
		t.Errorf("LEAK: the player's two proposals got fact ids %d and %d: %d facts they may not see were written in between", before, after, gap)
	}
}
