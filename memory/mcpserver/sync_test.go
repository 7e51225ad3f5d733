package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSyncSeesLateCommits: an assistant (the TypeScript SDK client) pages
// through the change log with the sync tool's cursor. Extraction's long
// transaction writes an entity and stays open; the DM's edit, written
// after it, commits first; the assistant syncs; then the long transaction
// commits, its change with an id below the cursor. The next sync must
// list it: counted by ids, the cursor stepped over it and the assistant
// never heard of the entity.
func TestSyncSeesLateCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	peers := nodePeers(t)
	store := sample(t)
	url := serveMCP(t, mcpserver.Config{Door: pgtest.Door(t, store), Campaign: "ironhold-saga"},
		mcpserver.Tokens{DM: []string{"dm-token-0123456789"}})
	cursor := int64(0)
	sync := func() []string {
		t.Helper()
		res, err := runClient(t, peers, "dm-agent", []call{{Tool: "sync", Args: map[string]any{"cursor": cursor}}}, "http", url,
			"dm-token-0123456789")
		if err != nil {
			t.Fatal(err)
		}
		if !res.Results[0].OK {
			t.Fatalf("sync: %+v", res.Results[0])
		}
		var out struct {
			Changes []struct{ Kind, Ref string } `json:"changes"`
			Cursor  int64                        `json:"cursor"`
		}
		if err := json.Unmarshal(res.Results[0].Result, &out); err != nil {
			t.Fatal(err)
		}
		cursor = out.Cursor
		var refs []string
		for _, c := range out.Changes {
			if c.Kind == "entity" {
				refs = append(refs, c.Ref)
			}
		}
		return refs
	}
	for { // the imported campaign, up to now
		prev := cursor
		sync()
		if cursor == prev {
			break
		}
	}

	wrote, release, done := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- store.InTx(context.Background(), "ironhold-saga", func(tc *postgres.Campaign) error {
			err := tc.Graph().UpsertEntity(ctx, memory.Entity{ID: "vesper", Type: memory.EntityNPC, Name: "Vesper"})
			wrote <- err
			if err == nil {
				<-release
			}
			return err
		})
	}()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	committed := false
	commit := func() {
		if !committed {
			committed = true
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(commit)
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	if err := camp.Graph().UpsertEntity(ctx, memory.Entity{ID: "bo", Type: memory.EntityNPC, Name: "Bo"}); err != nil {
		t.Fatal(err)
	}
	if got := sync(); !slices.Equal(got, []string{"bo"}) {
		t.Fatalf("while extraction's transaction runs, sync lists %v, want [bo]", got)
	}
	commit()
	if got := sync(); !slices.Equal(got, []string{"vesper"}) {
		t.Errorf("after extraction's commit, below the cursor, sync lists %v, want [vesper]", got)
	}
	if got := sync(); len(got) != 0 {
		t.Errorf("with nothing new, sync lists %v", got)
	}
}
