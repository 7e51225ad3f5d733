package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/bundle"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// Adversarial review of 76b2b4c (chunk_changes): the retrieval graph
// rebuilt from LoadGraph and then GraphChanges must equal LoadGraph now.

// edgeMirror is the retrieval graph as a reader rebuilds it from
// LoadGraph and GraphChanges: mentions by chunk, facts by id.
type edgeMirror struct {
	mentions map[string]map[string]bool // chunk → entities
	facts    map[int64]string
}

func newMirror() *edgeMirror {
	return &edgeMirror{mentions: map[string]map[string]bool{}, facts: map[int64]string{}}
}

func (m *edgeMirror) apply(e postgres.GraphEdge) error {
	switch e.Kind {
	case postgres.EdgeFact:
		delete(m.facts, e.FactID)
		if !e.Removed && e.From != e.To {
			m.facts[e.FactID] = e.From + "-" + e.To
		}
	case postgres.EdgeMention:
		if e.Removed {
			delete(m.mentions, e.To)
			return nil
		}
		if m.mentions[e.To] == nil {
			m.mentions[e.To] = map[string]bool{}
		}
		m.mentions[e.To][e.From] = true
	}
	return nil
}

func (m *edgeMirror) edges() []string {
	var out []string
	for c, es := range m.mentions {
		for e := range es {
			out = append(out, "m:"+e+">"+c)
		}
	}
	for id, f := range m.facts {
		out = append(out, fmt.Sprintf("f:%d:%s", id, f))
	}
	slices.Sort(out)
	return out
}

func loadMirror(t *testing.T, ctx context.Context, c *postgres.Campaign) (*edgeMirror, postgres.GraphCursor) {
	t.Helper()
	m := newMirror()
	cur, err := c.LoadGraph(ctx, m.apply)
	if err != nil {
		t.Fatal(err)
	}
	return m, cur
}

func refreshMirror(t *testing.T, ctx context.Context, c *postgres.Campaign, m *edgeMirror, cur postgres.GraphCursor) postgres.GraphCursor {
	t.Helper()
	next, err := c.GraphChanges(ctx, cur, m.apply)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func sameAsLoad(t *testing.T, ctx context.Context, what string, c *postgres.Campaign, m *edgeMirror) {
	t.Helper()
	fresh, _ := loadMirror(t, ctx, c)
	a, b := m.edges(), fresh.edges()
	if !slices.Equal(a, b) {
		var onlyA, onlyB []string
		for _, x := range a {
			if !slices.Contains(b, x) {
				onlyA = append(onlyA, x)
			}
		}
		for _, x := range b {
			if !slices.Contains(a, x) {
				onlyB = append(onlyB, x)
			}
		}
		t.Errorf("%s: refreshed graph differs from a load\n  only refreshed: %v\n  only loaded:    %v", what, onlyA, onlyB)
	}
}

// TestAttackChunkLinksBundleImport: a resident graph of an empty campaign
// refreshes after a bundle is imported into it and must hold what a load
// does (the import writes chunk_entities; chunk_changes is not carried in
// the bundle).
func TestAttackChunkLinksBundleImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	src := pgtest.Campaign(t, s, "src")
	g := src.Graph()
	for _, id := range []string{"ada", "bo", "cy"} {
		if err := g.UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: strings.ToUpper(id[:1]) + id[1:]}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "ada", TargetID: "bo", Type: "KNOWS",
		Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := src.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k1", SessionID: "s1", Content: "Ada and Bo", EntityIDs: []string{"ada", "bo"}},
		{ID: "k2", SessionID: "s1", Content: "Cy", EntityIDs: []string{"cy"}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.MergeEntities(ctx, "cy", "bo", ""); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := bundle.Export(ctx, s.Pool(), "src", &b, time.Now()); err != nil {
		t.Fatal(err)
	}
	dst := pgtest.Campaign(t, s, "dst")
	m, cur := loadMirror(t, ctx, dst)
	if len(m.edges()) != 0 {
		t.Fatalf("the new campaign's graph is not empty: %v", m.edges())
	}
	if _, err := bundle.Import(ctx, s.Pool(), "dst", bytes.NewReader(b.Bytes())); err != nil {
		t.Fatal(err)
	}
	refreshMirror(t, ctx, dst, m, cur)
	if len(m.mentions) == 0 {
		t.Fatal("the refresh after the import read no chunk link")
	}
	sameAsLoad(t, ctx, "after a bundle import", dst, m)
}

// TestAttackChunkLinksLateMergeAndIndex: a long transaction merges an
// entity (moving a chunk's links) and re-links a chunk it then deletes,
// while another chunk is indexed and committed; a refresh runs while it
// is open, one after it commits, and one more. Each must equal a load.
func TestAttackChunkLinksLateMergeAndIndex(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t) // a hang guard: the long transaction below could block a write
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	g := camp.Graph()
	for _, id := range []string{"ada", "bo", "cy", "dee", "eli"} {
		if err := g.UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: strings.ToUpper(id[:1]) + id[1:]}); err != nil {
			t.Fatal(err)
		}
	}
	if err := camp.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "k1", SessionID: "s1", Content: "Ada Bo", EntityIDs: []string{"ada", "bo"}},
		{ID: "k2", SessionID: "s1", Content: "Bo", EntityIDs: []string{"bo"}},
		{ID: "k3", SessionID: "s2", Content: "Cy", EntityIDs: []string{"cy"}},
		{ID: "k4", SessionID: "s3", Content: "Dee", EntityIDs: []string{"dee"}},
	}); err != nil {
		t.Fatal(err)
	}
	m, cur := loadMirror(t, ctx, camp)
	commit := longTx(t, s, "camp", func(tc *postgres.Campaign) error {
		// k1 and k2's links move twice in this transaction: to ada, then
		// k2 is deleted.
		if _, err := tc.Graph().MergeEntities(ctx, "bo", "ada", ""); err != nil {
			return err
		}
		_, err := tc.Index().DeleteSessionChunks(ctx, "s1", []string{"k1"})
		return err
	})
	// A merge of other entities (a chunk write would wait on the
	// statistics the long transaction's deletion holds).
	if _, err := g.MergeEntities(ctx, "dee", "eli", ""); err != nil {
		t.Fatal(err)
	}
	cur = refreshMirror(t, ctx, camp, m, cur)
	sameAsLoad(t, ctx, "while the long transaction runs", camp, m)
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	cur = refreshMirror(t, ctx, camp, m, cur)
	sameAsLoad(t, ctx, "after the long transaction committed", camp, m)
	if _, ok := m.mentions["k2"]; ok {
		t.Errorf("k2, deleted by the late commit, is still linked: %v", m.edges())
	}
	n := 0
	if _, err := camp.GraphChanges(ctx, cur, func(postgres.GraphEdge) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a refresh with nothing new read %d edges", n)
	}
}

