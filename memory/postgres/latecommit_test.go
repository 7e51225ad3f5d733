package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestLateCommitsAreNotSteppedOver: a long transaction (extraction writing
// a session's facts) takes a change id, a short one (a DM's confirm)
// takes the next and commits first, and a reader of the change log reads
// then. When the long one commits, its change has an id below the
// reader's cursor: the retrieval graph's refresh (GraphChanges) and the
// caches' (ChangesAfter) must still report it, once the transaction has
// ended, and not before. The same holds for the chunk links each writes
// (the graph's mention edges).
func TestLateCommitsAreNotSteppedOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	g := camp.Graph()
	for _, e := range []memory.Entity{{ID: "ada", Type: memory.EntityNPC, Name: "Ada"}, {ID: "bo", Type: memory.EntityNPC, Name: "Bo"},
		{ID: "cy", Type: memory.EntityNPC, Name: "Cy"}, {ID: "dee", Type: memory.EntityNPC, Name: "Dee"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := camp.Index().IndexChunks(ctx, []memory.Chunk{{ID: "early", SessionID: "s2", Content: "Dee", EntityIDs: []string{"dee"}}}); err != nil {
		t.Fatal(err)
	}
	graphCur := must[postgres.GraphCursor](t)(camp.LoadGraph(ctx, func(postgres.GraphEdge) error { return nil }))
	cacheCur := must[postgres.ChangeCursor](t)(camp.Cursor(ctx))

	var late int64
	commit := longTx(t, s, "camp", func(tc *postgres.Campaign) error {
		r, err := tc.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "ada", TargetID: "bo", Type: "OWES",
			Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1}})
		late = r.ID
		if err != nil {
			return err
		}
		return tc.Index().IndexChunks(ctx, []memory.Chunk{{ID: "late", SessionID: "s1", Content: "Ada", EntityIDs: []string{"ada"}}})
	})
	early := must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "bo", TargetID: "cy", Type: "KNOWS",
		Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1}}))
	// Chunk writes wait on each other (the full-text statistics), not a
	// merge, which moves a chunk's links.
	if _, err := g.MergeEntities(ctx, "dee", "cy", ""); err != nil {
		t.Fatal(err)
	}

	var linked []string // the chunks the last graphFacts read links of
	graphFacts := func() []int64 {
		t.Helper()
		var ids []int64
		linked = nil
		next, err := camp.GraphChanges(ctx, graphCur, func(e postgres.GraphEdge) error {
			if e.Kind == postgres.EdgeFact && !e.Removed {
				ids = append(ids, e.FactID)
			}
			if e.Kind == postgres.EdgeMention && !e.Removed {
				linked = append(linked, e.To)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		graphCur = next
		return ids
	}
	cacheFacts := func() []int64 {
		t.Helper()
		chs, next, err := camp.ChangesAfter(ctx, cacheCur, 100)
		if err != nil {
			t.Fatal(err)
		}
		cacheCur = next
		var ids []int64
		for _, ch := range chs {
			if ch.Kind == "fact" {
				ids = append(ids, must[int64](t)(strconv.ParseInt(ch.Ref, 10, 64)))
			}
		}
		return ids
	}
	// The long transaction still runs: the short one's fact is read.
	if got := graphFacts(); !slices.Contains(got, early.ID) || slices.Contains(got, late) {
		t.Fatalf("the graph's refresh while the long transaction runs: %v, want %d and not %d", got, early.ID, late)
	}
	if !slices.Equal(linked, []string{"early"}) {
		t.Fatalf("the graph's refresh while the long transaction runs read the links of %v, want [early]", linked)
	}
	if got := cacheFacts(); !slices.Contains(got, early.ID) || slices.Contains(got, late) {
		t.Fatalf("the cache's refresh while the long transaction runs: %v, want %d and not %d", got, early.ID, late)
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	if graphCur.Change <= late || cacheCur.ID <= late {
		t.Fatalf("the cursors (%d, %d) are not past the late change's fact %d: the test shows nothing", graphCur.Change, cacheCur.ID, late)
	}
	// Committed now, below both cursors: read all the same, once.
	if graphCur.Chunk == 0 {
		t.Fatal("the graph's cursor has read no chunk change: the test shows nothing")
	}
	if got := graphFacts(); !slices.Contains(got, late) {
		t.Errorf("the graph's refresh stepped over fact %d, committed late: %v", late, got)
	}
	if !slices.Equal(linked, []string{"late"}) {
		t.Errorf("the graph's refresh after the late commit read the links of %v, want [late]", linked)
	}
	if got := cacheFacts(); !slices.Contains(got, late) {
		t.Errorf("the cache's refresh stepped over fact %d, committed late: %v", late, got)
	}
	if got := graphFacts(); len(got) != 0 || len(linked) != 0 {
		t.Errorf("the graph's refresh with nothing new: facts %v, chunks %v", got, linked)
	}
	if got := cacheFacts(); len(got) != 0 {
		t.Errorf("the cache's refresh with nothing new: %v", got)
	}
	// A player's handle may not read the raw log.
	player := must[*postgres.Campaign](t)(camp.As(memory.PlayerViewer()))
	if _, _, err := player.ChangesAfter(ctx, cacheCur, 10); err == nil {
		t.Error("a player's handle read the change log for caches")
	}
}

// TestEntityChangesSeeLateCommits: retrieval's name index (the names a
// question is matched against) reloads when an entity changes. An entity
// written by a long transaction (extraction adding the session's new
// people) that commits after a DM's edit has an id below the edit's: read
// by the newest id alone, it was never loaded until the next entity
// change, and questions naming it found no entity.
func TestEntityChangesSeeLateCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	g := camp.Graph()
	if err := g.UpsertEntity(ctx, memory.Entity{ID: "ada", Type: memory.EntityNPC, Name: "Ada"}); err != nil {
		t.Fatal(err)
	}
	changed, cur, err := camp.EntityChanges(ctx, postgres.ChangeCursor{})
	if err != nil || !changed {
		t.Fatalf("the first read: changed %v (%v), want true", changed, err)
	}
	check := func(what string, want bool) {
		t.Helper()
		changed, next, err := camp.EntityChanges(ctx, cur)
		if err != nil {
			t.Fatal(err)
		}
		if changed != want {
			t.Errorf("%s: changed %v, want %v", what, changed, want)
		}
		cur = next
	}
	check("nothing written", false)

	commit := longTx(t, s, "camp", func(tc *postgres.Campaign) error {
		return tc.Graph().UpsertEntity(ctx, memory.Entity{ID: "vesper", Type: memory.EntityNPC, Name: "Vesper"})
	})
	if err := g.UpsertEntity(ctx, memory.Entity{ID: "bo", Type: memory.EntityNPC, Name: "Bo"}); err != nil {
		t.Fatal(err)
	}
	check("the short transaction's entity", true)
	must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "ada", TargetID: "bo", Type: "KNOWS",
		Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1}}))
	check("a fact alone", false)
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	check("the long transaction's entity, committed late below the cursor", true)
	check("nothing new", false)
}

// longTx runs write in a transaction of campaign that stays open, its
// changes written and not committed, until commit is called: a long
// transaction (extraction writing a session's facts). commit returns the
// transaction's error; a test that ends without calling it commits at
// cleanup.
func longTx(t *testing.T, s *postgres.Store, campaign string, write func(*postgres.Campaign) error) (commit func() error) {
	t.Helper()
	wrote, release, done := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- s.InTx(context.Background(), campaign, func(tc *postgres.Campaign) error {
			err := write(tc)
			wrote <- err
			if err != nil {
				return err
			}
			<-release
			return nil
		})
	}()
	if err := <-wrote; err != nil {
		t.Fatalf("the long transaction's write: %v", err)
	}
	var once sync.Once
	var err error
	commit = func() error {
		once.Do(func() {
			close(release)
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { commit() })
	return commit
}
