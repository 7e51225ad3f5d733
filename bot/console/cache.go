package console

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// The graph pages read the whole knowledge graph of a campaign. Loading it
// costs far more than asking whether it changed: the change log's cursor
// (its newest id, which triggers move on every entity and fact write, and
// the transactions in progress, for a change committed after a newer one:
// access.ChangeCursor). So the console keeps
// one snapshot per campaign and viewer (the DM's and the players' views
// differ: the store filters a player's in SQL). When the log has moved, the
// snapshot is brought up to date with what the log names (refreshSnapshot):
// at the 100k bench scale a full load takes 2 s, and a DM's confirm, a
// fact extracted during play or an entity edited moves the log.

// snapshot is a campaign's knowledge graph as a viewer read it (as of its
// campaignSnap's cursor) and, for a player, the entities first heard in
// split scenes they saw then.
type snapshot struct {
	seen string
	// entities are ordered byName. Pointers, here and below: a refresh
	// copies the lists, 100,000 entries at the 100k bench scale, and
	// shares what did not change; nothing is written through them.
	entities []*memory.Entity
	byID     *shardMap[*memory.Entity]
	// facts are the newest maxFacts, whatever their status, with
	// the names of their ends, newestFirst; byEntity indexes them by both
	// ends, in the same order.
	facts    []*access.FactWithNames
	byEntity *shardMap[[]*access.FactWithNames]
	// json caches encoded graph views by their filter.
	mu        sync.Mutex
	json      map[string][]byte
	jsonBytes int
	// refreshed says it was brought up to date from an older snapshot
	// (refreshSnapshot), not loaded.
	refreshed bool
	// pickers are the choices the pages offer from the graph, made once.
	pickOnce sync.Once
	picks    pickers
	// hubID is the best-connected entity (snapshot.hub), found once, or
	// carried over by a refresh (nextHub); hubDone says it is known.
	hubOnce sync.Once
	hubID   string
	hubDone atomic.Bool
	// found caches the entities each filter of the graph page lets
	// through, for its search (snapshot.filtered).
	found     map[string][]graphNode
	foundRows int
}

// pickers are a snapshot's entity types and NPCs as form choices, made
// once per snapshot: rendering them with each page took most of its time
// in a large campaign (40,000 NPCs at the 100k bench scale: 50 to 60 ms of
// template execution per page), and they only change when the graph does.
// (Name fields elsewhere ask /api/names as the DM types.)
type pickers struct {
	// types are the entity types, sorted.
	types []string
	// npcOptions are the NPCs as <option value="id">name</option>, for
	// the graph page's "Seen by" choice.
	npcOptions template.HTML
}

// pickers returns the snapshot's form choices, making them on first use.
// Names and ids are escaped for an attribute and for text alike.
func (sn *snapshot) pickers() pickers {
	sn.pickOnce.Do(func() {
		types := map[string]bool{}
		var npcs strings.Builder
		for _, e := range sn.entities {
			types[e.Type] = true
			if e.Type == memory.EntityNPC {
				npcs.WriteString(`<option value="` + template.HTMLEscapeString(e.ID) + `">` + template.HTMLEscapeString(e.Name) + `</option>`)
			}
		}
		sn.picks.types = slices.Sorted(maps.Keys(types))
		sn.picks.npcOptions = template.HTML(npcs.String())
	})
	return sn.picks
}

// pickableSessions are the campaign's sessions for a page's session
// picker: ids and dates, oldest first, without the line counts
// SessionLog.Sessions adds (kept per session, but a player's reads the
// lines of the campaign's split scenes, on every page that offers the
// picker).
func pickableSessions(ctx context.Context, camp *access.Campaign) ([]memory.Session, error) {
	return camp.Sessions().Starts(ctx)
}

// maxSnapshotFacts bounds the facts a snapshot holds: the newest.
const maxSnapshotFacts = 100_000

// maxRefreshChanges is how many changes of the log a snapshot is brought up
// to date with; after more, it is loaded again.
const maxRefreshChanges = 500

// allStatuses are the fact statuses a snapshot holds: all of them.
var allStatuses = []memory.FactStatus{memory.StatusActive, memory.StatusPending, memory.StatusRetired, memory.StatusRejected}

