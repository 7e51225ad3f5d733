package postgres_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestStoredPublicAttributesFollowEveryWrite: readers other than the DM
// read an entity's public attributes from a column PostgreSQL computes
// when the row is written (migration 0029). A secret written any way (the
// store's upserts, its add, edit and merge, a hand-written UPDATE, an
// INSERT as a bundle import makes, a COPY as a bulk load makes) is hidden
// from a player and from another NPC, by id and through a walk (which
// shows every walker public attributes only); a secret removed again
// shows the rest unchanged; the DM reads it all by id.
func TestStoredPublicAttributesFollowEveryWrite(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	ctx := ctxT(t)
	g := c.Graph()
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "hub", Type: memory.EntityLocation, Name: "Hub"}))
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "npc", Type: memory.EntityNPC, Name: "Watcher"}))
	public := func(id string) map[string]any { return map[string]any{"mood": "calm " + id} }
	withSecret := func(id string) map[string]any {
		return map[string]any{"mood": "calm " + id, "gm_notes": "the spy", "Secret_plan": map[string]any{"at": "dawn"},
			"kin": []any{map[string]any{"secret": true, "name": "hidden sister"}, "brother"}}
	}
	wantPublic := func(id string) map[string]any {
		return map[string]any{"mood": "calm " + id, "kin": []any{"brother"}}
	}
	ids := []string{}
	// Each write path leaves entity id holding withSecret(id).
	writes := []struct {
		id    string
		write func(id string) error
	}{
		{"upsert", func(id string) error {
			return g.UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id, Attributes: withSecret(id)})
		}},
		{"upsert-many", func(id string) error {
			return g.UpsertEntities(ctx, []memory.Entity{{ID: id, Type: memory.EntityNPC, Name: id, Attributes: withSecret(id)}})
		}},
		{"add", func(id string) error {
			_, err := g.AddEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id, Attributes: withSecret(id)})
			return err
		}},
		{"edit", func(id string) error {
			if err := g.UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id, Attributes: public(id)}); err != nil {
				return err
			}
			sec := withSecret(id)
			delete(sec, "mood")
			_, err := g.UpdateEntity(ctx, id, memory.EntityUpdate{SetAttributes: sec})
			return err
		}},
		{"merge", func(id string) error {
			sec := withSecret(id)
			delete(sec, "mood")
			if err := g.UpsertEntities(ctx, []memory.Entity{
				{ID: id + "-twin", Type: memory.EntityNPC, Name: id + " twin", Attributes: sec},
				{ID: id, Type: memory.EntityNPC, Name: id, Attributes: public(id)}}); err != nil {
				return err
			}
			_, err := g.MergeEntities(ctx, id+"-twin", id, "")
			return err
		}},
		{"sql-update", func(id string) error {
			if err := g.UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id, Attributes: public(id)}); err != nil {
				return err
			}
			_, err := s.Pool().Exec(ctx, `UPDATE entities SET attributes = $3 WHERE campaign_id = $1 AND id = $2`, c.ID(), id, withSecret(id))
			return err
		}},
		{"sql-insert", func(id string) error {
			_, err := s.Pool().Exec(ctx, `INSERT INTO entities (campaign_id, id, type, name, attributes) SELECT $1, $2, 'npc', $2, $3`,
				c.ID(), id, withSecret(id))
			return err
		}},
		{"copy", func(id string) error {
			_, err := s.Pool().CopyFrom(ctx, pgx.Identifier{"entities"}, []string{"campaign_id", "id", "type", "name", "attributes"},
				pgx.CopyFromRows([][]any{{c.ID(), id, "npc", id, withSecret(id)}}))
			return err
		}},
	}
	for _, w := range writes {
		if err := w.write(w.id); err != nil {
			t.Fatalf("%s: %v", w.id, err)
		}
		ids = append(ids, w.id)
		must[memory.Relationship](t)(g.UpsertRelationship(ctx, memory.Relationship{SourceID: "hub", TargetID: w.id, Type: "HOLDS",
			Provenance: memory.Provenance{Confidence: 1, DMConfirmed: true}}))
	}
	for _, v := range []memory.Viewer{memory.PlayerViewer(), memory.NPCViewer("npc"), memory.DMViewer()} {
		vg := mustAs(t, c, v).Graph()
		want := wantPublic
		if v.Role == memory.RoleDM {
			want = withSecret
		}
		walked := map[string]map[string]any{}
		for _, n := range must[[]memory.Neighbor](t)(vg.Neighbors(ctx, "hub", 1, memory.TraversalOpts{})) {
			walked[n.Entity.ID] = n.Entity.Attributes
		}
		for _, id := range ids {
			e := must[memory.Entity](t)(vg.Entity(ctx, id))
			if got, exp := fmt.Sprint(e.Attributes), fmt.Sprint(want(id)); got != exp {
				t.Errorf("%s reads %s by id: %s, want %s", v, id, got, exp)
			}
			// A walk reads the entities it reaches with their public
			// attributes, whoever walks.
			if got, exp := fmt.Sprint(walked[id]), fmt.Sprint(wantPublic(id)); got != exp {
				t.Errorf("%s reads %s through a walk: %s, want %s", v, id, got, exp)
			}
		}
	}
	// The secrets taken out again: the column follows, and players read
	// the attributes as they are.
	for _, id := range ids {
		must[memory.Entity](t)(g.UpdateEntity(ctx, id, memory.EntityUpdate{DeleteAttributes: []string{"gm_notes", "Secret_plan", "kin"}}))
	}
	pg := mustAs(t, c, memory.PlayerViewer()).Graph()
	for _, n := range must[[]memory.Neighbor](t)(pg.Neighbors(ctx, "hub", 1, memory.TraversalOpts{})) {
		if !slices.Contains(ids, n.Entity.ID) {
			continue
		}
		if got, exp := fmt.Sprint(n.Entity.Attributes), fmt.Sprint(public(n.Entity.ID)); got != exp {
			t.Errorf("after the secrets were deleted, a player walks to %s: %s, want %s", n.Entity.ID, got, exp)
		}
	}
	var stale int
	check(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM entities WHERE campaign_id = $1 AND public_attributes IS NOT NULL`, c.ID()).Scan(&stale))
	if stale != 0 {
		t.Errorf("%d entities without a secret still store public attributes", stale)
	}
}
