package access_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// sceneEntity is an entity of the split-party corpus as extraction (or
// the DM) would have written it: heard in the lines whose text starts with
// one of heard, and the readers (by hand) who may see it.
type sceneEntity struct {
	id, name string
	heard    []string // line prefixes; nil: written by the DM
	// seen lists who may see it: "any" (any player), "p1", "p2", "p3";
	// the DM sees every entity.
	seen []string
}

// sceneEntities are the corpus' entities first heard in its split scenes
// (scene A: p1 and p2 at the docks; scene B: p3 in the tower), each with
// the truth of who may see it, written by hand.
var sceneEntities = []sceneEntity{
	// Heard in scene A only.
	{"x-abbess", "Veiled Abbess", []string{"Black steel from the north"}, []string{"p1", "p2"}},
	// Heard in scene A, then said with the party together in s2.
	{"x-vault", "Vault Keeper", []string{"In gold from the Sunken Vault", "A week later, Thorin and Lyra sail"}, []string{"any", "p1", "p2", "p3"}},
	// Heard in scene B only.
	{"x-seal", "Mother's Seal", []string{"It lies beneath the tower"}, []string{"p3"}},
	// Heard in two scenes: each scene's players see it.
	{"x-guild", "Black Steel Guild", []string{"The docks smell of tar", "The tower stair winds up"}, []string{"p1", "p2", "p3"}},
	// Heard only in p3's cross-talk at the table outside scene A: p3 said
	// that line but heard no scene; no one else heard it. The chunk of
	// p3's line mentions it but does not say its name: no trace (a
	// chunk's entities are read only as the reader may see them,
	// TestAttackChunkEntityIDsOfUnheardChunk), so no player sees it.
	{"x-turn", "Turn Keeper", []string{"Is it my turn yet?"}, nil},
	// Heard in scene A after p2 left the voice channel: p1 alone.
	{"x-watch", "Alley Watch", []string{"Thorin alone reaches the alley"}, []string{"p1"}},
	// Heard only in a line the DM struck (non-canon): no trace.
	{"x-raven", "Raven Form", []string{"Elara turns into a raven."}, nil},
	// Heard in scene A (p1 alone), then revealed by the DM.
	{"x-oath", "Lantern Oath", []string{"I read the stolen ledger by a lantern."}, []string{"any", "p1", "p2", "p3"}},
	// Heard in scene A, and its full name said in a public line whose
	// chunk mentions it (a chunk that mentions an entity without saying its
	// full name is no trace: TestAttackCommonAliasRevealsSceneEntity).
	{"x-ledger", "Ledger", []string{"I pocket the ledger"}, []string{"any", "p1", "p2", "p3"}},
	// Heard in scene B, and the end of a fact the DM wrote (resting on no
	// line): the fact names it, so it is hidden, with the entity, from the
	// players who may not see it (the DM's writes do not publish an
	// entity; PublishEntity does).
	{"x-crown", "Raven Crown", []string{"Elara, what do you know of the Dawn Hammer?"}, []string{"p3"}},
	// Heard in scene A, the end of a fact told there, which the DM
	// granted p3.
	{"x-crate", "Sealed Crate", []string{"Grimjaw, what is in the crate?"}, []string{"p1", "p2", "p3"}},
	// Added by the DM.
	{"x-harbour", "Harbour Master", nil, []string{"any", "p1", "p2", "p3"}},
}