// maxSnapshotRows bounds the entities and facts the snapshots of all
// campaigns and viewers hold together: each viewer has one (a player's
// holds what they may see), and at the 100k bench scale one holds 200,000
// rows in 132 MB of heap. The least recently used are dropped past it, so
// a console read by a DM and a few players of a large campaign keeps
// about 400 MB, not 132 MB more for every player who ever looked.
const maxSnapshotRows = 600_000

type snapshots struct {
	mu  sync.Mutex
	per map[string]*campaignSnap
	// maxFacts is maxSnapshotFacts and maxRows maxSnapshotRows (less in
	// tests).
	maxFacts, maxRows int
	// tick counts the reads, for the least recently used.
	tick int64
}

type campaignSnap struct {
	mu  sync.Mutex // held while loading, so concurrent readers load once
	cur *snapshot
	// cursor is how far cur has read the change log.
	cursor access.ChangeCursor
	// used is the tick of the last read and rows the entities and facts
	// of cur, both under snapshots.mu.
	used int64
	rows int
}

// keep records that key's snapshot holds rows, and drops the least
// recently used others while all hold more than maxRows. A snapshot
// dropped while a request still reads it stays whole for that request.
func (ss *snapshots) keep(key string, cs *campaignSnap, rows int) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.per[key] != cs {
		return // dropped while it loaded
	}
	cs.rows = rows
	total := 0
	for _, c := range ss.per {
		total += c.rows
	}
	for total > ss.maxRows {
		oldest := ""
		for k, c := range ss.per {
			if k != key && c.rows > 0 && (oldest == "" || c.used < ss.per[oldest].used) {
				oldest = k
			}
		}
		if oldest == "" {
			return // only this one: kept however large
		}
		total -= ss.per[oldest].rows
		delete(ss.per, oldest)
	}
}

// graphSnapshot returns the current snapshot of the campaign as its
// handle's viewer reads it, brought up to date when the graph changed.
func (s *Server) graphSnapshot(ctx context.Context, camp *access.Campaign) (*snapshot, error) {
	// The player's id too: a handle bound to one player reads the facts
	// and entities of the split scenes they were in, which no other
	// player's snapshot may hold (Viewer.String is "player" for all).
	key := camp.ID() + "\x00" + camp.Viewer().String() + "\x00" + camp.Viewer().PlayerID
	s.snaps.mu.Lock()
	cs, ok := s.snaps.per[key]
	if !ok {
		cs = &campaignSnap{}
		s.snaps.per[key] = cs
	}
	s.snaps.tick++
	cs.used = s.snaps.tick
	maxFacts := s.snaps.maxFacts
	s.snaps.mu.Unlock()

	// The campaign's change cursor, not the viewer's: a fact a player read
	// and the DM has made secret since moves no change the player may see
	// (LastChange), and the snapshot must lose it all the same.
	cursor, err := camp.Cursor(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the graph's change log: %w", err)
	}
	// What a player sees of entities first heard in split scenes changes
	// with lines and chunks too (a forget-me, a later window naming one),
	// which the change log does not follow: the snapshot is loaded again
	// when that set changed. (Empty, and cheap, for the DM and a campaign
	// never split.)
	seenIDs, err := camp.Graph().SceneEntitiesSeen(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the graph's scene entities: %w", err)
	}
	seen := strings.Join(seenIDs, "\x00")
	cs.mu.Lock()
	defer cs.mu.Unlock()
	old := cs.cur
	if old != nil && cs.cursor.Covers(cursor) && old.seen == seen {
		return old, nil
	}
	var sn *snapshot
	next := cursor
	if old != nil && old.seen == seen && cursor.ID >= cs.cursor.ID {
		if sn, next, err = s.refreshSnapshot(ctx, camp, old, cs.cursor, maxFacts); err != nil {
			return nil, err
		}
	}
	if sn == nil {
		// The cursor read before the graph: what is written meanwhile
		// comes again with the next refresh.
		if sn, err = loadSnapshot(ctx, camp, seen, maxFacts); err != nil {
			return nil, err
		}
		next = cursor
	}
	cs.cur, cs.cursor = sn, next
	s.snaps.keep(key, cs, len(sn.entities)+len(sn.facts))
	return sn, nil
}

// loadSnapshot reads the campaign's graph as camp's viewer sees it, its
// newest maxFacts facts.
func loadSnapshot(ctx context.Context, camp *access.Campaign, seen string, maxFacts int) (*snapshot, error) {
	g := camp.Graph()
	ents, err := g.FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return nil, err
	}
	facts, err := g.FindFacts(ctx, access.FactQuery{Limit: maxFacts, Statuses: allStatuses})
	if err != nil {
		return nil, err
	}
	sn := &snapshot{seen: seen, entities: sortedByName(ents), facts: pointers(facts), json: map[string][]byte{}}
	sn.index()
	return sn, nil
}

