package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const (
	shapePlayerToken = "player-token-shape-0123456789"
	shapeDMToken     = "dm-token-shape-0123456789"
)

// serveShape serves the campaign ironhold-saga of store over HTTP to a
// player token (shapePlayerToken) and a DM token (shapeDMToken), on a
// clock stopped at kgNow, and returns its URL.
func serveShape(t *testing.T, store *postgres.Store) string {
	t.Helper()
	return serveMCP(t, mcpserver.Config{Door: pgtest.Door(t, store), Campaign: "ironhold-saga", Clock: clocktest.NewFake(kgNow)},
		mcpserver.Tokens{Player: []string{shapePlayerToken}, DM: []string{shapeDMToken}})
}

// goCall calls one tool with the Go SDK's client and returns its
// structured result as JSON, or its error text.
func goCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var text string
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		return text, false
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func goClient(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "shape-" + token[:6], Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url,
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestKGShapesAgainstAPlayer: the design's shapes (a graph per level,
// notes lists, kebab-case rel, artifact ends, {recalled, node}, since_ts
// and total_changes) with the Go client and the official TypeScript client,
// and a player token probing them for DM-only data: secret facts and their
// notes, the DM's level (under both its names), DM-only attribute keys and
// secret objects inside object-valued attributes (gist, notes, touches).
func TestKGShapesAgainstAPlayer(t *testing.T) {
	t.Parallel()
	store := sample(t)
	ctx := context.Background()
	url := serveShape(t, store)
	player, dm := goClient(t, url, shapePlayerToken), goClient(t, url, shapeDMToken)

	// The player's agent registers first, so its kg_sync covers every
	// DM write below.
	reg, ok := goCall(t, player, "kg_register_session", nil)
	if !ok {
		t.Fatal(reg)
	}
	var sess struct {
		ID string `json:"session_id"`
	}
	json.Unmarshal([]byte(reg), &sess)

	// The DM's secrets, planted through the store: object-valued
	// attributes with secret parts, DM-only keys, a secret fact with notes.
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	err := camp.Graph().UpsertEntity(ctx, memory.Entity{ID: "spy", Type: "npc", Name: "Quiet Clerk", Attributes: map[string]any{
		"gist":            map[string]any{"text": "a quiet clerk", "dm_notes": "SECRETX1"},
		"notes":           []any{"keeps the ledgers", map[string]any{"text": "SECRETX2", "secret": true}, map[string]any{"text": "seen at the docks", "gm_notes": "SECRETX3"}},
		"touches":         []any{"vexa", map[string]any{"id": "SECRETX4", "secret": true}},
		"secret_identity": "SECRETX5",
		"dm_plan":         map[string]any{"step": "SECRETX6"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	must[memory.FactWrite](t)(camp.Graph().WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "spy", TargetID: "vexa", Type: "REPORTS_TO",
		Attributes: map[string]any{"secret": true, "notes": []any{"SECRETX7"}}, Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}, ""))

	// The DM writes through the tools, in the design's vocabulary.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"kg_put_node", map[string]any{"level": "user", "id": "SECRETX8", "gist": "the clerk is the heir", "notes": []string{"SECRETX9"}}},
		{"kg_put_edge", map[string]any{"level": "user", "from": "SECRETX8", "to": "plots/SECRETX10.md:4", "rel": "written-in"}},
		{"kg_put_node", map[string]any{"level": "project", "id": "ledger", "gist": "the guild's ledger", "touches": []string{"spy", "props/ledger.pdf"},
			"notes": []string{"water-stained", "missing a page"}, "type": "item"}},
		{"kg_put_edge", map[string]any{"level": "project", "from": "ledger", "to": "props/ledger.pdf:3", "rel": "Described-In", "notes": []string{"page 3"}}},
		{"kg_put_edge", map[string]any{"level": "campaign", "from": "spy", "to": "ledger", "rel": "keeps"}},
	} {
		if out, ok := goCall(t, dm, c.tool, c.args); !ok || !strings.Contains(out, `"result":"applied"`) {
			t.Fatalf("DM %s %v: %s", c.tool, c.args, out)
		}
	}
	if out, ok := goCall(t, dm, "kg_put_edge", map[string]any{"level": "dm", "from": "SECRETX8", "to": "nobody", "rel": "knows"}); ok ||
		!strings.Contains(out, `no node "nobody"`) {
		t.Fatalf("an edge to a node that does not exist: %s", out)
	}
	dmRead, _ := goCall(t, dm, "kg_read", nil)
	for _, want := range []string{"SECRETX7", "SECRETX8", "SECRETX9", "plots/SECRETX10.md:4", `"rel":"written-in"`, `"rel":"described-in"`} {
		if !strings.Contains(dmRead, want) {
			t.Fatalf("the DM's kg_read lacks %s: %s", want, dmRead)
		}
	}

	// The player, with the Go client.
	read, _ := goCall(t, player, "kg_read", nil)
	var view kgView
	if err := json.Unmarshal([]byte(read), &view); err != nil || view.Campaign == nil || view.DM != nil {
		t.Fatalf("a player's kg_read: %v %s", err, read)
	}
	var spy, ledger bool
	for _, n := range view.Campaign.Nodes {
		switch n.ID {
		case "spy":
			spy = true
			if n.Gist == "" || !slices.Equal(n.Notes, []string{"keeps the ledgers", "seen at the docks"}) || !slices.Equal(n.Touches, []string{"vexa"}) {
				t.Errorf("the spy as a player reads it: %+v", n)
			}
		case "ledger":
			ledger = slices.Equal(n.Notes, []string{"water-stained", "missing a page"}) && slices.Equal(n.Touches, []string{"spy", "props/ledger.pdf"})
		}
	}
	var artifact, keeps bool
	for _, e := range view.Campaign.Edges {
		artifact = artifact || (e.From == "ledger" && e.To == "props/ledger.pdf:3" && e.Rel == "described-in" && slices.Equal(e.Notes, []string{"page 3"}))
		keeps = keeps || (e.From == "spy" && e.Rel == "keeps")
	}
	if !spy || !ledger || !artifact || !keeps {
		t.Fatalf("a player's kg_read lacks the shared writes (spy %v, ledger %v, artifact edge %v, keeps %v): %s", spy, ledger, artifact, keeps, read)
	}
	sync, _ := goCall(t, player, "kg_sync", map[string]any{"session_id": sess.ID})
	var so struct {
		SinceTS      *int64                     `json:"since_ts"`
		TotalChanges *int                       `json:"total_changes"`
		Changes      map[string]json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal([]byte(sync), &so); err != nil || so.SinceTS == nil || *so.SinceTS != kgNow.Unix() || so.TotalChanges == nil ||
		*so.TotalChanges == 0 || len(so.Changes) != 1 || so.Changes["campaign"] == nil {
		t.Fatalf("a player's kg_sync: %s", sync)
	}
	recall, ok := goCall(t, player, "kg_recall", map[string]any{"level": "campaign", "id": "spy"})
	if !ok || !strings.HasPrefix(recall, `{"node":`) || !strings.Contains(recall, `"recalled":true`) {
		t.Fatalf("kg_recall: %s", recall)
	}
	ping, _ := goCall(t, player, "kg_ping", nil)
	leaks := strings.Join([]string{read, sync, recall, ping}, "\n")
	// Everything the player may try against the DM's level, under both names.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"kg_recall", map[string]any{"level": "dm", "id": "SECRETX8"}},
		{"kg_recall", map[string]any{"level": "user", "id": "SECRETX8"}},
		{"kg_put_node", map[string]any{"level": "user", "id": "x", "gist": "y"}},
		{"kg_put_edge", map[string]any{"level": "user", "from": "SECRETX8", "to": "a/b", "rel": "r"}},
		{"kg_delete_node", map[string]any{"level": "USER", "id": "SECRETX8"}},
		{"kg_delete_edge", map[string]any{"level": "dm", "from": "SECRETX8", "to": "plots/SECRETX10.md:4", "rel": "written-in"}},
	} {
		out, ok := goCall(t, player, c.tool, c.args)
		if ok || !strings.Contains(out, "only the DM token") {
			t.Errorf("a player's %s %v: %s", c.tool, c.args, out)
		}
		leaks += "\n" + out
	}
	// A player's artifact edge is a proposal, not a write.
	if out, ok := goCall(t, player, "kg_put_edge", map[string]any{"level": "campaign", "from": "ledger", "to": "props/fake.pdf", "rel": "forged-by"}); !ok ||
		!strings.Contains(out, `"result":"proposed"`) {
		t.Fatalf("a player's artifact edge: %s", out)
	}

	// The same reads with the official TypeScript client.
	peers := nodePeers(t)
	ts, err := runClient(t, peers, "player-agent", []call{{Tool: "kg_read"}, {Tool: "kg_sync", Args: map[string]any{"session_id": sess.ID}},
		{Tool: "kg_recall", Args: map[string]any{"level": "project", "id": "spy"}}}, "http", url, shapePlayerToken)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ts.Results {
		if !r.OK {
			t.Fatalf("TypeScript call %d: %s", i, r.Error)
		}
		leaks += "\n" + string(r.Result)
	}
	tv := decode[kgView](t, ts.Results[0])
	if tv.Campaign == nil || tv.DM != nil || len(tv.Campaign.Nodes) != len(view.Campaign.Nodes) {
		t.Fatalf("the TypeScript client's kg_read: %s", ts.Results[0].Result)
	}
	tr := decode[struct {
		Recalled bool `json:"recalled"`
		Node     struct {
			ID    string   `json:"id"`
			Notes []string `json:"notes"`
		} `json:"node"`
	}](t, ts.Results[2])
	if !tr.Recalled || tr.Node.ID != "spy" || len(tr.Node.Notes) != 2 {
		t.Fatalf("the TypeScript client's kg_recall: %s", ts.Results[2].Result)
	}
	for _, secret := range []string{"SECRETX", "reports-to", "REPORTS_TO", `"dm":`, "secret_identity", "dm_plan", "gm_notes", "dm_notes"} {
		if strings.Contains(leaks, secret) {
			i := strings.Index(leaks, secret)
			t.Errorf("a player read %q: …%s…", secret, leaks[max(0, i-200):min(len(leaks), i+100)])
		}
	}
	if n := must[postgres.KGNode](t)(camp.KGNode(ctx, postgres.KGCampaign, "ledger")); len(n.Notes) != 2 {
		t.Fatalf("the ledger in the store: %+v", n)
	}
}
