package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestReadGraphInALargeCampaign: read_graph shows the first entities by
// name and the facts of those entities, however many facts the campaign
// holds (it read the 5,000 newest and kept the shown entities' ones, so a
// campaign with 6,000 newer facts elsewhere showed none of Grimjaw's), and
// the limit counts the entities shown, archived ones among them listed as
// traces.
func TestReadGraphInALargeCampaign(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	door := pgtest.Door(t, store)
	// 6,000 facts newer than the sample's, between entities of their own.
	if _, err := store.Pool().Exec(ctx, `
		INSERT INTO entities (campaign_id, id, type, name)
		SELECT 'ironhold-saga', 'filler-' || i, 'item', 'Zz filler ' || i FROM generate_series(1, 200) i;
		INSERT INTO relationships (campaign_id, source_id, target_id, rel_type, confidence, source, status, updated_at)
		SELECT 'ironhold-saga', 'filler-' || (i % 200 + 1), 'filler-' || ((i * 7) % 200 + 1), 'NEAR_' || i, 1, 'stated', 'active',
		       now() + interval '1 day'
		FROM generate_series(1, 6000) i`); err != nil {
		t.Fatal(err)
	}
	var want int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM relationships WHERE campaign_id = 'ironhold-saga'
		AND 'grimjaw' IN (source_id, target_id) AND status IN ('active', 'pending')`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	// Archived by an agent: the first five fillers by name.
	if _, err := store.Pool().Exec(ctx, `UPDATE entities SET attributes = '{"archived": true}'
		WHERE campaign_id = 'ironhold-saga' AND id IN ('filler-1', 'filler-10', 'filler-100', 'filler-101', 'filler-102')`); err != nil {
		t.Fatal(err)
	}
	url := serveMCP(t, mcpserver.Config{Door: door, Campaign: "ironhold-saga"},
		mcpserver.Tokens{Player: []string{shapePlayerToken}, DM: []string{shapeDMToken}})
	dm := goClient(t, url, shapeDMToken)
	read := func(args map[string]any) mcpserver.ReadGraphOut {
		t.Helper()
		res, ok := goCall(t, dm, "read_graph", args)
		if !ok {
			t.Fatal(res)
		}
		var out mcpserver.ReadGraphOut
		if err := json.Unmarshal([]byte(res), &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := read(map[string]any{"name": "grimjaw"})
	if len(out.Entities) != 1 || out.Entities[0].ID != "grimjaw" {
		t.Fatalf("entities %+v, want Grimjaw alone", out.Entities)
	}
	if want == 0 || len(out.Facts) != want {
		t.Fatalf("%d facts of Grimjaw's, want %d", len(out.Facts), want)
	}
	for _, f := range out.Facts {
		if f.Source != "grimjaw" && f.Target != "grimjaw" {
			t.Errorf("fact %+v is not Grimjaw's", f)
		}
	}
	// The limit counts the entities shown: the five archived fillers
	// first by name are traces, and the two shown come after them.
	out = read(map[string]any{"name": "zz filler", "limit": 2})
	var shown, traced []string
	for _, e := range out.Entities {
		shown = append(shown, e.ID)
	}
	for _, a := range out.Archived {
		if a.Kind == "entity" {
			traced = append(traced, a.ID)
		}
	}
	if fmt.Sprint(shown) != "[filler-103 filler-104]" || fmt.Sprint(traced) != "[filler-1 filler-10 filler-100 filler-101 filler-102]" {
		t.Fatalf("shown %v and traced %v, want filler-103 and 104 shown, 1, 10, 100, 101 and 102 traced", shown, traced)
	}
	for _, f := range out.Facts {
		if !slices.Contains(shown, f.Source) && !slices.Contains(shown, f.Target) {
			t.Errorf("fact %+v has no end among those shown", f)
		}
	}
	if len(out.Facts) == 0 {
		t.Error("no fact of the fillers shown")
	}
}