// index makes sn's indexes of its entities (byID) and facts (byEntity,
// sn.facts being newestFirst).
func (sn *snapshot) index() {
	sn.byID, sn.byEntity = newShardMap[*memory.Entity](), newShardMap[[]*access.FactWithNames]()
	for _, e := range sn.entities {
		sn.byID.set(e.ID, e)
	}
	for _, f := range sn.facts {
		sn.byEntity.set(f.SourceID, append(sn.byEntity.get(f.SourceID), f))
		if f.TargetID != f.SourceID {
			sn.byEntity.set(f.TargetID, append(sn.byEntity.get(f.TargetID), f))
		}
	}
}

// refreshSnapshot returns old, read as of cur, brought up to date with the
// changes it has not seen ([access.Campaign.ChangesAfter]: also those a
// transaction still running at cur has committed since, with ids below
// cur's), and the cursor after them; old itself when none concerns it; nil
// when it must be loaded again (more than maxRefreshChanges, or facts left
// a snapshot holding only the newest maxFacts: the older ones that would
// take their place are not in it).
//
// The log's entries are read through the DM's handle, server-side only:
// a player's log leaves out the changes of what they may not see, among
// them a fact they had read and that has been made secret since. What
// they name is then read again through camp's own handle, so the
// snapshot holds what a full load would: the changed entities as the
// viewer sees them (or not at all: deleted, retired, hidden from a
// player), the changed facts, and every fact of a changed entity (an
// entity renamed renames its facts' ends; one published or hidden shows
// or hides its facts, whose rows did not change). The rest is shared with
// old, and so are its indexes but for the keys the changes touch.
func (s *Server) refreshSnapshot(ctx context.Context, camp *access.Campaign, old *snapshot, cur access.ChangeCursor,
	maxFacts int) (*snapshot, access.ChangeCursor, error) {
	// The DM's own handle serves; a player's snapshot opens one (a write
	// to the campaigns table: not on every refresh of the DM's).
	dm := camp
	if !camp.DM() {
		var err error
		if dm, err = s.cfg.Door.Open(ctx, camp.ID(), memory.DMViewer()); err != nil {
			return nil, cur, err
		}
	}
	changes, next, err := dm.ChangesAfter(ctx, cur, maxRefreshChanges+1)
	if err != nil {
		return nil, cur, err
	}
	if len(changes) > maxRefreshChanges {
		return nil, cur, nil
	}
	var entIDs []string
	var factIDs []int64
	changedEnt := map[string]bool{}
	changedFact := map[int64]bool{}
	for _, ch := range changes {
		switch ch.Kind {
		case "entity":
			if !changedEnt[ch.Ref] {
				changedEnt[ch.Ref] = true
				entIDs = append(entIDs, ch.Ref)
			}
		case "fact":
			id, err := strconv.ParseInt(ch.Ref, 10, 64)
			if err != nil {
				return nil, cur, fmt.Errorf("change %d names fact %q: %w", ch.ID, ch.Ref, err)
			}
			if !changedFact[id] {
				changedFact[id] = true
				factIDs = append(factIDs, id)
			}
		}
	}
	if len(entIDs) == 0 && len(factIDs) == 0 {
		return old, next, nil // nothing it holds (proposals only, or none)
	}
	g := camp.Graph()
	var ents []memory.Entity
	var facts []access.FactWithNames
	if len(entIDs) > 0 {
		if ents, err = g.FindEntities(ctx, memory.EntityFilter{IDs: entIDs}); err != nil {
			return nil, cur, err
		}
		// Their newest maxFacts: any older one has maxFacts newer facts
		// before it, and is not among the snapshot's.
		if facts, err = g.FindFacts(ctx, access.FactQuery{EntityIDs: entIDs, Statuses: allStatuses, Limit: maxFacts}); err != nil {
			return nil, cur, err
		}
	}
	if len(factIDs) > 0 {
		more, err := g.FindFacts(ctx, access.FactQuery{IDs: factIDs, Statuses: allStatuses, Limit: len(factIDs)})
		if err != nil {
			return nil, cur, err
		}
		facts = append(facts, more...)
	}
	// The facts read again replace those the changes name, and those of
	// a changed entity.
	reread := make(map[int64]bool, len(facts))
	var fresh []*access.FactWithNames
	for i := range facts {
		if !reread[facts[i].ID] {
			reread[facts[i].ID] = true
			fresh = append(fresh, &facts[i])
		}
	}
	slices.SortFunc(fresh, newestFirst)
	// The facts to drop, by id: one lookup for each of the snapshot's
	// 100,000 facts (at the 100k bench scale), not one per reason.
	drop := make(map[int64]bool, len(changedFact)+len(reread))
	for id := range changedFact {
		drop[id] = true
	}
	for id := range reread {
		drop[id] = true
	}
	for id := range changedEnt {
		for _, f := range old.byEntity.get(id) {
			drop[f.ID] = true
		}
	}
	dropped := map[*access.FactWithNames]bool{}
	left := false
	newFacts := mergeSorted(old.facts, func(f *access.FactWithNames) bool {
		if !drop[f.ID] {
			return false
		}
		dropped[f] = true
		left = left || !reread[f.ID]
		return true
	}, fresh, newestFirst)
	if left && len(old.facts) == maxFacts {
		return nil, cur, nil // a fact left a full snapshot: the next older one is not in it
	}
	if len(newFacts) > maxFacts {
		for _, f := range newFacts[maxFacts:] {
			dropped[f] = true
		}
		newFacts = newFacts[:maxFacts:maxFacts]
	}
	added := sortedByName(ents)
	gone := make(map[*memory.Entity]bool, len(changedEnt))
	for id := range changedEnt {
		if e := old.byID.get(id); e != nil {
			gone[e] = true
		}
	}
	sn := &snapshot{seen: old.seen, refreshed: true, json: map[string][]byte{},
		entities: mergeSorted(old.entities, func(e *memory.Entity) bool { return gone[e] }, added, byName),
		byID:     old.byID.clone(), facts: newFacts, byEntity: old.byEntity.clone()}
	for id := range changedEnt {
		sn.byID.delete(id)
	}
	for _, e := range added {
		sn.byID.set(e.ID, e)
	}
	// The ends whose lists changed: those of the facts dropped and of
	// the facts read again (kept unless cut at the cap).
	ends := map[string][]*access.FactWithNames{}
	for f := range dropped {
		ends[f.SourceID], ends[f.TargetID] = nil, nil
	}
	for _, f := range fresh {
		if dropped[f] {
			continue
		}
		ends[f.SourceID] = append(ends[f.SourceID], f)
		if f.TargetID != f.SourceID {
			ends[f.TargetID] = append(ends[f.TargetID], f)
		}
	}
	for id, add := range ends {
		list := mergeSorted(old.byEntity.get(id), func(f *access.FactWithNames) bool { return dropped[f] }, add, newestFirst)
		if len(list) == 0 {
			sn.byEntity.delete(id)
		} else {
			sn.byEntity.set(id, list)
		}
	}
	// An entity's facts in the graph view change only when its list
	// changed (the ends above) or it did: a changed entity's facts were
	// all read again, so the other ends of those whose drawing depends on
	// it (shown, hidden, deleted) are among the ends too.
	sn.nextHub(old, func(yield func(string) bool) {
		for id := range ends {
			if !yield(id) {
				return
			}
		}
		for id := range changedEnt {
			if !yield(id) {
				return
			}
		}
	})
	return sn, next, nil
}

