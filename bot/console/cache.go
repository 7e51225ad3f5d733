package console

import (
	"context"
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/glyphoxa/glyphoxa/bot/recap"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// The graph pages read the whole knowledge graph of a campaign. Loading it
// (a thousand entities, thousands of facts with their attributes) costs
// far more than asking whether it changed: the change log's newest id,
// which triggers move on every entity and fact write. So the console keeps
// one snapshot per campaign and viewer (the DM's and the players' views
// differ: the store filters a player's in SQL) and reloads it only when the
// log has moved.

// snapshot is a campaign's knowledge graph as of a change-log id and, for
// a player, the entities first heard in split scenes they saw then.
type snapshot struct {
	cursor   int64
	seen     string
	entities []memory.Entity
	byID     map[string]int
	// facts are every fact, whatever its status, with the names of
	// their ends; byEntity indexes them by both ends.
	facts    []access.FactWithNames
	byEntity map[string][]int
	// json caches encoded graph views by their filter.
	mu   sync.Mutex
	json map[string][]byte
	// pickers are the choices the pages offer from the graph, made once.
	pickOnce sync.Once
	picks    pickers
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

// maxSnapshotFacts bounds the facts a snapshot holds.
const maxSnapshotFacts = 100_000

type snapshots struct {
	mu  sync.Mutex
	per map[string]*campaignSnap
}

type campaignSnap struct {
	mu  sync.Mutex // held while loading, so concurrent readers load once
	cur *snapshot
}

// graphSnapshot returns the current snapshot of the campaign as its
// handle's viewer reads it, reloading it when the graph changed.
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
	s.snaps.mu.Unlock()

	// The campaign's revision, not the viewer's cursor: a fact a player
	// read and the DM has made secret since moves no change the player may
	// see (LastChange), and the snapshot must lose it all the same.
	cursor, err := camp.Revision(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the graph's change log: %w", err)
	}
	// What a player sees of entities first heard in split scenes changes
	// with lines and chunks too (a forget-me, a later window naming one),
	// which the change log does not follow: the snapshot is reloaded when
	// that set changed. (Empty, and cheap, for the DM and a campaign
	// never split.)
	seenIDs, err := camp.Graph().SceneEntitiesSeen(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the graph's scene entities: %w", err)
	}
	seen := strings.Join(seenIDs, "\x00")
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.cur != nil && cs.cur.cursor == cursor && cs.cur.seen == seen {
		return cs.cur, nil
	}
	g := camp.Graph()
	ents, err := g.FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return nil, err
	}
	facts, err := g.FindFacts(ctx, access.FactQuery{Limit: maxSnapshotFacts, Statuses: []memory.FactStatus{
		memory.StatusActive, memory.StatusPending, memory.StatusRetired, memory.StatusRejected}})
	if err != nil {
		return nil, err
	}
	sn := &snapshot{cursor: cursor, seen: seen, entities: ents, byID: make(map[string]int, len(ents)), facts: facts,
		byEntity: map[string][]int{}, json: map[string][]byte{}}
	for i, e := range ents {
		sn.byID[e.ID] = i
	}
	for i, f := range facts {
		sn.byEntity[f.SourceID] = append(sn.byEntity[f.SourceID], i)
		if f.TargetID != f.SourceID {
			sn.byEntity[f.TargetID] = append(sn.byEntity[f.TargetID], i)
		}
	}
	cs.cur = sn
	return sn, nil
}

// maxCachedViews bounds the encoded graph views a snapshot keeps.
const maxCachedViews = 64

func (sn *snapshot) cachedJSON(key string) ([]byte, bool) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	b, ok := sn.json[key]
	return b, ok
}

func (sn *snapshot) storeJSON(key string, b []byte) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if len(sn.json) >= maxCachedViews {
		clear(sn.json)
	}
	sn.json[key] = b
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
