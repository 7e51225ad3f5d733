package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// The compactor runs one pass per interval of its clock, refuses a second
// Start, and stops its goroutine on Close (which may come twice).
func TestCompactorLifecycle(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	camp := pgtest.Campaign(t, store, "compactor")
	ctx := context.Background()
	if err := camp.SetKGLimit(ctx, 10); err != nil {
		t.Fatal(err)
	}
	old := kgNow.Add(-30 * 24 * time.Hour)
	for _, id := range []string{"a", "b", "c"} {
		if _, err := camp.KGPutNode(ctx, postgres.KGDM, postgres.KGNodeInput{ID: id, Gist: "an old note about " + id}, old); err != nil {
			t.Fatal(err)
		}
	}
	if err := (&mcpserver.Compactor{}).Start(ctx); err == nil {
		t.Fatal("a compactor without a store started")
	}
	clk := clocktest.NewFake(kgNow)
	passes := make(chan []postgres.Compaction, 4)
	c := &mcpserver.Compactor{Door: pgtest.Door(t, store), Campaign: "compactor", Clock: clk, Interval: time.Minute,
		OnPass: func(r []postgres.Compaction, err error) {
			if err != nil {
				t.Error(err)
			}
			passes <- r
		}}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err == nil {
		t.Error("a second Start was accepted")
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	for pass := 1; pass <= 2; pass++ {
		if !clk.WaitTimers(wctx, 1) {
			t.Fatalf("pass %d: no timer", pass)
		}
		if len(passes) != 0 {
			t.Fatalf("a pass ran before its interval")
		}
		clk.Advance(time.Minute)
		select {
		case r := <-passes:
			if len(r) != 2 || r[1].Level != postgres.KGDM || (pass == 1 && r[1].Archived == 0) || (pass == 2 && r[1].Archived != 0) {
				t.Errorf("pass %d: %+v", pass, r)
			}
		case <-wctx.Done():
			t.Fatalf("pass %d did not run", pass)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if len(passes) != 0 {
		t.Error("a pass ran after Close")
	}
}
