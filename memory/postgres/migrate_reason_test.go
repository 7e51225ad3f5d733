package postgres_test

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// A DM's reason stored before it became DM-only ("reason", public) is
// moved to "dm_reason" by migration 0028; a player's proposal keeps its
// own "reason", and the migration changes no change-log entry.
func TestMigrationHidesOldDMReasons(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	seedWorld(t, c)
	g := c.Graph()
	p := memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 1, DMConfirmed: true, Source: memory.SourceStated}
	old := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "tower",
		Type: "LOCATED_AT", Attributes: map[string]any{"reason": "captured by the cult"}, Provenance: p}))
	prop := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.Player("u1"), memory.Relationship{SourceID: "grimjaw", TargetID: "vault",
		Type: "VISITED", Attributes: map[string]any{"reason": "we saw him"}, Provenance: memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 0.5, Source: memory.SourceStated}}, ""))
	before := must[int64](t)(c.LastChange(ctx))

	conn, err := s.Pool().Acquire(ctx)
	check(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `DELETE FROM schema_migrations WHERE version = 28`)
	check(t, err)
	check(t, postgres.Migrate(ctx, conn.Conn(), testDims))

	got := must[memory.Relationship](t)(g.Fact(ctx, old.ID))
	if got.Attributes["dm_reason"] != "captured by the cult" || got.Attributes["reason"] != nil {
		t.Errorf("the DM's old fact after the migration: %v, want its reason as dm_reason", got.Attributes)
	}
	player := must[memory.Relationship](t)(mustAs(t, c, memory.PlayerViewer()).Graph().Fact(ctx, old.ID))
	if player.Attributes["dm_reason"] != nil || player.Attributes["reason"] != nil {
		t.Errorf("a player reads %v", player.Attributes)
	}
	if got := must[memory.Relationship](t)(g.Fact(ctx, prop.Fact.ID)); got.Attributes["reason"] != "we saw him" {
		t.Errorf("a player's proposal after the migration: %v, want its own reason kept", got.Attributes)
	}
	if after := must[int64](t)(c.LastChange(ctx)); after != before {
		t.Errorf("the migration wrote change-log entries (%d → %d)", before, after)
	}
}
