package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSyncCursorSeesLateCommits: an agent's MCP sync holds a number (the
// cursor ChangesSince returns) and the continuity checker holds
// LastChange. A long transaction (extraction writing a session's
// entities) takes a change id, a short one (a DM's edit) takes the next
// and commits first, and a reader reads then. Counted by ids, the long
// one's change, committed below the cursor, was never listed, and
// LastChange did not move when it committed.
func TestSyncCursorSeesLateCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	g := camp.Graph()
	cursor := must[int64](t)(camp.LastChange(ctx))

	commit := longTx(t, s, "camp", func(tc *postgres.Campaign) error {
		return tc.Graph().UpsertEntity(ctx, memory.Entity{ID: "vesper", Type: memory.EntityNPC, Name: "Vesper"})
	})
	if err := g.UpsertEntity(ctx, memory.Entity{ID: "bo", Type: memory.EntityNPC, Name: "Bo"}); err != nil {
		t.Fatal(err)
	}
	read := func() []string {
		t.Helper()
		chs, next, err := camp.ChangesSince(ctx, cursor, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		cursor = next
		var refs []string
		for _, ch := range chs {
			refs = append(refs, ch.Ref)
		}
		return refs
	}
	if got := read(); !slices.Equal(got, []string{"bo"}) {
		t.Fatalf("while the long transaction runs: %v, want [bo]", got)
	}
	last := must[int64](t)(camp.LastChange(ctx))
	if last != cursor {
		t.Fatalf("LastChange %d, the sync's cursor %d: want the same", last, cursor)
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	var lateID, boID int64
	for _, ch := range changesSince(t, camp, 0, 0) {
		switch ch.Ref {
		case "vesper":
			lateID = ch.ID
		case "bo":
			boID = ch.ID
		}
	}
	if lateID == 0 || lateID > boID {
		t.Fatalf("the long transaction's change id %d, the short one's %d: want it lower, or the test shows nothing", lateID, boID)
	}
	if got := must[int64](t)(camp.LastChange(ctx)); got <= last {
		t.Errorf("LastChange stayed %d when a change committed late (was %d): the continuity checker would not reload", got, last)
	}
	if got := read(); !slices.Equal(got, []string{"vesper"}) {
		t.Errorf("after the long transaction's commit: %v, want [vesper], committed below the cursor", got)
	}
	if got := read(); len(got) != 0 {
		t.Errorf("with nothing new: %v", got)
	}
}

// TestSyncCursorListsEachChangeOnce: writers whose transactions overlap
// (so that changes commit out of id order) and readers that page through
// the log by the cursor ChangesSince returns, small pages, all at once:
// every reader lists every committed change exactly once, and none of a
// rolled-back transaction's.
func TestSyncCursorListsEachChangeOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	const writers, txs, readers = 4, 15, 3
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range txs {
				rollback := i%5 == 4
				err := s.InTx(ctx, "camp", func(tc *postgres.Campaign) error {
					for j := range 1 + rng.IntN(3) {
						id := fmt.Sprintf("w%d-t%d-e%d", w, i, j)
						if err := tc.Graph().UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id}); err != nil {
							return err
						}
					}
					if rollback {
						return errRollback
					}
					return nil
				})
				if err != nil && !(rollback && errors.Is(err, errRollback)) {
					t.Error(err)
					return
				}
			}
		}()
	}
	got := make([][]string, readers)
	var rg sync.WaitGroup
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			var cursor int64
			for final := false; ; {
				select {
				case <-done:
					final = true
				default:
				}
				for {
					chs, next, err := camp.ChangesSince(ctx, cursor, "", 3)
					if err != nil {
						t.Error(err)
						return
					}
					if next < cursor {
						t.Errorf("reader %d: the cursor went back from %d to %d", r, cursor, next)
					}
					cursor = next
					for _, ch := range chs {
						got[r] = append(got[r], ch.Ref)
					}
					if len(chs) < 3 {
						break
					}
				}
				if final {
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	rg.Wait()
	var want []string
	for w := range writers {
		for i := range txs {
			if i%5 == 4 {
				continue
			}
			for j := range 3 {
				want = append(want, fmt.Sprintf("w%d-t%d-e%d", w, i, j))
			}
		}
	}
	all := changesSince(t, camp, 0, 100000)
	var committed []string
	for _, ch := range all {
		committed = append(committed, ch.Ref)
	}
	slices.Sort(committed)
	for _, ref := range committed {
		if !slices.Contains(want, ref) {
			t.Fatalf("the log lists %s, from a rolled-back transaction", ref)
		}
	}
	if len(committed) < writers*txs*4/5 {
		t.Fatalf("the log lists %d changes, fewer than the %d committed transactions", len(committed), writers*txs*4/5)
	}
	for r, refs := range got {
		slices.Sort(refs)
		if !slices.Equal(refs, committed) {
			t.Errorf("reader %d listed %d changes, the log holds %d: missing %v, twice or more %v", r, len(refs), len(committed),
				missingFrom(committed, refs), repeated(refs))
		}
	}
}

var errRollback = errors.New("rolled back on purpose")

// missingFrom is what of want (sorted) got (sorted) lacks.
func missingFrom(want, got []string) []string {
	var out []string
	for _, w := range want {
		if _, ok := slices.BinarySearch(got, w); !ok {
			out = append(out, w)
		}
	}
	return out
}

// repeated is what sorted appears more than once in.
func repeated(sorted []string) []string {
	var out []string
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			out = append(out, sorted[i])
		}
	}
	return out
}

