package console_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// TestSnapshotRefreshIsALoad: after each kind of change the graph takes,
// the snapshot the console brings up to date from the change log holds
// exactly what loading the graph again reads, for the DM, a player bound
// to their user id and "any player": the same entities and facts, with
// the same attributes, names and order. The changes are those the log
// names (an entity added, renamed, retired, deleted or merged away; a fact
// added, confirmed, rejected, made secret or deleted) and those it names
// only through an entity: one first heard in a split scene, hidden from a
// player with its facts, which the DM then publishes (its facts show,
// though their rows did not change).
//
// Run again with snapshots that hold only the newest 8 facts (the sample
// campaign has more): a change that takes a fact out of a full snapshot
// has it loaded again (the next older fact is not in it), and the others
// keep it to the newest 8.
func TestSnapshotRefreshIsALoad(t *testing.T) {
	t.Parallel()
	t.Run("whole", func(t *testing.T) { t.Parallel(); testSnapshotRefresh(t, 0) })
	t.Run("newest 8 facts", func(t *testing.T) { t.Parallel(); testSnapshotRefresh(t, 8) })
}

func testSnapshotRefresh(t *testing.T, maxFacts int) {
	f := newFixture(t)
	if maxFacts > 0 {
		f.console.SetSnapshotFacts(maxFacts)
	}
	ctx := context.Background()
	g := f.camp.Graph()
	pia, err := f.door.Open(ctx, campaign, memory.PlayerViewerOf(player.UserID))
	if err != nil {
		t.Fatal(err)
	}
	anyPlayer, err := f.door.Open(ctx, campaign, memory.PlayerViewer())
	if err != nil {
		t.Fatal(err)
	}
	viewers := []*access.Campaign{f.camp, pia, anyPlayer}
	refreshed := map[string]int{}
	check := func(step string, wantRefresh bool) {
		t.Helper()
		for _, v := range viewers {
			served, loaded, err := f.console.Snapshot(ctx, v)
			if err != nil {
				t.Fatalf("%s, %s: %v", step, v.Viewer(), err)
			}
			if served.Refreshed {
				refreshed[step]++
			}
			if wantRefresh && maxFacts == 0 && !served.Refreshed {
				t.Errorf("%s, %s: the snapshot was loaded again, not refreshed", step, v.Viewer())
			}
			if d := firstDiff(served.Entities, loaded.Entities); d != "" {
				t.Errorf("%s, %s: entities: %s", step, v.Viewer(), d)
			}
			if d := firstDiff(served.Facts, loaded.Facts); d != "" {
				t.Errorf("%s, %s: facts: %s", step, v.Viewer(), d)
			}
			if !reflect.DeepEqual(served.ByID, loaded.ByID) {
				t.Errorf("%s, %s: the entities by id differ from a load's", step, v.Viewer())
			}
			if !reflect.DeepEqual(served.ByEntity, loaded.ByEntity) {
				t.Errorf("%s, %s: the facts by entity differ from a load's:\n%v\nwant\n%v", step, v.Viewer(), served.ByEntity, loaded.ByEntity)
			}
		}
	}
	check("first load", false)

	start := time.Date(2026, 3, 20, 19, 0, 0, 0, time.UTC)
	otto := "300000000000000004"
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{
		{0, []string{player.UserID, otto}, false},
		{time.Minute, []string{otto}, true},
	} {
		if err := f.camp.Sessions().RecordPresence(ctx, "split", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "split", SpeakerID: dmUser, SpeakerName: "Lis",
		Text: "Otto alone meets the Veiled Abbess in the crypt.", At: start.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	lines, err := f.camp.Sessions().Entries(ctx, "split")
	if err != nil || len(lines) != 1 {
		t.Fatalf("the split scene's line: %v %v", lines, err)
	}
	line := lines[0]
	var secretFact, pendingID int64
	addConfirmed := func(r memory.Relationship) error {
		r, err := g.UpsertRelationship(ctx, r)
		if err != nil {
			return err
		}
		_, err = g.ConfirmFact(ctx, r.ID)
		return err
	}
	// piaSees reports whether Pia's snapshot holds a fact of type typ.
	piaSees := func(typ string) bool {
		t.Helper()
		served, _, err := f.console.Snapshot(ctx, pia)
		if err != nil {
			t.Fatal(err)
		}
		for _, fa := range served.Facts {
			if fa.Type == typ {
				return true
			}
		}
		return false
	}
	// Each step says which of Orla's and the Abbess's facts Pia sees
	// after it (FENCES_FOR, TUTORS), so that the comparisons check what a
	// player may not see.
	steps := []struct {
		name           string
		do             func() error
		knows, teaches bool
	}{
		{"an entity and its fact added", func() error {
			if err := g.UpsertEntity(ctx, memory.Entity{ID: "orla", Type: memory.EntityNPC, Name: "Orla Quickfingers",
				Attributes: map[string]any{"occupation": "fence", "secret_boss": "Vexa"}}); err != nil {
				return err
			}
			return addConfirmed(memory.Relationship{SourceID: "orla", TargetID: "grimjaw", Type: "FENCES_FOR"})
		}, true, false},
		{"an entity renamed", func() error {
			name := "Grimjaw the Elder"
			_, err := g.UpdateEntity(ctx, "grimjaw", memory.EntityUpdate{Name: &name})
			return err
		}, true, false},
		{"a fact made secret", func() error {
			fs, err := g.FindFacts(ctx, access.FactQuery{EntityIDs: []string{"orla"}, Limit: 1})
			if err != nil || len(fs) != 1 {
				return fmt.Errorf("orla's fact: %v %v", fs, err)
			}
			fact := fs[0].Relationship
			secretFact = fact.ID
			fact.Attributes = map[string]any{"secret": true}
			_, err = g.UpsertRelationship(ctx, fact)
			return err
		}, false, false},
		{"a fact confirmed", func() error {
			pendingID = pendingFact(t, g).ID
			_, err := g.ConfirmFact(ctx, pendingID)
			return err
		}, false, false},
		{"a fact rejected", func() error {
			ps, err := g.PendingFacts(ctx, memory.FactFilter{})
			if err != nil || len(ps) == 0 {
				return fmt.Errorf("pending facts: %v %v", ps, err)
			}
			_, err = g.RejectFact(ctx, ps[0].ID)
			return err
		}, false, false},
		{"a fact retired", func() error {
			_, err := g.RetireFact(ctx, secretFact, "s2")
			return err
		}, false, false},
		{"an entity retired", func() error {
			_, err := g.RetireEntity(ctx, "brannoc", "s2", "left town")
			return err
		}, false, false},
		{"an entity heard in a split scene, with a fact", func() error {
			if err := g.AddSceneEntity(ctx, memory.Entity{ID: "veiled-abbess", Type: memory.EntityNPC, Name: "Veiled Abbess"},
				[]int64{line.ID}); err != nil {
				return err
			}
			return addConfirmed(memory.Relationship{SourceID: "veiled-abbess", TargetID: "elara", Type: "TUTORS"})
		}, false, false},
		{"the split scene's entity published", func() error {
			_, err := g.PublishEntity(ctx, "veiled-abbess")
			return err
		}, false, true},
		{"an entity merged away", func() error {
			_, err := g.MergeEntities(ctx, "orla", "vexa", "s2")
			return err
		}, false, true},
		{"an entity deleted", func() error { return g.DeleteEntity(ctx, "veiled-abbess") }, false, false},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		check(st.name, true)
		if k, te := piaSees("FENCES_FOR"), piaSees("TUTORS"); k != st.knows || te != st.teaches {
			t.Errorf("after %s Pia sees FENCES_FOR %t and TUTORS %t, want %t and %t", st.name, k, te, st.knows, st.teaches)
		}
	}
	if maxFacts > 0 {
		// Both ways were taken: the steps that only add to the newest
		// facts or change what the snapshot holds are refreshed, those
		// that take a fact out of it are loaded.
		some, all := 0, 0
		for _, st := range steps {
			some += min(refreshed[st.name], 1)
			all += refreshed[st.name] / len(viewers)
		}
		if some == 0 || all == len(steps) {
			t.Errorf("of %d steps, %d refreshed a snapshot and %d every snapshot: %v", len(steps), some, all, refreshed)
		}
		if served, _, err := f.console.Snapshot(ctx, f.camp); err != nil || len(served.Facts) != maxFacts {
			t.Errorf("the DM's snapshot holds %d facts, want %d: %v", len(served.Facts), maxFacts, err)
		}
	}
	// More changes than a refresh follows: loaded again, and the same.
	for i := range 600 {
		if err := g.UpsertEntity(ctx, memory.Entity{ID: fmt.Sprintf("extra-%03d", i), Type: memory.EntityItem,
			Name: fmt.Sprintf("Trinket %03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	check("600 entities added", false)
	if refreshed["600 entities added"] != 0 {
		t.Errorf("600 changes refreshed %d snapshots, want each loaded again", refreshed["600 entities added"])
	}
}

// firstDiff describes the first difference of two lists, or "".
func firstDiff[T any](got, want []T) string {
	for i := range min(len(got), len(want)) {
		if !reflect.DeepEqual(got[i], want[i]) {
			return fmt.Sprintf("#%d is %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d, want %d", len(got), len(want))
	}
	return ""
}

// TestSnapshotsAreBounded: the snapshots of all viewers together hold at
// most the console's bound of rows; past it the least recently read are
// dropped, and a viewer whose snapshot was dropped gets it loaded again,
// whole.
func TestSnapshotsAreBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	open := func(v memory.Viewer) *access.Campaign {
		c, err := f.door.Open(ctx, campaign, v)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	dm, pia, anyPlayer := f.camp, open(memory.PlayerViewerOf(player.UserID)), open(memory.PlayerViewer())
	rows := map[*access.Campaign]int{}
	read := func(c *access.Campaign) console.SnapshotData {
		t.Helper()
		served, loaded, err := f.console.Snapshot(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if d := firstDiff(served.Facts, loaded.Facts); d != "" {
			t.Errorf("%s: facts: %s", c.Viewer(), d)
		}
		rows[c] = len(served.Entities) + len(served.Facts)
		return served
	}
	read(dm)
	read(pia)
	// Room for these two, not for a third.
	f.console.SetSnapshotRows(rows[dm] + rows[pia])
	read(anyPlayer)
	held := func(want ...string) {
		t.Helper()
		if got := f.console.SnapshotsHeld(); !slices.Equal(got, want) {
			t.Errorf("snapshots held: %q, want %q", got, want)
		}
	}
	if rows[anyPlayer] > rows[dm] {
		t.Fatalf("the test needs the DM's snapshot (%d rows) at least as large as a player's (%d)", rows[dm], rows[anyPlayer])
	}
	held("player ", "player "+player.UserID) // the DM's, read first, went
	read(dm)
	held("dm ", "player ") // then Pia's
	if !slices.ContainsFunc(read(pia).Entities, func(e memory.Entity) bool { return e.ID == "grimjaw" }) {
		t.Error("Pia's snapshot, loaded again, lacks Grimjaw")
	}
	held("dm ", "player "+player.UserID)
}

// TestSnapshotSeesLateCommits: a long transaction writes an entity and
// stays open; a short one writes another and commits; the console reads.
// When the long one commits, its change's id is below the console's
// cursor and no later write moves the cursor: the next read must still
// show its entity.
func TestSnapshotSeesLateCommits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	has := func(id string) bool {
		t.Helper()
		served, loaded, err := f.console.Snapshot(ctx, f.camp)
		if err != nil {
			t.Fatal(err)
		}
		if d := firstDiff(served.Entities, loaded.Entities); d != "" {
			t.Errorf("entities: %s", d)
		}
		return slices.ContainsFunc(served.Entities, func(e memory.Entity) bool { return e.ID == id })
	}
	has("grimjaw") // the first load
	wrote, release, done := make(chan struct{}), make(chan struct{}), make(chan error)
	go func() {
		done <- f.camp.InTx(ctx, "extraction", func(tc *access.Campaign) error {
			if err := tc.Graph().UpsertEntity(ctx, memory.Entity{ID: "latecomer", Type: memory.EntityNPC, Name: "Latecomer"}); err != nil {
				return err
			}
			close(wrote)
			<-release
			return nil
		})
	}()
	<-wrote
	if err := f.camp.Graph().UpsertEntity(ctx, memory.Entity{ID: "early", Type: memory.EntityNPC, Name: "Early Bird"}); err != nil {
		t.Fatal(err)
	}
	if !has("early") || has("latecomer") {
		t.Fatal("while the long transaction runs the snapshot does not hold the short one's entity alone")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !has("latecomer") {
		t.Error("the snapshot stepped over an entity committed after a later change id")
	}
}
