package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// Two campaigns hold entities, facts, sessions, entries and chunks with
// identical ids and names. Every read method of every layer, opened for one
// campaign, returns only that campaign's rows.
func TestCampaignsAreIsolated(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	a := pgtest.Campaign(t, s, "campaign-a")
	b := pgtest.Campaign(t, s, "campaign-b")
	for _, c := range []*postgres.Campaign{a, b} {
		seedWorld(t, c)
		tag := c.ID() // makes every text distinguishable by campaign
		must[int](t)(c.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{
			{SessionID: "s1", SpeakerID: "u1", Text: "Grimjaw forged the hammer " + tag, At: t0, IdempotencyKey: "k1"},
			{SessionID: "s1", SpeakerID: "u1", Text: "Elara walks to the tower " + tag, At: t0.Add(time.Minute), IdempotencyKey: "k2"},
		}))
		check(t, c.Index().IndexChunks(ctx, []memory.Chunk{
			{ID: "c1", SessionID: "s1", Content: "Grimjaw forged the hammer " + tag, Embedding: unit(0, 1, 0.1),
				SpeakerIDs: []string{"u1"}, EntityIDs: []string{"grimjaw", "hammer"}, StartAt: t0},
		}))
		must[memory.Relationship](t)(c.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "elara", TargetID: "guild",
			Type: "RUMOURED", Attributes: map[string]any{"campaign": tag}, Provenance: memory.Provenance{Confidence: 0.2}}))
	}
	// Campaign b changes an entity; a must not see it.
	newName := "Grimjaw of B"
	must[memory.Entity](t)(b.Graph().UpdateEntity(ctx, "grimjaw", memory.EntityUpdate{Name: &newName}))
	// And deletes one; a keeps its own.
	check(t, b.Graph().DeleteEntity(ctx, "hammer"))

	for _, pair := range [][2]*postgres.Campaign{{a, b}, {b, a}} {
		me, other := pair[0], pair[1]
		t.Run(me.ID(), func(t *testing.T) {
			foreign := func(what, text string) {
				t.Helper()
				if contains(text, other.ID()) {
					t.Errorf("%s returned the other campaign's row: %q", what, text)
				}
			}
			l1, l2, g := me.Sessions(), me.Index(), me.Graph()
			es := must[[]memory.TranscriptEntry](t)(l1.Entries(ctx, "s1"))
			if len(es) != 2 {
				t.Errorf("Entries: %d rows", len(es))
			}
			for _, e := range es {
				foreign("Entries", e.Text)
			}
			for _, e := range must[[]memory.TranscriptEntry](t)(l1.GetRecent(ctx, "s1", time.Hour)) {
				foreign("GetRecent", e.Text)
			}
			hits := must[[]memory.EntryHit](t)(l1.Search(ctx, "hammer", memory.SearchOpts{}))
			if len(hits) != 1 {
				t.Errorf("Search: %d hits", len(hits))
			}
			for _, h := range hits {
				foreign("Search", h.Entry.Text)
			}
			if ss := must[[]memory.Session](t)(l1.Sessions(ctx)); len(ss) != 1 || ss[0].Entries != 2 {
				t.Errorf("Sessions: %+v", ss)
			}
			res := must[[]memory.ChunkResult](t)(l2.Search(ctx, unit(0, 1, 0), 10, memory.ChunkFilter{}))
			if len(res) != 1 {
				t.Errorf("L2 Search: %d rows", len(res))
			}
			for _, r := range res {
				foreign("L2 Search", r.Chunk.Content)
			}
			for _, c := range must[[]memory.Chunk](t)(l2.Chunks(ctx, "")) {
				foreign("Chunks", c.Content)
			}
			grim := must[memory.Entity](t)(g.Entity(ctx, "grimjaw"))
			wantName := "Grimjaw"
			if me == b {
				wantName = newName
			}
			if grim.Name != wantName {
				t.Errorf("Entity: name %q, want %q", grim.Name, wantName)
			}
			for _, e := range must[[]memory.Entity](t)(g.FindEntities(ctx, memory.EntityFilter{})) {
				if e.ID == "grimjaw" && e.Name != wantName {
					t.Errorf("FindEntities returned the other campaign's grimjaw")
				}
			}
			_, hammerErr := g.Entity(ctx, "hammer")
			if (me == a) != (hammerErr == nil) {
				t.Errorf("hammer: %v", hammerErr)
			}
			for _, r := range must[[]memory.Relationship](t)(g.PendingFacts(ctx, memory.FactFilter{})) {
				foreign("PendingFacts", r.Attributes["campaign"].(string))
			}
			if n := len(must[[]memory.Relationship](t)(g.PendingFacts(ctx, memory.FactFilter{}))); n != 1 {
				t.Errorf("PendingFacts: %d", n)
			}
			id := must[memory.NPCIdentity](t)(g.IdentitySnapshot(ctx, "grimjaw"))
			if id.Entity.Name != wantName || len(id.Relationships) != map[bool]int{true: 4, false: 3}[me == a] {
				t.Errorf("IdentitySnapshot: %s with %d edges", id.Entity.Name, len(id.Relationships))
			}
			rels := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{}))
			if len(rels) != len(id.Relationships) {
				t.Errorf("Relationships: %d", len(rels))
			}
			ns := must[[]memory.Neighbor](t)(g.Neighbors(ctx, "grimjaw", 3, memory.TraversalOpts{}))
			for _, n := range ns {
				if n.Entity.ID == "grimjaw" {
					t.Errorf("Neighbors reached the other campaign's grimjaw")
				}
			}
			if _, err := g.FindPath(ctx, "grimjaw", "vault", 4); err != nil {
				t.Errorf("FindPath: %v", err)
			}
			ents, _, err := g.VisibleSubgraph(ctx, "grimjaw", memory.VisibilityScope{})
			check(t, err)
			for _, e := range ents {
				if e.ID == "grimjaw" && e.Name != wantName {
					t.Errorf("VisibleSubgraph returned the other campaign's grimjaw")
				}
			}
			scope := memory.GraphScope{EntityIDs: []string{"grimjaw"}, Depth: 1}
			for _, r := range must[[]memory.ContextResult](t)(g.QueryWithContext(ctx, "hammer", scope)) {
				foreign("QueryWithContext", r.Chunk.Content)
			}
			ctxRes := must[[]memory.ContextResult](t)(g.QueryWithEmbedding(ctx, unit(0, 1, 0), 5, scope))
			if len(ctxRes) != 1 {
				t.Errorf("QueryWithEmbedding: %d", len(ctxRes))
			}
			for _, r := range ctxRes {
				foreign("QueryWithEmbedding", r.Chunk.Content)
			}
			// Fact ids are global; reading or changing the other campaign's
			// fact by id must fail.
			theirs := must[[]memory.Relationship](t)(other.Graph().PendingFacts(ctx, memory.FactFilter{}))
			if len(theirs) == 1 {
				if _, err := g.Fact(ctx, theirs[0].ID); err == nil {
					t.Errorf("Fact read the other campaign's fact")
				}
				if _, err := g.ConfirmFact(ctx, theirs[0].ID); err == nil {
					t.Errorf("ConfirmFact changed the other campaign's fact")
				}
			}
		})
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}
