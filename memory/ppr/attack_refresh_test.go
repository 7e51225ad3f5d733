package ppr

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// Adversarial review of 76b2b4c / ea631c2: a refreshed graph must equal a
// freshly loaded one, for the DM and for players.

// TestAttackRefreshDMSequence: a sequence of writes, each followed by a
// refresh compared with a fresh load: merges (a chain, and one where both
// entities link the same chunk), re-indexing with other links, deleting an
// entity, deleting chunks, re-indexing a chunk id deleted before, and a
// transaction that changes one chunk's links twice (indexes it, then
// merges its entity away) and another that indexes then deletes it.
func TestAttackRefreshDMSequence(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, store, "ppr")
	addNPCs(ctx, t, c, "a", "b", "c", "d", "e", "f", "z", "y")
	for _, f := range [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "e"}, {"z", "y"}, {"e", "f"}} {
		_, err := c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: f[0], TargetID: f[1], Type: "KNOWS",
			Provenance: memory.Provenance{Confidence: 0.9, Source: memory.SourceStated}})
		check(t, err)
	}
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k1", SessionID: "s1", Content: "a and b", EntityIDs: []string{"a", "b"}, StartAt: t0},
		{ID: "k2", SessionID: "s1", Content: "c and d", EntityIDs: []string{"c", "d"}, StartAt: t0},
		{ID: "k3", SessionID: "s1", Content: "d", EntityIDs: []string{"d"}, StartAt: t0},
		{ID: "k4", SessionID: "s2", Content: "e f", EntityIDs: []string{"e", "f"}, StartAt: t0},
		{ID: "k9", SessionID: "s2", Content: "z", EntityIDs: []string{"z", "y"}, StartAt: t0},
	}))
	g, err := New(c, precise())
	check(t, err)
	check(t, g.Load(ctx))
	// Entities no step deletes or merges away (a seed the graph holds as
	// a node without edges, a merged-away id, ranks itself alone after a
	// refresh and nothing after a load; no question can name it, since
	// the names reload with the entity change).
	seeds := []string{"a", "e", "f"}
	steps := []struct {
		name  string
		write func() error
	}{
		{"merge d into c (both link k2)", func() error { _, err := c.Graph().MergeEntities(ctx, "d", "c", ""); return err }},
		{"merge c into e (chain)", func() error { _, err := c.Graph().MergeEntities(ctx, "c", "e", ""); return err }},
		{"re-index k1 with other links", func() error {
			return c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "k1", SessionID: "s1", Content: "a and z", EntityIDs: []string{"a", "z"}, StartAt: t0}})
		}},
		{"delete entity z", func() error { return c.Graph().DeleteEntity(ctx, "z") }},
		{"delete chunk k3", func() error { _, err := c.Index().DeleteSessionChunks(ctx, "s1", []string{"k1", "k2"}); return err }},
		{"re-index deleted k3", func() error {
			return c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "k3", SessionID: "s1", Content: "f again", EntityIDs: []string{"f", "a"}, StartAt: t0}})
		}},
		{"one tx: index k5 then merge its entity away", func() error {
			return store.InTx(ctx, "ppr", func(tc *postgres.Campaign) error {
				if err := tc.Index().IndexChunks(ctx, []memory.Chunk{{ID: "k5", SessionID: "s2", Content: "b y", EntityIDs: []string{"b", "y"}, StartAt: t0}}); err != nil {
					return err
				}
				_, err := tc.Graph().MergeEntities(ctx, "b", "a", "")
				return err
			})
		}},
		{"one tx: index k6 then delete it", func() error {
			return store.InTx(ctx, "ppr", func(tc *postgres.Campaign) error {
				if err := tc.Index().IndexChunks(ctx, []memory.Chunk{{ID: "k6", SessionID: "s3", Content: "y", EntityIDs: []string{"y"}, StartAt: t0}}); err != nil {
					return err
				}
				_, err := tc.Index().DeleteSessionChunks(ctx, "s3", nil)
				return err
			})
		}},
		{"delete every chunk of s2", func() error { _, err := c.Index().DeleteSessionChunks(ctx, "s2", nil); return err }},
	}
	for _, st := range steps {
		check(t, st.write())
		_, err := g.Refresh(ctx)
		check(t, err)
		sameAsFresh(t, ctx, st.name, g, c, seeds...)
	}
	// A refresh with nothing new changes nothing.
	n, err := g.Refresh(ctx)
	check(t, err)
	if n != 0 {
		t.Errorf("a refresh with nothing written applied %d changes", n)
	}
}