// TestAttackChunkLinksPlayerFactOfRevealedEntity: a fact between an entity
// every player sees and one first heard in a split scene is hidden from a
// player outside the scene (endsVisibleSQL). A chunk said together names
// the scene's entity in full: a load for the player now holds the fact
// and every chunk's mention of her; the refresh logs only the new chunk's
// links and no fact change.
func TestAttackChunkLinksPlayerFactOfRevealedEntity(t *testing.T) {
	t.Parallel()
	for _, v := range []memory.Viewer{memory.PlayerViewer(), memory.PlayerViewerOf("lyra")} {
		t.Run("player "+v.PlayerID, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := pgtest.NewStore(t, 8)
			camp := pgtest.Campaign(t, s, "camp")
			sl := camp.Sessions()
			t0 := splitAfterAMinute(t, sl)
			if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "dm", SpeakerName: "Dana",
				Text: "Thorin meets the Veiled Abbess.", At: t0.Add(90 * time.Second)}); err != nil {
				t.Fatal(err)
			}
			es, err := sl.Entries(ctx, "s1")
			if err != nil || len(es) != 1 {
				t.Fatalf("entries %+v (%v)", es, err)
			}
			g := camp.Graph()
			if err := g.UpsertEntity(ctx, memory.Entity{ID: "gate", Type: "location", Name: "Gate"}); err != nil {
				t.Fatal(err)
			}
			if err := g.AddSceneEntity(ctx, memory.Entity{ID: "abbess", Type: memory.EntityNPC, Name: "Veiled Abbess"}, []int64{es[0].ID}); err != nil {
				t.Fatal(err)
			}
			f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "abbess", TargetID: "gate", Type: "GUARDS",
				Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}})
			if err != nil {
				t.Fatal(err)
			}
			if err := camp.Index().IndexChunks(ctx, []memory.Chunk{
				{ID: "scene1", SessionID: "s1", Content: "Thorin meets the Veiled Abbess.", EntityIDs: []string{"abbess"},
					StartAt: t0.Add(85 * time.Second), EndAt: t0.Add(95 * time.Second)},
			}); err != nil {
				t.Fatal(err)
			}
			pc, err := camp.As(v)
			if err != nil {
				t.Fatal(err)
			}
			m, cur := loadMirror(t, ctx, pc)
			if _, ok := m.facts[f.ID]; ok {
				t.Fatalf("%v sees the scene entity's fact before the reveal: the test shows nothing", v)
			}
			if err := camp.Index().IndexChunks(ctx, []memory.Chunk{{ID: "pub", SessionID: "s1",
				Content: "The Veiled Abbess waves.", EntityIDs: []string{"abbess"},
				StartAt: t0.Add(10 * time.Second), EndAt: t0.Add(20 * time.Second)}}); err != nil {
				t.Fatal(err)
			}
			refreshMirror(t, ctx, pc, m, cur)
			sameAsLoad(t, ctx, fmt.Sprintf("%v(%s) after the reveal", v, v.PlayerID), pc, m)
		})
	}
}
