package console

import (
	"context"
	"slices"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// OAuthStates is how many Discord sign-ins are in progress.
func (s *Server) OAuthStates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.states)
}

// Snapshot is the graph snapshot the console serves camp's viewer, and a
// full load of the same graph to compare it with.
func (s *Server) Snapshot(ctx context.Context, camp *access.Campaign) (served, loaded SnapshotData, err error) {
	sn, err := s.graphSnapshot(ctx, camp)
	if err != nil {
		return served, loaded, err
	}
	s.snaps.mu.Lock()
	maxFacts := s.snaps.maxFacts
	s.snaps.mu.Unlock()
	full, err := loadSnapshot(ctx, camp, sn.seen, maxFacts)
	if err != nil {
		return served, loaded, err
	}
	return sn.data(), full.data(), nil
}

// SnapshotData is what a snapshot holds, as values: its lists, its indexes
// (the facts of an entity by id), and whether it was brought up to date by
// a refresh rather than loaded.
type SnapshotData struct {
	Entities  []memory.Entity
	Facts     []access.FactWithNames
	ByID      map[string]memory.Entity
	ByEntity  map[string][]int64
	Refreshed bool
}

func (sn *snapshot) data() SnapshotData {
	d := SnapshotData{ByID: map[string]memory.Entity{}, ByEntity: map[string][]int64{}, Refreshed: sn.refreshed}
	for _, e := range sn.entities {
		d.Entities = append(d.Entities, *e)
	}
	for _, f := range sn.facts {
		d.Facts = append(d.Facts, *f)
	}
	for id, e := range sn.byID.all() {
		d.ByID[id] = *e
	}
	for id, fs := range sn.byEntity.all() {
		for _, f := range fs {
			d.ByEntity[id] = append(d.ByEntity[id], f.ID)
		}
	}
	return d
}

// SetSnapshotFacts bounds the facts a snapshot holds to the newest n (a
// test's small campaign fills a snapshot of a few).
func (s *Server) SetSnapshotFacts(n int) {
	s.snaps.mu.Lock()
	defer s.snaps.mu.Unlock()
	s.snaps.maxFacts = n
}

// SetSnapshotRows bounds the rows all snapshots hold together.
func (s *Server) SetSnapshotRows(n int) {
	s.snaps.mu.Lock()
	defer s.snaps.mu.Unlock()
	s.snaps.maxRows = n
}

// SnapshotsHeld are the viewers whose snapshots the console keeps.
func (s *Server) SnapshotsHeld() []string {
	s.snaps.mu.Lock()
	defer s.snaps.mu.Unlock()
	var out []string
	for k, c := range s.snaps.per {
		if c.rows > 0 {
			out = append(out, strings.Split(k, "\x00")[1]+" "+strings.Split(k, "\x00")[2])
		}
	}
	slices.Sort(out)
	return out
}
