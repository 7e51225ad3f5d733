package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// TestCachedViewsAreBounded: a snapshot keeps encoded views up to
// maxCachedBytes together and maxCachedViews in number, and never one
// larger than the byte bound.
func TestCachedViewsAreBounded(t *testing.T) {
	sn := &snapshot{json: map[string][]byte{}}
	big := make([]byte, maxCachedBytes/2+1)
	sn.storeJSON("a", big)
	sn.storeJSON("b", big) // a and b would exceed the bound: a goes
	if _, ok := sn.cachedJSON("a"); ok {
		t.Error("two views over the byte bound are both kept")
	}
	if _, ok := sn.cachedJSON("b"); !ok {
		t.Error("the view just stored is not kept")
	}
	sn.storeJSON("huge", make([]byte, maxCachedBytes+1))
	if _, ok := sn.cachedJSON("huge"); ok || sn.jsonBytes != 0 {
		t.Errorf("a view over the bound is kept (%d bytes held)", sn.jsonBytes)
	}
	for i := range maxCachedViews + 1 {
		sn.storeJSON(string(rune('A'+i)), []byte("{}"))
	}
	if len(sn.json) > maxCachedViews {
		t.Errorf("%d views kept, bound %d", len(sn.json), maxCachedViews)
	}
}

// TestFoundListsAreBounded: the graph search's filtered lists a snapshot
// keeps are bounded in number, empty ones too (a filter naming a type that
// does not exist lists nothing), and in the entities they hold.
func TestFoundListsAreBounded(t *testing.T) {
	sn := &snapshot{}
	for i := range 10 * maxCachedViews {
		if _, err := sn.filtered(fmt.Sprintf("type %d", i), func() ([]graphNode, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		if len(sn.found) > maxCachedViews {
			t.Fatalf("%d empty lists kept, bound %d", len(sn.found), maxCachedViews)
		}
	}
	big := make([]graphNode, maxFoundRows/2)
	for i := range 4 {
		if _, err := sn.filtered(fmt.Sprintf("big %d", i), func() ([]graphNode, error) { return big, nil }); err != nil {
			t.Fatal(err)
		}
		if sn.foundRows > maxFoundRows {
			t.Fatalf("%d entities kept, bound %d", sn.foundRows, maxFoundRows)
		}
	}
	// A list is made once and served from the cache after.
	made := 0
	for range 3 {
		if _, err := sn.filtered("again", func() ([]graphNode, error) { made++; return big[:1], nil }); err != nil {
			t.Fatal(err)
		}
	}
	if made != 1 {
		t.Errorf("the list was made %d times", made)
	}
}

// TestSnapshotAroundIsTheCutWholeView: the view around an entity read
// from the snapshot's index (snapshot.around) is the whole view cut by
// graphData.around, and snapshot.hub its hub, for every focus and depth of
// random graphs holding what the whole view leaves out: rejected facts,
// facts to entities the viewer does not hold, self-loops, secrets, ties
// of degree, names that differ only in case.
func TestSnapshotAroundIsTheCutWholeView(t *testing.T) {
	for seed := range uint64(20) {
		sn := randomSnapshot(rand.New(rand.NewPCG(seed, 1)))
		for _, dm := range []bool{true, false} {
			whole, err := loadGraph(context.Background(), nil, sn, dm, "", "", "")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sn.hub(), whole.hub(); got != want {
				t.Errorf("seed %d: hub %q, the whole view's %q", seed, got, want)
			}
			// "nobody": an entity the snapshot does not hold (the handler
			// answers not found first): no node, not a nil entity.
			for _, id := range append(entityIDs(sn), "nobody") {
				for depth := 1; depth <= maxDepth; depth++ {
					got, _ := json.Marshal(sn.around(id, depth, dm))
					want, _ := json.Marshal(whole.around(id, depth))
					if string(got) != string(want) {
						t.Fatalf("seed %d, dm %t, %d steps around %s:\n got %s\nwant %s", seed, dm, depth, id, got, want)
					}
				}
			}
		}
	}
}

// randomSnapshot is a snapshot of a random graph holding what the whole
// view leaves out: rejected facts, facts to entities the viewer does not
// hold, self-loops, secrets, ties of degree, names that differ only in
// case.
func randomSnapshot(r *rand.Rand) *snapshot {
	nEnts := 5 + r.IntN(40)
	ents := make([]memory.Entity, nEnts)
	for i := range ents {
		name := fmt.Sprintf("%c%d", 'a'+rune(r.IntN(3)), r.IntN(5))
		if r.IntN(2) == 0 {
			name = strings.ToUpper(name)
		}
		ents[i] = memory.Entity{ID: fmt.Sprintf("e%02d", i), Name: name, Type: []string{"npc", "location"}[r.IntN(2)]}
	}
	facts := make([]access.FactWithNames, r.IntN(4*nEnts))
	for i := range facts {
		facts[i] = access.FactWithNames{Relationship: randomFact(r, nEnts, int64(1000-i))}
	}
	return indexSnapshot(ents, facts)
}

func randomFact(r *rand.Rand, nEnts int, id int64) memory.Relationship {
	statuses := []memory.FactStatus{memory.StatusActive, memory.StatusActive, memory.StatusPending, memory.StatusRetired, memory.StatusRejected}
	end := func() string { return fmt.Sprintf("e%02d", r.IntN(nEnts+3)) } // a few not held
	f := memory.Relationship{ID: id, SourceID: end(), TargetID: end(), Type: "KNOWS",
		Status: statuses[r.IntN(len(statuses))], UpdatedAt: time.Unix(5000+id, 0)}
	if r.IntN(4) == 0 {
		f.Attributes = map[string]any{"secret": true}
	}
	return f
}

// indexSnapshot is a snapshot of ents and facts, indexed as loadSnapshot
// indexes them.
func indexSnapshot(ents []memory.Entity, facts []access.FactWithNames) *snapshot {
	sn := &snapshot{entities: sortedByName(ents), facts: pointers(facts)}
	slices.SortFunc(sn.facts, newestFirst)
	sn.index()
	return sn
}

// TestNextHubIsTheHub: the hub a refresh carries over (nextHub, told the
// entities whose facts or selves changed) is the hub found from every
// fact, whatever the changes: facts added, removed or changed in status,
// entities added and removed, the hub among them or not.
func TestNextHubIsTheHub(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 2))
		old := randomSnapshot(r)
		old.hub()
		ents := make([]memory.Entity, 0, len(old.entities)+2)
		touched := map[string]bool{}
		for _, e := range old.entities {
			if r.IntN(15) == 0 {
				touched[e.ID] = true // deleted
				continue
			}
			ents = append(ents, *e)
		}
		for i := range r.IntN(3) {
			id := fmt.Sprintf("e%02d", len(old.entities)+i) // one an old fact may already name
			if old.byID.get(id) == nil {
				ents = append(ents, memory.Entity{ID: id, Name: "new", Type: "npc"})
				touched[id] = true
			}
		}
		var facts []access.FactWithNames
		for _, f := range old.facts {
			switch r.IntN(10) {
			case 0: // removed
				touched[f.SourceID], touched[f.TargetID] = true, true
				continue
			case 1: // its status changed
				g := f.Relationship
				g.Status = []memory.FactStatus{memory.StatusActive, memory.StatusRejected}[r.IntN(2)]
				touched[f.SourceID], touched[f.TargetID] = true, true
				facts = append(facts, access.FactWithNames{Relationship: g})
				continue
			}
			if touched[f.SourceID] || touched[f.TargetID] { // an end deleted or added: read again
				touched[f.SourceID], touched[f.TargetID] = true, true
			}
			facts = append(facts, *f)
		}
		for i := range r.IntN(6) {
			f := randomFact(r, len(old.entities), int64(2000+i))
			touched[f.SourceID], touched[f.TargetID] = true, true
			facts = append(facts, access.FactWithNames{Relationship: f})
		}
		sn := indexSnapshot(ents, facts)
		sn.nextHub(old, maps.Keys(touched))
		carried := sn.hubDone.Load()
		got := sn.hub()
		if want := indexSnapshot(ents, facts).hub(); got != want {
			t.Fatalf("seed %d: the hub carried over (%t) from %s is %s, found from every fact %s; touched %v",
				seed, carried, old.hub(), got, want, touched)
		}
	}
}