// pointers returns pointers to xs's elements.
func pointers[T any](xs []T) []*T {
	out := make([]*T, len(xs))
	for i := range xs {
		out[i] = &xs[i]
	}
	return out
}

// sortedByName returns pointers to ents ordered byName, each name lowered
// once.
func sortedByName(ents []memory.Entity) []*memory.Entity {
	type keyed struct {
		key string
		e   *memory.Entity
	}
	ks := make([]keyed, len(ents))
	for i := range ents {
		ks[i] = keyed{strings.ToLower(ents[i].Name), &ents[i]}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return cmp.Or(strings.Compare(a.key, b.key), strings.Compare(a.e.ID, b.e.ID)) })
	out := make([]*memory.Entity, len(ks))
	for i := range ks {
		out[i] = ks[i].e
	}
	return out
}

// byName orders entities by name without case, then id: the order of the
// graph's nodes and the NPC choices, the same after a full load and a
// refresh.
func byName(a, b *memory.Entity) int {
	return cmp.Or(strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)), strings.Compare(a.ID, b.ID))
}

// newestFirst orders facts as FindFacts lists them: the newest change
// first, then the highest id.
func newestFirst(a, b *access.FactWithNames) int {
	return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), cmp.Compare(b.ID, a.ID))
}

// mergeSorted returns sorted (ordered by order) without the elements drop
// reports, with add (ordered by order too, none equal to a kept element)
// merged in, in one new slice of the result's length. The runs between
// changes are copied whole: a snapshot's lists hold 100,000 elements, a
// refresh changes a few.
func mergeSorted[T any](sorted []T, drop func(T) bool, add []T, order func(a, b T) int) []T {
	var drops []int // indexes into sorted, ascending
	for i := range sorted {
		if drop(sorted[i]) {
			drops = append(drops, i)
		}
	}
	out := make([]T, 0, len(sorted)-len(drops)+len(add))
	// kept appends sorted[from:to] less the dropped, whose indexes from d
	// on are at from or after.
	d := 0
	kept := func(from, to int) {
		for ; d < len(drops) && drops[d] < to; d++ {
			out = append(out, sorted[from:drops[d]]...)
			from = drops[d] + 1
		}
		out = append(out, sorted[from:to]...)
	}
	at := 0
	for _, x := range add {
		// Before the first element not less than x: a dropped element
		// equal to x (a fact read again unchanged) goes after it.
		i, _ := slices.BinarySearchFunc(sorted[at:], x, order)
		kept(at, at+i)
		out = append(out, x)
		at += i
	}
	kept(at, len(sorted))
	return out
}