// TestAttackRefreshLongTxChunkAndMerge: a long transaction indexes a chunk
// and merges an entity while the DM merges and deletes others; refreshes
// run while it is open and after it commits. Each refresh must equal a
// fresh load (reading the same committed state).
func TestAttackRefreshLongTxChunkAndMerge(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, store, "ppr")
	addNPCs(ctx, t, c, "a", "b", "c", "d", "z", "y", "x", "w")
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k1", SessionID: "s1", Content: "a b", EntityIDs: []string{"a", "b"}, StartAt: t0},
		{ID: "k2", SessionID: "s1", Content: "c w", EntityIDs: []string{"c", "w"}, StartAt: t0},
		{ID: "k3", SessionID: "s1", Content: "x y", EntityIDs: []string{"x", "y"}, StartAt: t0},
	}))
	g, err := New(c, precise())
	check(t, err)
	check(t, g.Load(ctx))

	wrote, release, done := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- store.InTx(context.Background(), "ppr", func(tc *postgres.Campaign) error {
			err := tc.Index().IndexChunks(ctx, []memory.Chunk{{ID: "late", SessionID: "s2", Content: "a late", EntityIDs: []string{"a", "c"}, StartAt: t0}})
			if err == nil {
				_, err = tc.Graph().MergeEntities(ctx, "x", "y", "")
			}
			wrote <- err
			if err != nil {
				return err
			}
			<-release
			return nil
		})
	}()
	check(t, <-wrote)
	committed := false
	t.Cleanup(func() {
		if !committed {
			close(release)
			<-done
		}
	})
	// Writes that commit while it is open (merges take row locks on other
	// entities; no chunk indexing, which would wait on the statistics).
	_, err = c.Graph().MergeEntities(ctx, "d", "b", "")
	check(t, err)
	_, err = g.Refresh(ctx)
	check(t, err)
	sameAsFresh(t, ctx, "while the long transaction runs", g, c, "a", "c", "y")
	check(t, c.Graph().DeleteEntity(ctx, "z"))
	// Not into a or c: the long transaction's links hold key-share
	// locks on them, which a merge's FOR UPDATE waits for.
	_, err = c.Graph().MergeEntities(ctx, "b", "w", "")
	check(t, err)
	_, err = g.Refresh(ctx)
	check(t, err)
	sameAsFresh(t, ctx, "while the long transaction runs, second refresh", g, c, "a", "c", "y")
	close(release)
	committed = true
	check(t, <-done)
	_, err = g.Refresh(ctx)
	check(t, err)
	sameAsFresh(t, ctx, "after the long transaction committed", g, c, "a", "c", "y")
	if !slices.Contains(liveEdges(g), "m:a>late") || !slices.Contains(liveEdges(g), "m:y>k3") {
		t.Errorf("the late commit's links are missing: %v", liveEdges(g))
	}
}

// splitWorld is a campaign whose session s1 splits after a minute (Thorin
// alone in the scene, Lyra outside). "abbess" (the Veiled Abbess) is
// first heard in the scene (scene_only); chunk scene1 (in the scene)
// names her, pub1 (before the split) links her by an alias only. Every
// player outside the scene sees no trace of her.
func splitWorld(t *testing.T) (*postgres.Store, *postgres.Campaign) {
	t.Helper()
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, store, "camp")
	sl := c.Sessions()
	check(t, sl.StartSession(ctx, "s1", t0))
	check(t, sl.RecordPresence(ctx, "s1", t0, []string{"lyra", "thorin"}, false))
	check(t, sl.RecordPresence(ctx, "s1", t0.Add(time.Minute), []string{"thorin"}, true))
	_, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "Dana",
		Text: "Together at the gate.", At: t0.Add(10 * time.Second)})
	check(t, err)
	_, err = sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "Dana",
		Text: "Thorin meets the Veiled Abbess.", At: t0.Add(90 * time.Second)})
	check(t, err)
	lines, err := sl.Entries(ctx, "s1")
	check(t, err)
	var scene int64
	for _, l := range lines {
		if strings.Contains(l.Text, "Abbess") {
			scene = l.ID
		}
	}
	g := c.Graph()
	check(t, g.UpsertEntities(ctx, []memory.Entity{{ID: "gate", Type: "location", Name: "Gate"}, {ID: "thorin", Type: memory.EntityNPC, Name: "Thorin"}}))
	check(t, g.AddSceneEntity(ctx, memory.Entity{ID: "abbess", Type: memory.EntityNPC, Name: "Veiled Abbess"}, []int64{scene}))
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "pub1", SessionID: "s1", Content: "The Abbess at the gate.", EntityIDs: []string{"abbess", "gate"},
			StartAt: t0.Add(5 * time.Second), EndAt: t0.Add(15 * time.Second)},
		{ID: "scene1", SessionID: "s1", Content: "Thorin meets the Veiled Abbess.", EntityIDs: []string{"abbess", "thorin"},
			StartAt: t0.Add(85 * time.Second), EndAt: t0.Add(95 * time.Second)},
	}))
	return store, c
}