// TestMergeSortedIsSortAndFilter: merging is the same as dropping,
// appending and sorting, for random lists, drops and additions (an added
// element may equal a dropped one: a fact read again unchanged), and it
// allocates the result once, at its length.
func TestMergeSortedIsSortAndFilter(t *testing.T) {
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 3))
		var sorted []int
		for v := 0; len(sorted) < r.IntN(60); v += 1 + r.IntN(3) {
			sorted = append(sorted, 2*v)
		}
		dropped := map[int]bool{}
		for _, v := range sorted {
			if r.IntN(5) == 0 {
				dropped[v] = true
			}
		}
		var add []int
		for range r.IntN(8) {
			v := 2 * r.IntN(200)
			if slices.Contains(sorted, v) && !dropped[v] {
				v++ // not equal to a kept element
			}
			if !slices.Contains(add, v) {
				add = append(add, v)
			}
		}
		slices.Sort(add)
		var want []int
		for _, v := range sorted {
			if !dropped[v] {
				want = append(want, v)
			}
		}
		want = append(want, add...)
		slices.Sort(want)
		got := mergeSorted(sorted, func(v int) bool { return dropped[v] }, add, cmp.Compare[int])
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: merging %v less %v with %v gave %v, want %v", seed, sorted, dropped, add, got, want)
		}
		if cap(got) != len(got) {
			t.Fatalf("seed %d: the result has capacity %d for %d elements", seed, cap(got), len(got))
		}
	}
}

// entityIDs are the ids of the entities sn holds.
func entityIDs(sn *snapshot) []string {
	ids := make([]string, 0, len(sn.entities))
	for _, e := range sn.entities {
		ids = append(ids, e.ID)
	}
	return ids
}