// loadSceneEntities writes sceneEntities into campaign id of the
// split-party corpus (loaded, with splitChunks), with their traces, and
// an entity of scene A the DM deletes afterwards ("x-gone").
func loadSceneEntities(t *testing.T, s *postgres.Store, id string) {
	t.Helper()
	ctx := context.Background()
	c := pgtest.Campaign(t, s, id)
	lineIDs := map[string]int64{} // prefix -> id
	chunkOf := map[int64]memory.Chunk{}
	for _, sess := range []string{"s1", "s2"} {
		es, err := c.Sessions().Entries(ctx, sess)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range es {
			for _, se := range sceneEntities {
				for _, h := range se.heard {
					if strings.HasPrefix(e.Text, h) {
						lineIDs[h] = e.ID
					}
				}
			}
			if !e.NonCanon {
				chunkOf[e.ID] = memory.Chunk{ID: fmt.Sprintf("line-%s-%d", sess, i), SessionID: sess, Content: e.SpeakerName + ": " + e.Text,
					Embedding: []float32{1, 0, 0, 0, 0, 0, 0, 1}, SpeakerIDs: []string{e.SpeakerID}, StartAt: e.At, EndAt: e.At.Add(time.Second)}
			}
		}
	}
	g := c.Graph()
	// Extraction's chunk links: each chunk of a line an entity was heard
	// in mentions it.
	links := map[int64][]string{}
	for _, se := range sceneEntities {
		if se.heard == nil {
			if _, err := g.AddEntity(ctx, memory.Entity{ID: se.id, Type: memory.EntityNPC, Name: se.name}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var heard []int64
		for _, h := range se.heard {
			lid, ok := lineIDs[h]
			if !ok {
				t.Fatalf("no line starts with %q", h)
			}
			heard = append(heard, lid)
			links[lid] = append(links[lid], se.id)
		}
		// Written as extraction writes it: with the first line, the rest
		// as a later window's evidence.
		if err := g.AddSceneEntity(ctx, memory.Entity{ID: se.id, Type: memory.EntityConcept, Name: se.name,
			Aliases: []string{"the " + se.name}, Attributes: map[string]any{"hidden_description": "seen in a scene"}}, heard[:1]); err != nil {
			t.Fatal(err)
		}
		if err := g.AddEntityEvidence(ctx, map[string][]int64{se.id: heard[1:]}); err != nil {
			t.Fatal(err)
		}
	}
	var cs []memory.Chunk
	for lid, ents := range links {
		if ch, ok := chunkOf[lid]; ok {
			ch.EntityIDs = ents
			cs = append(cs, ch)
		}
	}
	// The Grey Ledger said with the party together (a chunk of a public
	// line of s2 mentions it).
	for lid, ch := range chunkOf {
		if strings.HasPrefix(ch.Content, "p2: Tell me what the ledger said") {
			ch.EntityIDs = []string{"x-ledger"}
			cs = append(cs, ch)
			_ = lid
		}
	}
	if err := c.Index().IndexChunks(ctx, cs); err != nil {
		t.Fatal(err)
	}
	if _, err := g.PublishEntity(ctx, "x-oath"); err != nil {
		t.Fatal(err)
	}
	// The DM's fact about the Raven Crown rests on no line.
	if _, err := g.WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "x-crown", TargetID: "ironhold", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated}}, ""); err != nil {
		t.Fatal(err)
	}
	// A fact told in scene A about the Sealed Crate, granted to p3.
	f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "x-crate", TargetID: "grimjaw", Type: "OWNED_BY",
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddEvidence(ctx, f.ID, []int64{lineIDs["Grimjaw, what is in the crate?"]}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddGrant(ctx, "p3", "", f.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	// An entity of scene A the DM deletes: its id stays in the change log.
	if err := g.AddSceneEntity(ctx, memory.Entity{ID: "x-gone", Type: memory.EntityConcept, Name: "Gone Name"},
		[]int64{lineIDs["Black steel from the north"]}); err != nil {
		t.Fatal(err)
	}
	if err := g.DeleteEntity(ctx, "x-gone"); err != nil {
		t.Fatal(err)
	}
}

// TestSplitSceneEntityNames reads the entities of the split-party corpus,
// some first heard in its split scenes, through every read path of
// entities a player reaches, as five readers (any player, each bound
// player, the DM): no reader is given the id, name or alias of an entity
// it may not see (by hand, sceneEntities), and every entity it may see is
// found where a list holds it.
func TestSplitSceneEntityNames(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	loadKnowledgeCorpus(t, s, "scenent", "testdata/knowledge/split-party.yaml")
	splitChunks(t, s, "scenent")
	loadSceneEntities(t, s, "scenent")
	d := newDoor(t, s, reconnect.Backoff{})
	ctx := context.Background()

	type reader struct {
		name, key string
		viewer    memory.Viewer
	}
	readers := []reader{{"any player", "any", memory.PlayerViewer()}, {"the DM", "dm", memory.DMViewer()}}
	for _, u := range []string{"p1", "p2", "p3"} {
		readers = append(readers, reader{"player " + u, u, memory.PlayerViewerOf(u)})
	}
	hidden := func(r reader) map[string]bool {
		out := map[string]bool{"x-gone": r.key != "dm"}
		for _, se := range sceneEntities {
			out[se.id] = r.key != "dm" && !slices.Contains(se.seen, r.key)
		}
		return out
	}
	var leaks, checked int
	for _, r := range readers {
		t.Run(r.name, func(t *testing.T) {
			c, err := d.Open(ctx, "scenent", r.viewer)
			if err != nil {
				t.Fatal(err)
			}
			g := c.Graph()
			hide := hidden(r)
			var secrets []string // names and aliases r may not read
			for _, se := range sceneEntities {
				if hide[se.id] {
					secrets = append(secrets, se.name)
				}
			}
			secrets = append(secrets, "Gone Name")
			if r.key == "dm" {
				secrets = nil
			}
			// ids checks a read's entity ids: none hidden from r.
			ids := func(path string, got []string) {
				t.Helper()
				for _, id := range got {
					checked++
					if hide[id] {
						leaks++
						t.Errorf("LEAK to %s: %s gave entity %s", r.name, path, id)
					}
				}
			}
			// text checks any text a read gave: no hidden name in it.
			text := func(path, s string) {
				t.Helper()
				checked++
				for _, n := range secrets {
					if strings.Contains(strings.ToLower(s), strings.ToLower(n)) {
						leaks++
						t.Errorf("LEAK to %s: %s names %q", r.name, path, n)
					}
				}
			}
			// whole checks a list that holds every entity r may see.
			whole := func(path string, got []string) {
				t.Helper()
				ids(path, got)
				for _, se := range sceneEntities {
					if !hide[se.id] && !slices.Contains(got, se.id) {
						t.Errorf("%s lost %s (%s)", path, se.id, se.name)
					}
				}
			}
			entIDs := func(es []memory.Entity) []string {
				var out []string
				for _, e := range es {
					out = append(out, e.ID)
				}
				return out
			}
			all, err := g.FindEntities(ctx, memory.EntityFilter{IncludeRetired: true})
			if err != nil {
				t.Fatal(err)
			}
			whole("FindEntities", entIDs(all))
			var allIDs []string
			for _, se := range sceneEntities {
				allIDs = append(allIDs, se.id)
			}
			allIDs = append(allIDs, "x-gone")
			byID, err := g.FindEntities(ctx, memory.EntityFilter{IDs: allIDs})
			if err != nil {
				t.Fatal(err)
			}
			whole("FindEntities(IDs)", entIDs(byID))
			names, err := g.EntityNames(ctx)
			if err != nil {
				t.Fatal(err)
			}
			whole("EntityNames", entIDs(names))
			for _, se := range sceneEntities {
				qs := []string{se.name, strings.ToLower(se.name[:5])}
				if se.heard != nil {
					qs = append(qs, "the "+se.name) // its alias
				}
				for _, q := range qs {
					found, err := g.FindEntities(ctx, memory.EntityFilter{Name: q})
					if err != nil {
						t.Fatal(err)
					}
					got := entIDs(found)
					ids("FindEntities(Name "+q+")", got)
					if !hide[se.id] && !slices.Contains(got, se.id) {
						t.Errorf("FindEntities(Name %q) did not find %s", q, se.id)
					}
				}
				e, err := g.Entity(ctx, se.id)
				switch {
				case hide[se.id] && !errors.Is(err, memory.ErrNotFound):
					leaks++
					t.Errorf("LEAK to %s: Entity(%s) = %v, %v; want not found", r.name, se.id, e.Name, err)
				case !hide[se.id] && err != nil:
					t.Errorf("Entity(%s): %v", se.id, err)
				}
				checked++
				n, err := c.KGNode(ctx, access.KGCampaign, se.id)
				switch {
				case hide[se.id] && !errors.Is(err, memory.ErrNotFound):
					leaks++
					t.Errorf("LEAK to %s: KGNode(%s) = %v, %v; want not found", r.name, se.id, n.Name, err)
				case !hide[se.id] && err != nil:
					t.Errorf("KGNode(%s): %v", se.id, err)
				}
				checked++
				// Neighbours and a path from the entity to itself: nothing
				// of a hidden one, and only entities r may see.
				ns, err := g.Neighbors(ctx, se.id, 2, memory.TraversalOpts{})
				if err != nil {
					t.Fatal(err)
				}
				for _, nb := range ns {
					ids("Neighbors("+se.id+")", []string{nb.Entity.ID})
				}
				path, err := g.FindPath(ctx, se.id, se.id, 3)
				switch {
				case hide[se.id] && !errors.Is(err, memory.ErrNotFound):
					leaks++
					t.Errorf("LEAK to %s: FindPath(%s, %[2]s) = %v, %v; want not found", r.name, se.id, path, err)
				case !hide[se.id] && err != nil:
					t.Errorf("FindPath(%s, %[1]s): %v", se.id, err)
				}
				for _, st := range path {
					ids("FindPath("+se.id+")", []string{st.Entity.ID})
				}
				// GraphRAG seeded by the entity: only chunks r may read, and
				// only entities r may see.
				hits, err := g.QueryWithContext(ctx, "the", memory.GraphScope{EntityIDs: []string{se.id}, Depth: 1, Limit: 50})
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hits {
					ids("QueryWithContext("+se.id+")", h.Chunk.EntityIDs)
					text("QueryWithContext("+se.id+")", h.Chunk.Content)
				}
				facts, err := g.NamedFactsAsOfTime(ctx, "what of the "+se.name, time.Now(), false)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range facts {
					ids("NamedFactsAsOfTime", []string{f.SourceID, f.TargetID})
				}
			}
			kinds, err := g.EntityKinds(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, k := range kinds {
				n += k.Count
			}
			counts, err := c.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			checked += 2
			if n != len(all) || counts.Entities != len(all) {
				leaks++
				t.Errorf("LEAK to %s: EntityKinds count %d and Counts %d entities, but %d are listed", r.name, n, counts.Entities, len(all))
			}
			// The chunks a reader reads list the entities they mention.
			listed, err := c.Index().Chunks(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			var chunkIDs []string
			for _, ch := range listed {
				chunkIDs = append(chunkIDs, ch.ID)
				ids("Chunks("+ch.ID+")", ch.EntityIDs)
			}
			byChunk, err := c.Index().ChunksByID(ctx, chunkIDs)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range byChunk {
				ids("ChunksByID("+ch.ID+")", ch.EntityIDs)
			}
			near, err := c.Index().VectorSearch(ctx, []float32{1, 0, 0, 0, 0, 0, 0, 1}, 200, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range near {
				ids("VectorSearch("+h.Chunk.ID+")", h.Chunk.EntityIDs)
			}
			for _, se := range sceneEntities {
				hits, err := c.Index().TextSearch(ctx, se.name, 50, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hits {
					ids("TextSearch("+se.name+")", h.Chunk.EntityIDs)
				}
			}
			// The facts and what they name.
			fs, err := g.FindFacts(ctx, access.FactQuery{Limit: 500, Statuses: []memory.FactStatus{memory.StatusActive, memory.StatusRetired}})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				ids("FindFacts", []string{f.SourceID, f.TargetID})
				text("FindFacts", f.SourceName+" "+f.TargetName)
			}
			// The memory tools: kg_read, kg_sync from the start, the change
			// feed.
			kg, err := c.KGRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var kgIDs []string
			for _, nd := range kg.Nodes {
				kgIDs = append(kgIDs, nd.ID)
			}
			whole("KGRead nodes", kgIDs)
			for _, e := range append(kg.Edges, kg.Traces...) {
				ids("KGRead edges", []string{e.From, e.To})
			}
			sync, err := c.KGSync(ctx, access.ChangeCursor{}, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, nd := range sync.Nodes {
				ids("KGSync nodes", []string{nd.ID})
			}
			for _, e := range sync.Edges {
				ids("KGSync edges", []string{e.From, e.To})
			}
			for _, ref := range sync.Removed {
				text("KGSync removed", ref)
				for id := range hide {
					if hide[id] && strings.Contains(ref, id) {
						leaks++
						t.Errorf("LEAK to %s: KGSync removed %q", r.name, ref)
					}
				}
			}
			chs, _, err := c.ChangesSince(ctx, 0, "", 5000)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range chs {
				if ch.Kind == "entity" {
					ids("ChangesSince", []string{ch.Ref})
				}
			}
			if r.viewer.Role == memory.RolePlayer {
				// A player's fact about a hidden entity is refused as one
				// about an entity that does not exist; KGRecall likewise.
				for _, se := range sceneEntities {
					if r.viewer.PlayerID == "" {
						break
					}
					_, err := g.WriteFact(ctx, memory.Player(r.viewer.PlayerID), memory.Relationship{SourceID: "grimjaw", TargetID: se.id,
						Type: "KNOWS", Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.5, Source: memory.SourceStated}}, "")
					_, errMissing := g.WriteFact(ctx, memory.Player(r.viewer.PlayerID), memory.Relationship{SourceID: "grimjaw",
						TargetID: se.id + "-nothing", Type: "KNOWS", Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.5,
							Source: memory.SourceStated}}, "")
					checked++
					if hide[se.id] {
						want := strings.ReplaceAll(fmt.Sprint(errMissing), se.id+"-nothing", se.id)
						if !errors.Is(err, memory.ErrNotFound) || err.Error() != want {
							leaks++
							t.Errorf("LEAK to %s: a proposal about %s: %v (about a missing entity: %v)", r.name, se.id, err, errMissing)
						}
					} else if err != nil {
						t.Errorf("a proposal about %s: %v", se.id, err)
					}
				}
			}
		})
	}
	t.Logf("split-party corpus, %d readers: %d entity reads checked, %d leaked", len(readers), checked, leaks)
}
