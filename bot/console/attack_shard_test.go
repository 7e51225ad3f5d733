package console

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackShardSnapshotsUnderEdits (adversarial review of d48a0a3): a
// campaign takes a random sequence of DM edits (entities added, renamed,
// deleted, merged; facts added, retired, rejected, deleted); after each,
// the snapshot the console refreshes must equal one loaded afresh. Every
// older snapshot is read all the while by concurrent readers (its lists,
// both shard maps, the around-view, the hub) and must hold at the end
// exactly what it held when it was served. Run with -race.
func TestAttackShardSnapshotsUnderEdits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	pgtest.Campaign(t, store, "shard")
	door, err := access.New(access.Config{Store: store, Logger: slog.New(slog.DiscardHandler),
		Probe: reconnect.Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	door.Start(ctx)
	t.Cleanup(func() { door.Close() })
	camp, err := door.Open(ctx, "shard", memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	g := camp.Graph()
	const n = 400 // more keys than shards: several per shard
	var ents []memory.Entity
	for i := range n {
		ents = append(ents, memory.Entity{ID: fmt.Sprintf("e%03d", i), Type: memory.EntityNPC, Name: fmt.Sprintf("Name %03d", i)})
	}
	if err := g.UpsertEntities(ctx, ents); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var facts []int64
	for i := range 2 * n {
		f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: fmt.Sprintf("e%03d", i%n), TargetID: fmt.Sprintf("e%03d", r.IntN(n)),
			Type: fmt.Sprintf("R%d", i), Provenance: memory.Provenance{Confidence: 1}})
		if err != nil {
			t.Fatal(err)
		}
		facts = append(facts, f.ID)
	}
	s, err := New(Config{Door: door, Campaigns: []bot.Guild{{Campaign: "shard"}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}

	type served struct {
		sn   *snapshot
		data SnapshotData
	}
	var (
		mu   sync.Mutex
		olds []served
	)
	var latest atomic.Pointer[snapshot]
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rr := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				var sn *snapshot
				if len(olds) > 0 {
					sn = olds[rr.IntN(len(olds))].sn
				}
				mu.Unlock()
				if rr.IntN(2) == 0 {
					sn = latest.Load()
				}
				if sn == nil {
					continue
				}
				for range sn.byID.all() {
				}
				for _, fs := range sn.byEntity.all() {
					_ = len(fs)
				}
				id := fmt.Sprintf("e%03d", rr.IntN(n))
				_, ok := sn.byID.lookup(id)
				_ = sn.byEntity.get(id)
				_ = sn.degree(id)
				_ = sn.hub()
				if ok { // as graphJSON calls it: on an entity the snapshot holds
					_ = sn.around(id, 2, true)
				}
			}
		}()
	}

	check := func(step string) {
		t.Helper()
		sn, err := s.graphSnapshot(ctx, camp)
		if err != nil {
			t.Fatal(err)
		}
		latest.Store(sn)
		full, err := loadSnapshot(ctx, camp, sn.seen, maxSnapshotFacts)
		if err != nil {
			t.Fatal(err)
		}
		got, want := sn.data(), full.data()
		got.Refreshed, want.Refreshed = false, false
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the refreshed snapshot differs from a load (%d/%d entities, %d/%d facts, %d/%d ids, %d/%d ends)", step,
				len(got.Entities), len(want.Entities), len(got.Facts), len(want.Facts), len(got.ByID), len(want.ByID),
				len(got.ByEntity), len(want.ByEntity))
		}
		if sn.byID.len() != len(want.ByID) || sn.byEntity.len() != len(want.ByEntity) {
			t.Errorf("%s: shard maps count %d ids and %d ends, a load %d and %d", step, sn.byID.len(), sn.byEntity.len(),
				len(want.ByID), len(want.ByEntity))
		}
		if sn.hub() != full.hub() {
			t.Errorf("%s: hub %s, a load's %s", step, sn.hub(), full.hub())
		}
		mu.Lock()
		olds = append(olds, served{sn, sn.data()})
		mu.Unlock()
	}
	check("loaded")
	refreshed := 0
	next := n
	for step := range 60 {
		var what string
		id := func() string { return fmt.Sprintf("e%03d", r.IntN(n)) }
		switch k := r.IntN(8); k {
		case 0:
			e := memory.Entity{ID: fmt.Sprintf("e%03d", next), Type: memory.EntityNPC, Name: fmt.Sprintf("Name %03d", r.IntN(n))} // a name shared
			next++
			what = "add " + e.ID
			err = g.UpsertEntity(ctx, e)
		case 1:
			x := id()
			what = "rename " + x
			err = g.UpsertEntity(ctx, memory.Entity{ID: x, Type: memory.EntityNPC, Name: fmt.Sprintf("Aaa %d", step)})
		case 2:
			x := id()
			what = "delete " + x
			err = g.DeleteEntity(ctx, x)
		case 3:
			a, b := id(), id()
			what = "merge " + a + " into " + b
			if a != b {
				_, err = g.MergeEntities(ctx, a, b, "")
			}
		case 4, 5:
			a, b := id(), id()
			what = "fact " + a + "-" + b
			var f memory.Relationship
			f, err = g.UpsertRelationship(ctx, memory.Relationship{SourceID: a, TargetID: b, Type: fmt.Sprintf("S%d", step),
				Provenance: memory.Provenance{Confidence: 1}})
			facts = append(facts, f.ID)
		case 6:
			f := facts[r.IntN(len(facts))]
			what = fmt.Sprint("retire ", f)
			_, err = g.RetireFact(ctx, f, "")
		case 7:
			f := facts[r.IntN(len(facts))]
			what = fmt.Sprint("reject fact ", f)
			_, err = g.RejectFact(ctx, f)
		}
		if err != nil {
			t.Logf("step %d %s: %v (skipped)", step, what, err)
			err = nil
			continue
		}
		check(fmt.Sprintf("step %d (%s)", step, what))
		if latest.Load().refreshed {
			refreshed++
		}
	}
	close(stop)
	wg.Wait()
	if refreshed < 20 {
		t.Fatalf("only %d of the snapshots were refreshed rather than loaded: the test shows little", refreshed)
	}
	for i, o := range olds {
		if got := o.sn.data(); !reflect.DeepEqual(got, o.data) {
			t.Errorf("snapshot %d changed after it was served (%d -> %d entities, %d -> %d facts, %d -> %d ends)", i,
				len(o.data.Entities), len(got.Entities), len(o.data.Facts), len(got.Facts), len(o.data.ByEntity), len(got.ByEntity))
		}
	}
}