// maxCachedViews and maxCachedBytes bound the encoded graph views a
// snapshot keeps: a view of a large campaign lists all its entities for the
// page's search (5 MB at the 100k bench scale), and a DM moving from entity
// to entity asks for a view each time.
const (
	maxCachedViews = 64
	maxCachedBytes = 32 << 20
)

// maxFoundRows bounds the entities a snapshot's cache of filtered entity
// lists holds (graphNode values, about 80 bytes each), each list counting
// one more: the lists are also bounded in number (maxCachedViews), since a
// filter naming no type or session that exists lists nothing and a
// request may name any.
const maxFoundRows = 200_000

// filtered returns the entities a filter of the graph view lets through,
// made by load once per snapshot and filter: the graph page's search asks
// at each key the DM types.
func (sn *snapshot) filtered(key string, load func() ([]graphNode, error)) ([]graphNode, error) {
	sn.mu.Lock()
	nodes, ok := sn.found[key]
	sn.mu.Unlock()
	if ok {
		return nodes, nil
	}
	nodes, err := load()
	if err != nil {
		return nil, err
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.found == nil || len(sn.found) >= maxCachedViews || sn.foundRows+len(nodes)+1 > maxFoundRows {
		sn.found, sn.foundRows = map[string][]graphNode{}, 0
	}
	sn.found[key] = nodes
	sn.foundRows += len(nodes) + 1
	return nodes, nil
}

func (sn *snapshot) cachedJSON(key string) ([]byte, bool) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	b, ok := sn.json[key]
	return b, ok
}

func (sn *snapshot) storeJSON(key string, b []byte) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if len(sn.json) >= maxCachedViews || sn.jsonBytes+len(b) > maxCachedBytes {
		clear(sn.json)
		sn.jsonBytes = 0
	}
	if len(b) <= maxCachedBytes {
		sn.json[key] = b
		sn.jsonBytes += len(b)
	}
}

// recapKey identifies a recap by what it is made from: the session's lines
// the reader may read (their count, the newest and a hash of every id: two
// players of different split scenes may read as many lines ending with the
// same one), the graph (for what a player-safe recap avoids) and the
// audience.
type recapKey struct {
	campaign, session string
	lines             int
	last              int64
	ids               uint64
	cursor            int64
	safe              bool
}

// maxCachedRecaps bounds the recap cache.
const maxCachedRecaps = 256

type recaps struct {
	mu  sync.Mutex
	per map[recapKey]recap.Recap
}

func (r *recaps) get(k recapKey) (recap.Recap, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.per[k]
	return v, ok
}

func (r *recaps) put(k recapKey, v recap.Recap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.per) >= maxCachedRecaps {
		clear(r.per)
	}
	r.per[k] = v
}
