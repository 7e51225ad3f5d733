package guard_test

import (
	"context"
	"errors"
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestGraphAndIndexWhileDegraded(t *testing.T) {
	store, dsn := pgtest.NewStore(t, 8)
	ctx := context.Background()
	up := pgtest.Campaign(t, store, "c")
	if err := up.Graph().UpsertEntity(ctx, memory.Entity{ID: "grimjaw", Type: "npc", Name: "Grimjaw"}); err != nil {
		t.Fatal(err)
	}

	// Healthy: calls pass through.
	g, err := guard.New(guard.Config{Store: up.Sessions(), Ping: store.Ping, SpoolDir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if es, err := g.Graph(up.Graph()).FindEntities(ctx, memory.EntityFilter{}); err != nil || len(es) != 1 {
		t.Fatalf("healthy FindEntities = %v, %v", es, err)
	}
	if g.Index(up.Index()).Dimensions() != 8 {
		t.Error("Dimensions not passed through")
	}

	// Unreachable: the first failing read degrades the guard and is empty.
	down, err := postgres.NewStore(ctx, dsn, 8, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	dc := pgtest.Campaign(t, down, "c")
	down.Close()
	g2, err := guard.New(guard.Config{Store: dc.Sessions(), Ping: down.Ping, SpoolDir: t.TempDir(), Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	kg, ix := g2.Graph(dc.Graph()), g2.Index(dc.Index())
	if es, err := kg.FindEntities(ctx, memory.EntityFilter{}); err != nil || es != nil {
		t.Fatalf("FindEntities during an outage = %v, %v; want empty", es, err)
	}
	if !g2.IsDegraded() {
		t.Fatal("a read that met the outage did not degrade the guard")
	}
	if id, err := kg.IdentitySnapshot(ctx, "grimjaw"); err != nil || id.Entity.ID != "" {
		t.Errorf("IdentitySnapshot while degraded = %+v, %v; want empty", id, err)
	}
	if es, rs, err := kg.VisibleSubgraph(ctx, "grimjaw", memory.VisibilityScope{}); err != nil || es != nil || rs != nil {
		t.Errorf("VisibleSubgraph while degraded = %v, %v, %v", es, rs, err)
	}
	if rs, err := ix.Search(ctx, make([]float32, 8), 3, memory.ChunkFilter{}); err != nil || rs != nil {
		t.Errorf("Search while degraded = %v, %v", rs, err)
	}
	if _, err := kg.Entity(ctx, "grimjaw"); !errors.Is(err, memory.ErrNotFound) || !errors.Is(err, guard.ErrDegraded) {
		t.Errorf("Entity while degraded = %v, want ErrNotFound and ErrDegraded", err)
	}
	if err := kg.UpsertEntity(ctx, memory.Entity{ID: "x", Type: "npc", Name: "X"}); !errors.Is(err, guard.ErrDegraded) {
		t.Errorf("UpsertEntity while degraded = %v, want ErrDegraded", err)
	}
	if err := ix.IndexChunks(ctx, nil); !errors.Is(err, guard.ErrDegraded) {
		t.Errorf("IndexChunks while degraded = %v, want ErrDegraded", err)
	}
}