func vname(v memory.Viewer) string { return fmt.Sprintf("%s(%s)", v, v.PlayerID) }

var players = []memory.Viewer{memory.PlayerViewer(), memory.PlayerViewerOf("lyra")}

func playerGraphs(t *testing.T, c *postgres.Campaign) ([]*Graph, []*postgres.Campaign) {
	t.Helper()
	ctx := ctxT(t)
	var gs []*Graph
	var cs []*postgres.Campaign
	for _, v := range players {
		pc, err := c.As(v)
		check(t, err)
		g, err := New(pc, precise())
		check(t, err)
		check(t, g.Load(ctx))
		gs, cs = append(gs, g), append(cs, pc)
	}
	return gs, cs
}

// pubAbbess is a chunk said with the party together that names the
// Veiled Abbess in full: a trace every player may read.
var pubAbbess = memory.Chunk{ID: "pub2", SessionID: "s1", Content: "The Veiled Abbess waves from the gate.", EntityIDs: []string{"abbess", "gate"},
	StartAt: t0.Add(20 * time.Second), EndAt: t0.Add(30 * time.Second)}

// TestAttackRefreshPlayerSceneEntityRevealed: a scene_only entity becomes
// visible to players outside the scene without the links of the chunks
// already mentioning it changing: a chunk said together names her in full
// (only that chunk's links are logged), or the DM publishes her (no link
// changes at all). A fresh player load holds every chunk's mention of
// her; the refreshed graph must too.
func TestAttackRefreshPlayerSceneEntityRevealed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reveal func(ctx context.Context, c *postgres.Campaign) error
	}{
		{"a chunk said together names her", func(ctx context.Context, c *postgres.Campaign) error {
			return c.Index().IndexChunks(ctx, []memory.Chunk{pubAbbess})
		}},
		{"the DM publishes her", func(ctx context.Context, c *postgres.Campaign) error {
			_, err := c.Graph().PublishEntity(ctx, "abbess")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			_, c := splitWorld(t)
			gs, cs := playerGraphs(t, c)
			for i, g := range gs {
				if slices.ContainsFunc(liveEdges(g), func(e string) bool { return strings.Contains(e, "abbess") }) {
					t.Fatalf("%s sees the abbess before the reveal: %v", players[i], liveEdges(g))
				}
			}
			check(t, tc.reveal(ctx, c))
			for i, g := range gs {
				_, err := g.Refresh(ctx)
				check(t, err)
				sameAsFresh(t, ctx, vname(players[i])+" after the reveal", g, cs[i], "gate", "abbess")
			}
		})
	}
}