// TestChangePositionsUpgrade: a database from before migration 0044, its
// changes counted by id, and an assistant holding a cursor (the newest id
// it synced). After the upgrade the old changes stand at their ids, so the
// cursor means what it meant: nothing old is listed again, and what is
// written after the upgrade comes after it.
func TestChangePositionsUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, dsn := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, s, "camp")
	for _, id := range []string{"ada", "bo", "cy"} {
		if err := c.Graph().UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Back to the schema before 0044, the changes kept.
	if _, err := conn.Exec(ctx, `DROP FUNCTION glyphoxa_publish_changes(text, int);
		ALTER TABLE graph_changes DROP COLUMN pos; DROP SEQUENCE graph_changes_pos_seq;
		DELETE FROM schema_migrations WHERE version = 44`); err != nil {
		t.Fatal(err)
	}
	// A write rolled back before the upgrade took an id and left no row.
	if _, err := conn.Exec(ctx, `BEGIN; INSERT INTO graph_changes (campaign_id, kind, ref, op) VALUES ('camp', 'entity', 'gone', 'insert');
		ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	var taken int64 // every id taken before the upgrade
	if err := conn.QueryRow(ctx, `SELECT last_value FROM graph_changes_id_seq`).Scan(&taken); err != nil {
		t.Fatal(err)
	}
	var held int64 // the assistant's cursor: the newest id it synced
	if err := conn.QueryRow(ctx, `SELECT max(id) FROM graph_changes WHERE campaign_id = 'camp'`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	s2, err := postgres.NewStore(ctx, dsn, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	c2 := pgtest.Campaign(t, s2, "camp")
	all := changesSince(t, c2, 0, 0)
	for _, ch := range all {
		if ch.Pos != ch.ID {
			t.Errorf("the change %d (%s) stands at %d after the upgrade, want its id", ch.ID, ch.Ref, ch.Pos)
		}
	}
	if len(all) != 3 {
		t.Fatalf("after the upgrade the log lists %d changes, want the 3 written before", len(all))
	}
	if err := c2.Graph().UpsertEntity(ctx, memory.Entity{ID: "dee", Type: memory.EntityNPC, Name: "Dee"}); err != nil {
		t.Fatal(err)
	}
	chs, _, err := c2.ChangesSince(ctx, held, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != 1 || chs[0].Ref != "dee" {
		t.Fatalf("the cursor held from before the upgrade lists %v, want only dee's change", chs)
	}
	// An older process, still serving during a rolling upgrade, hands out
	// the newest id as its cursor: a change published after the upgrade
	// stands after every id taken before it.
	if chs[0].Pos <= taken {
		t.Errorf("the first change after the upgrade stands at %d, not after the ids taken before it (%d)", chs[0].Pos, taken)
	}
}