// TestAttackRefreshPlayerSceneEntityHiddenAgain: the only trace that
// showed a scene_only entity to players outside the scene goes (the
// chunk naming her is deleted; the player whose line named her is
// forgotten). A fresh player load then holds no mention edge of hers; a
// refreshed graph must not keep the other chunks' mentions of her, nor
// rank her among the entities a walk reaches.
func TestAttackRefreshPlayerSceneEntityHiddenAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(ctx context.Context, c *postgres.Campaign)
		hide  func(ctx context.Context, c *postgres.Campaign) error
	}{
		{"the chunk naming her is deleted", func(ctx context.Context, c *postgres.Campaign) {
			check(t, c.Index().IndexChunks(ctx, []memory.Chunk{pubAbbess}))
		}, func(ctx context.Context, c *postgres.Campaign) error {
			_, err := c.Index().DeleteSessionChunks(ctx, "s1", []string{"pub1", "scene1"})
			return err
		}},
		{"the player who named her together is forgotten", func(ctx context.Context, c *postgres.Campaign) {
			_, err := c.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "bard", SpeakerName: "Bard",
				Text: "I have heard of the Veiled Abbess.", At: t0.Add(40 * time.Second)})
			check(t, err)
			lines, err := c.Sessions().Entries(ctx, "s1")
			check(t, err)
			var id int64
			for _, l := range lines {
				if l.SpeakerID == "bard" {
					id = l.ID
				}
			}
			check(t, c.Graph().AddEntityEvidence(ctx, map[string][]int64{"abbess": {id}}))
		}, func(ctx context.Context, c *postgres.Campaign) error {
			_, err := c.ForgetSpeaker(ctx, "bard")
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t)
			_, c := splitWorld(t)
			tc.setup(ctx, c)
			gs, cs := playerGraphs(t, c)
			for i, g := range gs {
				if !slices.Contains(liveEdges(g), "m:abbess>pub1") {
					t.Fatalf("%s does not see the abbess before hiding her: the test shows nothing: %v", players[i], liveEdges(g))
				}
			}
			check(t, tc.hide(ctx, c))
			for i, g := range gs {
				_, err := g.Refresh(ctx)
				check(t, err)
				if held := slices.DeleteFunc(liveEdges(g), func(e string) bool { return !strings.Contains(e, "abbess") }); len(held) > 0 {
					t.Errorf("%s's refreshed graph holds mentions of an entity hidden from them: %v", players[i], held)
				}
				if r := g.Rank([]Seed{{"gate", 1}}, nil, 0); slices.Contains(resultIDs(r.Entities), "abbess") {
					t.Errorf("%s's walk from the gate reaches the hidden entity: %v", players[i], resultIDs(r.Entities))
				}
				sameAsFresh(t, ctx, vname(players[i])+" after hiding her", g, cs[i], "gate")
			}
		})
	}
}

// TestAttackRefreshEntityLeftWithoutLinks: an entity that still exists
// loses its last link (its session's chunks are deleted). A fresh load
// holds no node of it (Specificity 0, ignored as a seed); the refreshed
// graph keeps its node without edges: Specificity 1, and as a seed it
// takes its share of the walk's mass (and ranks itself). The retriever
// weighs seeds by Specificity (retrieve.go seeds, entityConfidence), so a
// question naming it is answered differently before and after a restart.
func TestAttackRefreshEntityLeftWithoutLinks(t *testing.T) {
	t.Parallel()
	c := world(t)
	ctx := ctxT(t)
	check(t, c.Graph().UpsertEntity(ctx, memory.Entity{ID: "lone", Type: memory.EntityNPC, Name: "Lone"}))
	check(t, c.Index().IndexChunks(ctx, []memory.Chunk{{ID: "k7", SessionID: "s9", Content: "lone", EntityIDs: []string{"lone"}, StartAt: t0}}))
	g, err := New(c, precise())
	check(t, err)
	check(t, g.Load(ctx))
	if g.Specificity("lone") <= 0 {
		t.Fatal("the entity is not in the graph before the deletion: the test shows nothing")
	}
	_, err = c.Index().DeleteSessionChunks(ctx, "s9", nil)
	check(t, err)
	_, err = g.Refresh(ctx)
	check(t, err)
	fresh, err := New(c, precise())
	check(t, err)
	check(t, fresh.Load(ctx))
	if s, f := g.Specificity("lone"), fresh.Specificity("lone"); s != f {
		t.Errorf("the specificity of an entity left without links: refreshed %v, fresh %v", s, f)
	}
	seeds := []Seed{{"a", 1}, {"lone", 1}}
	ra, rb := g.Rank(seeds, nil, 0), fresh.Rank(seeds, nil, 0)
	if fmt.Sprint(resultIDs(ra.Entities)) != fmt.Sprint(resultIDs(rb.Entities)) {
		t.Errorf("entities ranked from a and the entity left without links: refreshed %v, fresh %v", resultIDs(ra.Entities), resultIDs(rb.Entities))
	}
	for i := range min(len(ra.Chunks), len(rb.Chunks)) {
		if math.Abs(ra.Chunks[i].Score-rb.Chunks[i].Score) > 1e-6*rb.Chunks[i].Score {
			t.Errorf("chunk %s scored %v refreshed, %v fresh", ra.Chunks[i].ID, ra.Chunks[i].Score, rb.Chunks[i].Score)
		}
	}
}
